#!/usr/bin/env bash
# Site accounts (alice runs the jobs, bob is another user), their SSH keys,
# the data root, and /etc/hosts names for the login and compute nodes.
set -euo pipefail

user_key() { printf '%s/%s_ed25519' "${RIG_KEY_DIR}" "$1"; }

ensure_user() {
	local user="$1"
	if ! id -u "${user}" >/dev/null 2>&1; then
		useradd --create-home --shell /bin/bash "${user}"
	fi
	# useradd leaves the account locked ("!"); sshd without PAM refuses
	# locked accounts even for keys. "*" means: no password, not locked.
	if [[ "$(getent shadow "${user}" | cut -d: -f2)" != "*" ]]; then
		usermod -p '*' "${user}"
	fi
}

# install_user_key USER: the user's key pair lives in the rig's key dir
# (root-readable copy for tests) and in ~/.ssh; authorized_keys holds it.
install_user_key() {
	local user="$1" key home group
	key="$(user_key "${user}")"
	if [[ ! -f "${key}" ]]; then
		ssh-keygen -q -t ed25519 -N '' -C "${user}@sluice-rig" -f "${key}"
	fi
	chmod 0600 "${key}"
	chmod 0644 "${key}.pub"
	home="$(getent passwd "${user}" | cut -d: -f6)"
	group="$(id -gn "${user}")"
	install -d -m 0700 -o "${user}" -g "${group}" "${home}/.ssh"
	install -m 0600 -o "${user}" -g "${group}" "${key}" "${home}/.ssh/id_ed25519"
	install -m 0644 -o "${user}" -g "${group}" "${key}.pub" "${home}/.ssh/id_ed25519.pub"
	install -m 0600 -o "${user}" -g "${group}" "${key}.pub" "${home}/.ssh/authorized_keys"
}

users_up() {
	ensure_user "${RIG_USER}"
	ensure_user "${RIG_OTHER_USER}"
	install_user_key "${RIG_USER}"
	install_user_key "${RIG_OTHER_USER}"
	install -d -m 0700 -o "${RIG_USER}" -g "$(id -gn "${RIG_USER}")" "$(data_root)"
	# the node's socket directory root, as a site makes it: every user's,
	# sticky, like /tmp
	install -d -m 1777 -o root -g root "${SOCKET_DIR_ROOT}"
	hosts_up
	log "users: ${RIG_USER} (uid $(id -u "${RIG_USER}")), ${RIG_OTHER_USER}; keys in ${RIG_KEY_DIR}"
}

data_root() {
	printf '%s/.sluice' "$(getent passwd "${RIG_USER}" | cut -d: -f6)"
}

# hosts_up writes the rig's block in /etc/hosts in place (the file may be a
# bind mount, so it is rewritten, not replaced).
hosts_up() {
	local begin="# sluice-rig begin" end="# sluice-rig end" current wanted
	current="$(cat /etc/hosts)"
	wanted="$(printf '%s\n' "${current}" | sed "/^${begin}\$/,/^${end}\$/d")"
	wanted+="$(printf '\n%s\n%s login\n%s %s\n%s' "${begin}" "${LOGIN_ADDR}" "${NODE_ADDR}" "${NODE_NAME}" "${end}")"
	if [[ "${current}" != "${wanted}" ]]; then
		printf '%s\n' "${wanted}" >/etc/hosts
	fi
}
