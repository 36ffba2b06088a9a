#!/usr/bin/env bash
# Redis on the cluster side (host namespace, 127.0.0.1:6379): a stand-in
# for a cluster Service that jobs reach through reverse tunnels.
set -euo pipefail

redis_start() {
	install -d -m 0750 -o redis -g redis "${RIG_DIR}/redis"
	spawn redis redis-server setpriv --reuid=redis --regid=redis --init-groups \
		/usr/bin/redis-server --bind 127.0.0.1 --port "${REDIS_ADDR##*:}" \
		--protected-mode yes --daemonize no --save '' --appendonly no \
		--dir "${RIG_DIR}/redis" --logfile ''
	wait_until 10 "redis to answer" redis_answers || { tail_log redis; die "redis does not answer"; }
}

redis_answers() {
	[[ "$(redis-cli -h "${REDIS_ADDR%%:*}" -p "${REDIS_ADDR##*:}" ping)" == PONG ]]
}
