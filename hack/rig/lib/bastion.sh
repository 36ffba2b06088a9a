#!/usr/bin/env bash
# shellcheck disable=SC2034 # constants read by the other files
# A bastion (jump host) before the login node, with its own sshd:
#   host (the cluster) 10.251.3.1 <-veth-> 10.251.3.2 sluice-bastion
#   sluice-bastion     10.251.4.1 <-veth-> 10.251.4.2 sluice-login
# The host reaches the bastion; the bastion reaches the login node's sshd
# at its usual address, 10.251.1.2, through the login node's end of their
# link (a host route: the login node answers for its addresses on any
# link). No forwarding: the bastion passes connections as sshd channels
# only. The host's direct path to the login node stays, for every other
# test.
set -euo pipefail

NS_BASTION=sluice-bastion
BASTION_ADDR=10.251.3.2
BASTION_HOST_SIDE_ADDR=10.251.3.1
BASTION_LOGIN_SIDE_ADDR=10.251.4.1
LOGIN_BASTION_SIDE_ADDR=10.251.4.2
VETH_HOST_BASTION=sluice-hb0
VETH_BASTION_UP=sluice-b0
VETH_BASTION_DOWN=sluice-b1
VETH_LOGIN_BASTION=sluice-l2
RIG_BASTION_KNOWN_HOSTS_FILE="${RIG_DIR}/bastion_known_hosts"

bastion_net_up() {
	netns_exists "${NS_LOGIN}" || die "bastion: the login namespace is missing (run rig.sh up)"
	netns_exists "${NS_BASTION}" || ip netns add "${NS_BASTION}"
	ip -n "${NS_BASTION}" link set lo up
	in_netns_sysctl "${NS_BASTION}" net.ipv4.ip_forward=0

	if ! link_exists "" "${VETH_HOST_BASTION}"; then
		ip link add "${VETH_HOST_BASTION}" type veth peer name "${VETH_BASTION_UP}" netns "${NS_BASTION}"
	fi
	ip addr replace "${BASTION_HOST_SIDE_ADDR}/24" dev "${VETH_HOST_BASTION}"
	ip link set "${VETH_HOST_BASTION}" up
	ip -n "${NS_BASTION}" addr replace "${BASTION_ADDR}/24" dev "${VETH_BASTION_UP}"
	ip -n "${NS_BASTION}" link set "${VETH_BASTION_UP}" up

	if ! link_exists "${NS_BASTION}" "${VETH_BASTION_DOWN}"; then
		ip -n "${NS_BASTION}" link add "${VETH_BASTION_DOWN}" type veth peer name "${VETH_LOGIN_BASTION}" netns "${NS_LOGIN}"
	fi
	ip -n "${NS_BASTION}" addr replace "${BASTION_LOGIN_SIDE_ADDR}/24" dev "${VETH_BASTION_DOWN}"
	ip -n "${NS_BASTION}" link set "${VETH_BASTION_DOWN}" up
	ip -n "${NS_LOGIN}" addr replace "${LOGIN_BASTION_SIDE_ADDR}/24" dev "${VETH_LOGIN_BASTION}"
	ip -n "${NS_LOGIN}" link set "${VETH_LOGIN_BASTION}" up
	ip -n "${NS_BASTION}" route replace "${LOGIN_ADDR}/32" via "${LOGIN_BASTION_SIDE_ADDR}" dev "${VETH_BASTION_DOWN}"
	log "network: ${NS_BASTION} ${BASTION_ADDR} (host ${BASTION_HOST_SIDE_ADDR}), reaching ${LOGIN_ADDR} through ${LOGIN_BASTION_SIDE_ADDR}"
}

bastion_net_ok() {
	netns_exists "${NS_BASTION}" || return 1
	local host bastion route
	host="$(ip -o addr show dev "${VETH_HOST_BASTION}" 2>/dev/null)" || return 1
	bastion="$(ip -n "${NS_BASTION}" -o addr show 2>/dev/null)" || return 1
	route="$(ip -n "${NS_BASTION}" route show "${LOGIN_ADDR}/32" 2>/dev/null)" || return 1
	[[ "${host}" == *" ${BASTION_HOST_SIDE_ADDR}/24 "* ]] &&
		[[ "${bastion}" == *" ${BASTION_ADDR}/24 "* ]] &&
		[[ "${bastion}" == *" ${BASTION_LOGIN_SIDE_ADDR}/24 "* ]] &&
		[[ "${route}" == *"via ${LOGIN_BASTION_SIDE_ADDR}"* ]]
}

