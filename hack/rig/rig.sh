#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# rig.sh: the local rig — a login node and a compute node (network namespaces)
# with Slurm, sshd and Charliecloud, and on the cluster side Redis and a
# Kubernetes control plane (etcd, API server, controller manager, scheduler),
# and a real Kubernetes node (containerd, kubelet, kube-proxy) with the
# cluster's DNS and metrics-server.
#
#   rig.sh up                       start everything (idempotent); the node
#                                   unless SLUICE_RIG_NODE=0
#   rig.sh up node                  start the node only (the rest must be up)
#   rig.sh up site2                 start the second site only (Slurm 24.11,
#                                   OpenSSH 10.0; the rig's users and image
#                                   must be there); `up` starts it unless
#                                   SLUICE_RIG_SITE2=0
#   rig.sh down                     stop everything it started (the node and
#                                   the second site too), remove the network
#   rig.sh down site2               stop the second site only
#   rig.sh status                   one line per service; non-zero if anything is down
#   rig.sh start|stop|restart SVC   munge mariadb slurmdbd slurmctld slurmd
#                                   kdc sshd-login sshd-node sshd-bastion redis registry etcd kube-apiserver
#                                   kube-controller-manager kube-scheduler
#                                   containerd kubelet kube-proxy metrics-server
#                                   site2-munge site2-mariadb site2-slurmdbd
#                                   site2-slurmctld site2-slurmd
#                                   site2-sshd-login site2-sshd-node
#
# State lives in ${SLUICE_RIG_DIR:-/var/lib/sluice-rig}. See README.md.
set -euo pipefail

RIG_SRC_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# shellcheck source=lib/common.sh
source "${RIG_SRC_DIR}/lib/common.sh"
# shellcheck source=lib/packages.sh
source "${RIG_SRC_DIR}/lib/packages.sh"
# shellcheck source=lib/net.sh
source "${RIG_SRC_DIR}/lib/net.sh"
# shellcheck source=lib/users.sh
source "${RIG_SRC_DIR}/lib/users.sh"
# shellcheck source=lib/munge.sh
source "${RIG_SRC_DIR}/lib/munge.sh"
# shellcheck source=lib/mariadb.sh
source "${RIG_SRC_DIR}/lib/mariadb.sh"
# shellcheck source=lib/slurm.sh
source "${RIG_SRC_DIR}/lib/slurm.sh"
# shellcheck source=lib/sshd.sh
source "${RIG_SRC_DIR}/lib/sshd.sh"
# shellcheck source=lib/bastion.sh
source "${RIG_SRC_DIR}/lib/bastion.sh"
# shellcheck source=lib/kdc.sh
source "${RIG_SRC_DIR}/lib/kdc.sh"
# shellcheck source=lib/redis.sh
source "${RIG_SRC_DIR}/lib/redis.sh"
# shellcheck source=lib/image.sh
source "${RIG_SRC_DIR}/lib/image.sh"
# shellcheck source=lib/kube.sh
source "${RIG_SRC_DIR}/lib/kube.sh"
# shellcheck source=lib/kube_pki.sh
source "${RIG_SRC_DIR}/lib/kube_pki.sh"
# shellcheck source=lib/node.sh
source "${RIG_SRC_DIR}/lib/node.sh"
# shellcheck source=lib/node_image.sh
source "${RIG_SRC_DIR}/lib/node_image.sh"
# shellcheck source=lib/registry.sh
source "${RIG_SRC_DIR}/lib/registry.sh"
# shellcheck source=lib/cluster.sh
source "${RIG_SRC_DIR}/lib/cluster.sh"
# shellcheck source=lib/metrics.sh
source "${RIG_SRC_DIR}/lib/metrics.sh"
# shellcheck source=lib/site2_root.sh
source "${RIG_SRC_DIR}/lib/site2_root.sh"
# shellcheck source=lib/site2_net.sh
source "${RIG_SRC_DIR}/lib/site2_net.sh"
# shellcheck source=lib/site2.sh
source "${RIG_SRC_DIR}/lib/site2.sh"
# shellcheck source=lib/env.sh
source "${RIG_SRC_DIR}/lib/env.sh"
# shellcheck source=lib/services.sh
source "${RIG_SRC_DIR}/lib/services.sh"

