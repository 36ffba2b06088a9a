#!/usr/bin/env bash
# Redis on the cluster side (host namespace, 127.0.0.1:6379 and
# EXT_ADDR:6379): a stand-in for a service outside the cluster, which
# lib/cluster.sh exposes as the selectorless Service `redis` in default, and
# which jobs reach through reverse tunnels. Protected mode is off (it would
# refuse the pods, whose connections come from EXT_ADDR); the two bind
# addresses are what keep it from the site.
set -euo pipefail

redis_start() {
	install -d -m 0750 -o redis -g redis "${RIG_DIR}/redis"
	spawn redis redis-server setpriv --reuid=redis --regid=redis --init-groups \
		/usr/bin/redis-server --bind "${REDIS_ADDR%%:*}" "${REDIS_EXT_ADDR%%:*}" --port "${REDIS_ADDR##*:}" \
		--protected-mode no --daemonize no --save '' --appendonly no \
		--dir "${RIG_DIR}/redis" --logfile ''
	wait_until 10 "redis to answer" redis_answers || { tail_log redis; die "redis does not answer"; }
}

redis_answers() {
	redis_answers_at "${REDIS_ADDR}" && redis_answers_at "${REDIS_EXT_ADDR}"
}

# redis_answers_at HOST:PORT
redis_answers_at() {
	[[ "$(redis-cli -h "${1%%:*}" -p "${1##*:}" ping 2>/dev/null)" == PONG ]]
}

# redis_restart_changed stops a running Redis that does not answer on both
# addresses (one started before it listened on EXT_ADDR); services_up
# starts it again.
redis_restart_changed() {
	service_pid redis >/dev/null || return 0
	redis_answers && return 0
	log "redis: not listening on ${REDIS_EXT_ADDR}"
	service_stop redis
}
