#!/usr/bin/env bash
# The rig's daemons, in start order, and how to start, stop and check each.
set -euo pipefail

RIG_SERVICES=(munge mariadb slurmdbd slurmctld slurmd kdc sshd-login sshd-node sshd-bastion redis registry "${KUBE_SERVICES[@]}")
# the node's (lib/node.sh) are started only when asked, and always stopped
# and the second site's (lib/site2.sh) are started by its own up
ALL_SERVICES=("${RIG_SERVICES[@]}" "${NODE_SERVICES[@]}" metrics-server "${SITE2_SERVICES[@]}")

# svc_comm SERVICE: the daemon's command name, checked against its PID.
svc_comm() {
	case "$1" in
	munge) printf munged ;;
	mariadb) printf mariadbd ;;
	slurmdbd | slurmctld | slurmd) printf '%s' "$1" ;;
	kdc) printf krb5kdc ;;
	sshd-login | sshd-node | sshd-bastion) printf sshd ;;
	redis) printf redis-server ;;
	registry) printf sluice-registry ;;
	etcd) printf etcd ;;
	kube-apiserver | kube-controller-manager | kube-scheduler) printf kube ;;
	containerd) printf containerd ;;
	kubelet | kube-proxy) printf kube ;;
	metrics-server) printf metrics-server ;;
	site2-*) site2_comm "$1" || die "unknown service $1 (one of: ${ALL_SERVICES[*]})" ;;
	*) die "unknown service $1 (one of: ${ALL_SERVICES[*]})" ;;
	esac
}

svc_needs_net() {
	case "$1" in
	munge | etcd | containerd) return 1 ;;
	kube-controller-manager | kube-scheduler) return 1 ;;
	site2-*) return 1 ;; # the second site's own network, checked by site2_start
	esac
}

service_pid() {
	pid_of "$1" "$(svc_comm "$1")"
}

service_start() {
	local svc="$1" pid
	svc_comm "${svc}" >/dev/null
	if pid="$(service_pid "${svc}")"; then
		log "${svc}: running (pid ${pid})"
		return 0
	fi
	if svc_needs_net "${svc}" && ! net_ok; then
		die "${svc}: the network is down (run rig.sh up)"
	fi
	case "${svc}" in
	munge) munge_start ;;
	mariadb) mariadb_start ;;
	slurmdbd) slurmdbd_start ;;
	slurmctld) slurmctld_start ;;
	slurmd) slurmd_start ;;
	kdc) kdc_start ;;
	sshd-login | sshd-node) sshd_start "${svc}" ;;
	sshd-bastion) bastion_start ;;
	redis) redis_start ;;
	registry) registry_start ;;
	containerd | kubelet | kube-proxy) node_start "${svc}" ;;
	metrics-server) metrics_start ;;
	etcd | kube-*) kube_start "${svc}" ;;
	site2-*) site2_start "${svc}" ;;
	esac
	log "${svc}: started (pid $(service_pid "${svc}"))"
}

service_stop() {
	local svc="$1"
	if [[ "${svc}" == metrics-server ]]; then
		metrics_stop
	fi
	if service_pid "${svc}" >/dev/null; then
		stop_daemon "${svc}" "$(svc_comm "${svc}")"
		log "${svc}: stopped"
	else
		rm -f "$(pid_file "${svc}")"
		log "${svc}: not running"
	fi
}

service_restart() {
	service_stop "$1"
	service_start "$1"
}

# services_up starts what is not running; a running daemon whose config
# changed is restarted.
services_up() {
	slurm_prepare
	kube_prepare
	kube_restart_changed
	redis_restart_changed
	kdc_restart_changed
	local svc overrides=1
	sshd_overrides_reset && overrides=0
	for svc in sshd-login sshd-node; do
		if { sshd_prepare "${svc}" || ((overrides == 0)); } && service_pid "${svc}" >/dev/null; then
			log "${svc}: config changed"
			service_stop "${svc}"
		fi
	done
	if ((SLURMDBD_CONF_CHANGED == 0)) && service_pid slurmdbd >/dev/null; then
		log "slurmdbd: config changed"
		service_stop slurmdbd
	fi
	if ((SLURM_CONF_CHANGED == 0)); then
		for svc in slurmctld slurmd; do
			if service_pid "${svc}" >/dev/null; then
				log "${svc}: slurm.conf changed"
				service_stop "${svc}"
			fi
		done
	fi
	bastion_restart_changed
	known_hosts_up
	for svc in "${RIG_SERVICES[@]}"; do
		service_start "${svc}"
	done
	wait_until 30 "${NODE_NAME} to be ready" node_ready || die "${NODE_NAME} is not ready: $(node_state)"
	log "slurm: ${NODE_NAME} $(node_state)"
}

services_down() {
	node_down
	local i
	for ((i = ${#RIG_SERVICES[@]} - 1; i >= 0; i--)); do
		service_stop "${RIG_SERVICES[i]}"
	done
}

# service_lines SERVICE...: one status line per service; non-zero if any is
# down.
service_lines() {
	local svc pid rc=0
	for svc in "$@"; do
		if pid="$(service_pid "${svc}")"; then
			printf '%-23s running (pid %s)\n' "${svc}" "${pid}"
		else
			printf '%-23s not running\n' "${svc}"
			rc=1
		fi
	done
	return "${rc}"
}

# services_status prints one line per service and fails if any is down.
services_status() {
	local rc=0
	service_lines "${RIG_SERVICES[@]}" || rc=1
	if net_ok; then
		printf '%-23s up (%s %s, %s %s)\n' network "${NS_LOGIN}" "${LOGIN_ADDR}" "${NS_NODE}" "${NODE_ADDR}"
	else
		printf '%-23s down\n' network
		rc=1
	fi
	kube_status || rc=1
	node_status || rc=1
	site2_status || rc=1
	return "${rc}"
}