usage() {
	cat >&2 <<'USAGE'
usage: rig.sh up [node|site2] | down [site2] | status | start|stop|restart SERVICE
  SERVICE: munge mariadb slurmdbd slurmctld slurmd kdc sshd-login sshd-node sshd-bastion
           redis registry etcd kube-apiserver kube-controller-manager kube-scheduler
           containerd kubelet kube-proxy metrics-server
           site2-munge site2-mariadb site2-slurmdbd site2-slurmctld site2-slurmd
           site2-sshd-login site2-sshd-node
  SLUICE_RIG_NODE=0 rig.sh up leaves the node (containerd, kubelet, kube-proxy) out
  SLUICE_RIG_SITE2=0 rig.sh up leaves the second site out
USAGE
	exit 2
}

# close_inherited_fds: descriptors other than stdio that the caller left open
# would otherwise be held by every daemon for its lifetime.
close_inherited_fds() {
	local path fd
	for path in /proc/self/fd/*; do
		fd="${path##*/}"
		if [[ "${fd}" =~ ^[0-9]+$ ]] && ((fd > 2)); then
			{ exec {fd}>&-; } 2>/dev/null || true
		fi
	done
}

rig_dirs() {
	install -d -m 0755 "${RIG_DIR}" "${RIG_LOG_DIR}" "${RIG_PID_DIR}" "${RIG_RUN_DIR}" "${RIG_CONF_DIR}"
	install -d -m 0700 "${RIG_KEY_DIR}"
}

# lock: one rig.sh at a time. Daemons are started with fd 9 closed, so the
# lock ends with this script.
lock() {
	exec 9>"${RIG_DIR}/rig.lock"
	flock -w 300 9 || die "another rig.sh holds ${RIG_DIR}/rig.lock"
}

cmd_up() {
	local start=${SECONDS}
	packages_up
	net_up
	users_up
	image_up
	services_up
	kube_ready
	if node_enabled; then
		node_up
	fi
	if site2_enabled; then
		site2_up
	fi
	env_write
	log "up in $((SECONDS - start))s"
}

# cmd_up_node starts the node alone, on a rig that is up.
cmd_up_node() {
	local start=${SECONDS}
	kube_api_ready || die "node: the API server is not ready (run rig.sh up)"
	node_up
	SLUICE_RIG_NODE=1 env_write
	log "node up in $((SECONDS - start))s"
}

# cmd_up_site2 starts the second site alone, beside a rig that is up (it
# takes the rig's users, keys and image).
cmd_up_site2() {
	[[ -f "$(user_key "${RIG_USER}").pub" && -d "${RIG_IMAGE_DIR}" ]] ||
		die "site2: the rig's users and image are missing (run rig.sh up)"
	site2_up
	env_replace RIG_SITE2_ site2_env_lines
}

cmd_down_site2() {
	site2_down
	env_replace RIG_SITE2_
}

cmd_down() {
	site2_down
	services_down
	bastion_net_down
	net_down
	wait_reaped
	rm -f "${RIG_DIR}/rig.env"
	log "down"
}

main() {
	[[ $# -ge 1 ]] || usage
	local cmd="$1"
	shift
	case "${cmd}" in
	up) [[ $# -eq 0 || ($# -eq 1 && ("$1" == node || "$1" == site2)) ]] || usage ;;
	down) [[ $# -eq 0 || ($# -eq 1 && "$1" == site2) ]] || usage ;;
	status) [[ $# -eq 0 ]] || usage ;;
	start | stop | restart)
		[[ $# -eq 1 ]] || usage
		svc_comm "$1" >/dev/null
		;;
	*) usage ;;
	esac
	require_root
	close_inherited_fds
	if [[ "${cmd}" == status ]]; then
		services_status
		return
	fi
	rig_dirs
	lock
	case "${cmd}" in
	up)
		case "${1:-}" in
		node) cmd_up_node ;;
		site2) cmd_up_site2 ;;
		*) cmd_up ;;
		esac
		;;
	down) if [[ $# -eq 1 ]]; then cmd_down_site2; else cmd_down; fi ;;
	start) service_start "$1" ;;
	stop) service_stop "$1" ;;
	restart) service_restart "$1" ;;
	esac
}

main "$@"
