#!/usr/bin/env bash
# shellcheck disable=SC2034 # constants and flags read by the other files
# Shared settings and helpers of the rig: paths, addresses, logging,
# templates, waiting, and daemons tracked by PID file.
set -euo pipefail

RIG_DIR="${SLUICE_RIG_DIR:-/var/lib/sluice-rig}"
RIG_LOG_DIR="${RIG_DIR}/logs"
RIG_PID_DIR="${RIG_DIR}/pids"
RIG_RUN_DIR="${RIG_DIR}/run"
RIG_CONF_DIR="${RIG_DIR}/etc"
RIG_KEY_DIR="${RIG_DIR}/keys"

NS_LOGIN=sluice-login
NS_NODE=sluice-node
HOST_ADDR=10.251.1.1
LOGIN_ADDR=10.251.1.2
LOGIN_NODE_SIDE_ADDR=10.251.2.1
NODE_ADDR=10.251.2.2
NODE_NET=10.251.2.0/24
VETH_HOST=sluice-h0
VETH_LOGIN_UP=sluice-l0
VETH_LOGIN_DOWN=sluice-l1
VETH_NODE=sluice-n0
# The address of the cluster's services outside the cluster (Redis, the API
# server), on the host's loopback device (these kernels have no dummy
# device): the node's pods reach it, the site's namespaces have no route.
EXT_ADDR=10.251.15.1

NODE_NAME=node1
CLUSTER_NAME=sluice
RIG_USER=alice
RIG_OTHER_USER=bob
REDIS_ADDR=127.0.0.1:6379
REDIS_EXT_ADDR=${EXT_ADDR}:6379
SOCKET_DIR_ROOT=/tmp/sluice-sock
SLURM_CONF=/etc/slurm/slurm.conf
SLURMDBD_CONF=/etc/slurm/slurmdbd.conf

# log prints a progress line and keeps it in the rig log.
log() {
	local line
	line="rig: $*"
	printf '%s\n' "${line}"
	if [[ -d "${RIG_LOG_DIR}" ]]; then
		printf '%s %s\n' "$(date '+%F %T')" "${line}" >>"${RIG_LOG_DIR}/rig.log"
	fi
}

die() {
	log "error: $*" >&2
	exit 1
}

require_root() {
	[[ "$(id -u)" == 0 ]] || die "must run as root"
}

# in_login / in_node run a command in a namespace. nsenter keeps the mount
# namespace (slurmd needs the host's /sys); ip netns exec is used for
# daemons whose PID we record, since it execs them.
in_login() { nsenter --net="/run/netns/${NS_LOGIN}" -- "$@"; }
in_node() { nsenter --net="/run/netns/${NS_NODE}" -- "$@"; }

# render TEMPLATE DEST MODE KEY=VALUE...: fills @KEY@ placeholders and
# installs DEST with MODE when its content changed. Returns 0 when DEST was
# written, 1 when it was already up to date.
render() {
	local template="$1" dest="$2" mode="$3"
	shift 3
	local content kv key value
	content="$(<"${template}")"
	for kv in "$@"; do
		key="${kv%%=*}"
		value="${kv#*=}"
		content="${content//"@${key}@"/"${value}"}"
	done
	if [[ "${content}" == *@[A-Z_]*@* ]]; then
		die "render ${template}: unfilled placeholder"
	fi
	if [[ -f "${dest}" ]] && [[ "$(<"${dest}")" == "${content}" ]]; then
		chmod "${mode}" "${dest}"
		return 1
	fi
	printf '%s\n' "${content}" >"${dest}.tmp"
	chmod "${mode}" "${dest}.tmp"
	mv -f "${dest}.tmp" "${dest}"
	return 0
}

# wait_until TIMEOUT_S WHAT CMD...: polls CMD every 0.1 s until it succeeds.
wait_until() {
	local timeout="$1" what="$2"
	shift 2
	local deadline=$((SECONDS + timeout))
	until "$@" >/dev/null 2>&1; do
		if ((SECONDS >= deadline)); then
			log "timed out after ${timeout}s waiting for ${what}" >&2
			return 1
		fi
		sleep 0.1
	done
}

pid_file() { printf '%s/%s.pid' "${RIG_PID_DIR}" "$1"; }