bastion_net_down() {
	if netns_exists "${NS_BASTION}"; then
		local pids=()
		mapfile -t pids < <(ip netns pids "${NS_BASTION}")
		if ((${#pids[@]} > 0)); then
			log "network: stopping ${#pids[@]} leftover process(es) in ${NS_BASTION}"
			kill_pids 3 "${pids[@]}"
		fi
		ip netns del "${NS_BASTION}"
	fi
	if link_exists "" "${VETH_HOST_BASTION}"; then
		ip link del "${VETH_HOST_BASTION}"
	fi
	if netns_exists "${NS_LOGIN}" && link_exists "${NS_LOGIN}" "${VETH_LOGIN_BASTION}"; then
		ip -n "${NS_LOGIN}" link del "${VETH_LOGIN_BASTION}"
	fi
}

bastion_host_key() { printf '%s/ssh_host_bastion_ed25519_key' "${RIG_KEY_DIR}"; }
bastion_conf() { printf '%s/sshd_bastion.conf' "${RIG_CONF_DIR}"; }
bastion_override() { printf '%s/sshd_bastion.override.conf' "${RIG_CONF_DIR}"; }

# bastion_prepare: host key, config (the sshds' template) and the pinned
# known_hosts; returns 0 when the config changed.
bastion_prepare() {
	local key changed=1 type pub _
	key="$(bastion_host_key)"
	if [[ ! -f "${key}" ]]; then
		ssh-keygen -q -t ed25519 -N '' -C sluice-rig-bastion -f "${key}"
	fi
	chmod 0600 "${key}"
	install -d -m 0755 /run/sshd
	[[ -f "$(bastion_override)" ]] || install -m 0644 /dev/null "$(bastion_override)"
	if render "${RIG_SRC_DIR}/conf/sshd_config.in" "$(bastion_conf)" 0644 \
		ROLE=bastion ADDR="${BASTION_ADDR}" HOST_KEY="${key}" OVERRIDE="$(bastion_override)" \
		PID_FILE="${RIG_RUN_DIR}/sshd-bastion.pid" USERS="${RIG_USER} ${RIG_OTHER_USER}"; then
		changed=0
	fi
	/usr/sbin/sshd -t -f "$(bastion_conf)" || die "sshd-bastion: bad config $(bastion_conf)"
	read -r type pub _ <"${key}.pub"
	printf '%s %s %s\n' "${BASTION_ADDR}" "${type}" "${pub}" >"${RIG_BASTION_KNOWN_HOSTS_FILE}.tmp"
	chmod 0644 "${RIG_BASTION_KNOWN_HOSTS_FILE}.tmp"
	mv -f "${RIG_BASTION_KNOWN_HOSTS_FILE}.tmp" "${RIG_BASTION_KNOWN_HOSTS_FILE}"
	return "${changed}"
}

# bastion_answers: the bastion's sshd serves its own key, and the login
# node's sshd answers from the bastion.
bastion_answers() {
	local got
	got="$(ssh-keyscan -T 2 -t ed25519 "${BASTION_ADDR}" 2>/dev/null)"
	[[ "${got}" == "$(<"${RIG_BASTION_KNOWN_HOSTS_FILE}")" ]] || return 1
	got="$(nsenter --net="/run/netns/${NS_BASTION}" -- ssh-keyscan -T 2 -t ed25519 "${LOGIN_ADDR}" 2>/dev/null)"
	[[ "${got}" == "$(host_key_line "${LOGIN_ADDR}" sshd-login)" ]]
}

bastion_start() {
	bastion_net_ok || bastion_net_up
	bastion_prepare || true
	spawn sshd-bastion sshd ip netns exec "${NS_BASTION}" /usr/sbin/sshd -D -e -f "$(bastion_conf)"
	wait_until 15 "sshd-bastion to answer" bastion_answers || {
		tail_log sshd-bastion
		die "sshd-bastion does not answer, or the login node does not answer through it"
	}
	bastion_env_add
}

# bastion_env_lines: the bastion's lines of rig.env.
bastion_env_lines() {
	printf 'RIG_BASTION_ADDR=%s\n' "${BASTION_ADDR}"
	printf 'RIG_BASTION_PORT=%s\n' 22
	printf 'RIG_BASTION_KNOWN_HOSTS=%s\n' "${RIG_BASTION_KNOWN_HOSTS_FILE}"
}

# bastion_env_add puts the bastion's lines into an existing rig.env (for
# `rig.sh start sshd-bastion` on a rig that is up; `up` writes them with the
# rest), leaving every other line as it is.
bastion_env_add() { env_replace RIG_BASTION_ bastion_env_lines; }

# bastion_restart_changed: for up, a running bastion sshd whose config
# changed (or whose override a test left) is stopped, to be started again.
bastion_restart_changed() {
	local dirty=1
	if [[ -s "$(bastion_override)" ]]; then
		log "sshd-bastion: override $(bastion_override) left by a test: emptied"
		: >"$(bastion_override)"
		dirty=0
	fi
	if { bastion_prepare || ((dirty == 0)); } && service_pid sshd-bastion >/dev/null; then
		log "sshd-bastion: config changed"
		service_stop sshd-bastion
	fi
}
