#!/usr/bin/env bash
# shellcheck disable=SC2034 # constants and flags read by the other files
# Slurm: slurmdbd and slurmctld in the login namespace, slurmd (node1) in the
# node namespace. The controller's address is the login node's side of the
# login-node link (10.251.2.1): the node reaches it directly, and commands on
# the login node reach it as a local address.
set -euo pipefail

SLURM_STATE_DIR="${RIG_DIR}/slurm"
SLURM_RUN_DIR="${RIG_RUN_DIR}/slurm"
SLURM_CONF_CHANGED=1
SLURMDBD_CONF_CHANGED=1

# slurm_prepare renders the configs (slurm.conf with its gres.conf, and
# slurmdbd.conf; linked from /etc/slurm, where the Slurm commands of every
# user look) and sets SLURM_CONF_CHANGED and SLURMDBD_CONF_CHANGED to 0 when
# they changed.
slurm_prepare() {
	local host
	host="$(hostname -s)"
	install -d -m 0755 -o slurm -g slurm "${SLURM_STATE_DIR}" "${SLURM_STATE_DIR}/ctld" "${SLURM_RUN_DIR}"
	install -d -m 0755 "${SLURM_STATE_DIR}/d" /etc/slurm
	SLURM_CONF_CHANGED=1
	if render "${RIG_SRC_DIR}/conf/slurm.conf.in" "${RIG_CONF_DIR}/slurm.conf" 0644 \
		CLUSTER="${CLUSTER_NAME}" CTLD_HOST="${host}" CTLD_ADDR="${LOGIN_NODE_SIDE_ADDR}" \
		STATE_DIR="${SLURM_STATE_DIR}" RUN_DIR="${SLURM_RUN_DIR}" \
		NODE_NAME="${NODE_NAME}" NODE_ADDR="${NODE_ADDR}"; then
		SLURM_CONF_CHANGED=0
	fi
	slurm_gpu_files "${SLURM_STATE_DIR}/gpu"
	if render "${RIG_SRC_DIR}/conf/gres.conf.in" "${RIG_CONF_DIR}/gres.conf" 0644 \
		NODE_NAME="${NODE_NAME}" GPU_DIR="${SLURM_STATE_DIR}/gpu"; then
		SLURM_CONF_CHANGED=0
	fi
	SLURMDBD_CONF_CHANGED=1
	if render "${RIG_SRC_DIR}/conf/slurmdbd.conf.in" "${RIG_CONF_DIR}/slurmdbd.conf" 0600 \
		DBD_HOST="${host}" RUN_DIR="${SLURM_RUN_DIR}" DB_PORT="${MARIADB_PORT}" \
		DB_USER="${SLURM_DB_USER}" DB_PASS="$(slurm_db_pass)" DB_NAME="${SLURM_DB}"; then
		SLURMDBD_CONF_CHANGED=0
	fi
	# slurmdbd insists that its config is the SlurmUser's and private
	chown slurm:slurm "${RIG_CONF_DIR}/slurmdbd.conf"
	ln -sfn "${RIG_CONF_DIR}/slurm.conf" "${SLURM_CONF}"
	ln -sfn "${RIG_CONF_DIR}/gres.conf" "$(dirname "${SLURM_CONF}")/gres.conf"
	ln -sfn "${RIG_CONF_DIR}/slurmdbd.conf" "${SLURMDBD_CONF}"
}

# slurm_gpu_files DIR makes the stand-ins of the node's two GPU device
# files (gres.conf): character devices 1:3, as /dev/null.
slurm_gpu_files() {
	local dir="$1" i
	install -d -m 0755 "${dir}"
	for i in 0 1; do
		if [[ ! -c "${dir}/nvidia${i}" ]]; then
			rm -f "${dir}/nvidia${i}"
			mknod -m 0666 "${dir}/nvidia${i}" c 1 3
		fi
	done
}

slurmdbd_start() {
	slurm_prepare
	spawn slurmdbd slurmdbd ip netns exec "${NS_LOGIN}" /usr/sbin/slurmdbd -D
	wait_until 60 "slurmdbd to answer" slurmdbd_answers || { tail_log slurmdbd; die "slurmdbd does not answer"; }
	local clusters
	clusters="$(in_login sacctmgr -n -P list cluster format=cluster)"
	if ! grep -qxF "${CLUSTER_NAME}" <<<"${clusters}"; then
		log "slurmdbd: adding cluster ${CLUSTER_NAME}"
		in_login sacctmgr -i add cluster "${CLUSTER_NAME}" >>"${RIG_LOG_DIR}/slurmdbd.log" 2>&1
	fi
}

slurmdbd_answers() {
	in_login sacctmgr -n -P list cluster format=cluster
}

slurmctld_start() {
	slurm_prepare
	spawn slurmctld slurmctld ip netns exec "${NS_LOGIN}" /usr/sbin/slurmctld -D
	wait_until 30 "slurmctld to answer" slurmctld_answers || { tail_log slurmctld; die "slurmctld does not answer"; }
}

slurmctld_answers() {
	local out
	out="$(in_login scontrol ping)" || return 1
	[[ "${out}" == *"is UP"* ]]
}

# slurmd needs the host's /sys (cgroups), which ip netns exec would remount:
# nsenter changes the network namespace only.
slurmd_start() {
	slurm_prepare
	spawn slurmd slurmd nsenter --net="/run/netns/${NS_NODE}" -- /usr/sbin/slurmd -D -N "${NODE_NAME}"
	wait_until 30 "${NODE_NAME} to be ready" node_ready || {
		tail_log slurmd
		die "${NODE_NAME} is not ready: $(node_state)"
	}
}

node_state() {
	in_login sinfo -h -n "${NODE_NAME}" -o %t 2>/dev/null || true
}

# node_ready: the node answers and takes jobs. A node left drained or down by
# an earlier run is resumed.
node_ready() {
	local state
	state="$(node_state)"
	case "${state}" in
	idle | mix | alloc | comp) return 0 ;;
	drain | drng | down)
		in_login scontrol update nodename="${NODE_NAME}" state=resume >/dev/null 2>&1 || true
		return 1
		;;
	*) return 1 ;;
	esac
}