# pid_of NAME COMM: prints the recorded PID of NAME when that process is
# alive and its command name is COMM (so a reused PID is never ours).
pid_of() {
	local name="$1" comm="$2" file pid state
	file="$(pid_file "${name}")"
	[[ -f "${file}" ]] || return 1
	pid="$(<"${file}")"
	[[ "${pid}" =~ ^[0-9]+$ ]] || return 1
	[[ -r "/proc/${pid}/comm" ]] || return 1
	[[ "$(<"/proc/${pid}/comm")" == "${comm}" ]] || return 1
	state="$(awk '{print $3}' "/proc/${pid}/stat" 2>/dev/null || true)"
	[[ "${state}" != Z ]] || return 1
	printf '%s\n' "${pid}"
}

# spawn NAME COMM CMD...: starts CMD in the background in its own session,
# output to logs/NAME.log, and records its PID. CMD must exec the daemon
# (setpriv, ip netns exec and nsenter do), so that $! is the daemon itself.
spawn() {
	local name="$1" comm="$2"
	shift 2
	local log_file pid
	log_file="${RIG_LOG_DIR}/${name}.log"
	printf '%s --- start: %s\n' "$(date '+%F %T')" "$*" >>"${log_file}"
	setsid "$@" </dev/null >>"${log_file}" 2>&1 9>&- &
	pid=$!
	printf '%s\n' "${pid}" >"$(pid_file "${name}")"
	# the exec chain (setsid, ip netns exec, setpriv) takes a moment to
	# reach the daemon's own image
	local deadline=$((SECONDS + 10))
	until pid_of "${name}" "${comm}" >/dev/null; do
		if ! kill -0 "${pid}" 2>/dev/null || ((SECONDS >= deadline)); then
			tail -n 20 "${log_file}" >&2 || true
			die "${name} did not start (see ${log_file})"
		fi
		sleep 0.05
	done
}

# STOPPED_PIDS: processes this run stopped; wait_reaped waits for them to
# leave the process table (an exited daemon stays a zombie until init, its
# parent by then, reaps it).
STOPPED_PIDS=()

wait_reaped() {
	local deadline=$((SECONDS + 5)) pid left
	while :; do
		left=0
		for pid in "${STOPPED_PIDS[@]}"; do
			[[ ! -e "/proc/${pid}" ]] || left=$((left + 1))
		done
		((left > 0)) || return 0
		if ((SECONDS >= deadline)); then
			log "${left} stopped process(es) not yet reaped by init"
			return 0
		fi
		sleep 0.1
	done
}

# kill_pid PID WHAT: TERM, wait up to 10 s, then KILL.
kill_pid() {
	local pid="$1" what="$2" deadline
	STOPPED_PIDS+=("${pid}")
	kill -TERM "${pid}" 2>/dev/null || return 0
	deadline=$((SECONDS + 10))
	while kill -0 "${pid}" 2>/dev/null; do
		if [[ "$(awk '{print $3}' "/proc/${pid}/stat" 2>/dev/null || true)" == Z ]]; then
			return 0
		fi
		if ((SECONDS >= deadline)); then
			log "${what} (pid ${pid}) ignored TERM; killing"
			kill -KILL "${pid}" 2>/dev/null || true
			return 0
		fi
		sleep 0.1
	done
}

# kill_pids TIMEOUT_S PID...: TERM all, wait for all up to TIMEOUT_S, then
# KILL the rest (slurmstepd, for one, ignores TERM).
kill_pids() {
	local timeout="$1" pid
	local alive=()
	shift
	STOPPED_PIDS+=("$@")
	kill -TERM "$@" 2>/dev/null || true
	local deadline=$((SECONDS + timeout))
	while :; do
		alive=()
		for pid in "$@"; do
			if kill -0 "${pid}" 2>/dev/null &&
				[[ "$(awk '{print $3}' "/proc/${pid}/stat" 2>/dev/null || true)" != Z ]]; then
				alive+=("${pid}")
			fi
		done
		((${#alive[@]} > 0)) || return 0
		if ((SECONDS >= deadline)); then
			log "killing ${#alive[@]} process(es) that ignored TERM: ${alive[*]}"
			kill -KILL "${alive[@]}" 2>/dev/null || true
			return 0
		fi
		sleep 0.1
	done
}

# stop_daemon NAME COMM: stops the recorded process of NAME, if running.
stop_daemon() {
	local name="$1" comm="$2" pid
	if pid="$(pid_of "${name}" "${comm}")"; then
		log "stopping ${name} (pid ${pid})"
		kill_pid "${pid}" "${name}"
	fi
	rm -f "$(pid_file "${name}")"
}

# tail_log NAME: shows the end of a service's log after a failure.
tail_log() {
	tail -n 30 "${RIG_LOG_DIR}/$1.log" >&2 2>/dev/null || true
}
