#!/usr/bin/env bash
# One sshd per node: login (10.251.1.2:22 in sluice-login) and compute node
# (10.251.2.2:22 in sluice-node), each with its own config, host key and
# PidFile; and the pinned known_hosts files for both.
set -euo pipefail

RIG_KNOWN_HOSTS_FILE="${RIG_DIR}/known_hosts"
RIG_NODE_KNOWN_HOSTS_FILE="${RIG_DIR}/node_known_hosts"

sshd_role() { printf '%s' "${1#sshd-}"; }
sshd_addr() { if [[ "$1" == sshd-login ]]; then printf '%s' "${LOGIN_ADDR}"; else printf '%s' "${NODE_ADDR}"; fi; }
sshd_ns() { if [[ "$1" == sshd-login ]]; then printf '%s' "${NS_LOGIN}"; else printf '%s' "${NS_NODE}"; fi; }
sshd_host_key() { printf '%s/ssh_host_%s_ed25519_key' "${RIG_KEY_DIR}" "$(sshd_role "$1")"; }
sshd_conf() { printf '%s/sshd_%s.conf' "${RIG_CONF_DIR}" "$(sshd_role "$1")"; }
sshd_override() { printf '%s/sshd_%s.override.conf' "${RIG_CONF_DIR}" "$(sshd_role "$1")"; }

# host_key_line NAME SERVICE: a known_hosts line pinning SERVICE's key for NAME.
host_key_line() {
	local name="$1" svc="$2" type key _
	read -r type key _ <"$(sshd_host_key "${svc}").pub"
	printf '%s %s %s\n' "${name}" "${type}" "${key}"
}

# sshd_prepare SERVICE: host key and config; returns 0 when the config changed.
sshd_prepare() {
	local svc="$1" key
	key="$(sshd_host_key "${svc}")"
	if [[ ! -f "${key}" ]]; then
		ssh-keygen -q -t ed25519 -N '' -C "sluice-rig-$(sshd_role "${svc}")" -f "${key}"
	fi
	chmod 0600 "${key}"
	install -d -m 0755 /run/sshd
	[[ -f "$(sshd_override "${svc}")" ]] || install -m 0644 /dev/null "$(sshd_override "${svc}")"
	local changed=1
	if render "${RIG_SRC_DIR}/conf/sshd_config.in" "$(sshd_conf "${svc}")" 0644 \
		ROLE="$(sshd_role "${svc}")" ADDR="$(sshd_addr "${svc}")" HOST_KEY="${key}" OVERRIDE="$(sshd_override "${svc}")" \
		PID_FILE="${RIG_RUN_DIR}/${svc}.pid" USERS="${RIG_USER} ${RIG_OTHER_USER}"; then
		changed=0
	fi
	/usr/sbin/sshd -t -f "$(sshd_conf "${svc}")" || die "${svc}: bad config $(sshd_conf "${svc}")"
	return "${changed}"
}

known_hosts_up() {
	host_key_line "${LOGIN_ADDR}" sshd-login >"${RIG_KNOWN_HOSTS_FILE}.tmp"
	mv -f "${RIG_KNOWN_HOSTS_FILE}.tmp" "${RIG_KNOWN_HOSTS_FILE}"
	{
		host_key_line "${NODE_NAME}" sshd-node
		host_key_line "${NODE_ADDR}" sshd-node
	} >"${RIG_NODE_KNOWN_HOSTS_FILE}.tmp"
	mv -f "${RIG_NODE_KNOWN_HOSTS_FILE}.tmp" "${RIG_NODE_KNOWN_HOSTS_FILE}"
	chmod 0644 "${RIG_KNOWN_HOSTS_FILE}" "${RIG_NODE_KNOWN_HOSTS_FILE}"
	# alice on the login node reaches the node with its key pinned
	local home
	home="$(getent passwd "${RIG_USER}" | cut -d: -f6)"
	install -m 0644 -o "${RIG_USER}" -g "$(id -gn "${RIG_USER}")" \
		"${RIG_NODE_KNOWN_HOSTS_FILE}" "${home}/.ssh/known_hosts"
}

# sshd_answers SERVICE: the daemon serves its own host key on its address.
sshd_answers() {
	local svc="$1" addr want got
	addr="$(sshd_addr "${svc}")"
	want="$(host_key_line "${addr}" "${svc}")"
	if [[ "${svc}" == sshd-login ]]; then
		got="$(ssh-keyscan -T 2 -t ed25519 "${addr}" 2>/dev/null)"
	else
		got="$(in_login ssh-keyscan -T 2 -t ed25519 "${addr}" 2>/dev/null)"
	fi
	[[ "${got}" == "${want}" ]]
}

sshd_start() {
	local svc="$1"
	sshd_prepare "${svc}" || true
	spawn "${svc}" sshd ip netns exec "$(sshd_ns "${svc}")" /usr/sbin/sshd -D -e -f "$(sshd_conf "${svc}")"
	wait_until 15 "${svc} to answer" sshd_answers "${svc}" || { tail_log "${svc}"; die "${svc} does not answer"; }
}

# sshd_overrides_reset empties the override files a test may have left,
# and tells whether one was not empty (0), so that its sshd is restarted.
sshd_overrides_reset() {
	local svc f dirty=1
	for svc in sshd-login sshd-node; do
		f="$(sshd_override "${svc}")"
		if [[ -s "${f}" ]]; then
			log "${svc}: override ${f} left by a test: emptied"
			: >"${f}"
			dirty=0
		fi
	done
	return "${dirty}"
}
