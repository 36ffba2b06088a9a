#!/usr/bin/env bash
# rig.env: what tests read (internal/testrig) to find the rig.
set -euo pipefail

env_write() {
	local file="${RIG_DIR}/rig.env"
	{
		printf '# written by hack/rig/rig.sh up\n'
		printf 'RIG_DIR=%s\n' "${RIG_DIR}"
		printf 'RIG_LOGIN_ADDR=%s\n' "${LOGIN_ADDR}"
		printf 'RIG_LOGIN_PORT=%s\n' 22
		printf 'RIG_NODE_ADDR=%s\n' "${NODE_ADDR}"
		printf 'RIG_NODE_NAME=%s\n' "${NODE_NAME}"
		printf 'RIG_USER=%s\n' "${RIG_USER}"
		printf 'RIG_USER_UID=%s\n' "$(id -u "${RIG_USER}")"
		printf 'RIG_OTHER_USER=%s\n' "${RIG_OTHER_USER}"
		printf 'RIG_KEY=%s\n' "$(user_key "${RIG_USER}")"
		printf 'RIG_OTHER_KEY=%s\n' "$(user_key "${RIG_OTHER_USER}")"
		printf 'RIG_KNOWN_HOSTS=%s\n' "${RIG_KNOWN_HOSTS_FILE}"
		printf 'RIG_NODE_KNOWN_HOSTS=%s\n' "${RIG_NODE_KNOWN_HOSTS_FILE}"
		bastion_env_lines
		printf 'RIG_DATA_ROOT=%s\n' "$(data_root)"
		printf 'RIG_IMAGE=%s\n' "${RIG_IMAGE_DIR}"
		printf 'RIG_REDIS_ADDR=%s\n' "${REDIS_ADDR}"
		printf 'RIG_REDIS_EXT_ADDR=%s\n' "${REDIS_EXT_ADDR}"
		registry_env_lines
		printf 'RIG_SOCKET_DIR_ROOT=%s\n' "${SOCKET_DIR_ROOT}"
		printf 'RIG_SSHD_NODE_OVERRIDE=%s\n' "$(sshd_override sshd-node)"
		printf 'RIG_SSHD_LOGIN_OVERRIDE=%s\n' "$(sshd_override sshd-login)"
		printf 'RIG_SLURM_CONF=%s\n' "${SLURM_CONF}"
		printf 'RIG_KRB5_REALM=%s\n' "${KDC_REALM}"
		printf 'RIG_KRB5_KDC=%s\n' "${LOGIN_ADDR}:88"
		printf 'RIG_KRB5_CONF=%s\n' /etc/krb5.conf
		printf 'RIG_KRB5_PRINCIPAL=%s\n' "$(kdc_user_principal "${RIG_USER}")"
		printf 'RIG_KRB5_KEYTAB=%s\n' "$(kdc_user_keytab "${RIG_USER}")"
		printf 'RIG_KUBECONFIG=%s\n' "${KUBE_DIR}/admin.kubeconfig"
		printf 'RIG_KUBE_CA=%s\n' "${KUBE_CA_CERT}"
		printf 'RIG_KUBE_SERVER=%s\n' "${KUBE_SERVER}"
		if node_enabled || node_pid kubelet >/dev/null; then
			printf 'RIG_K8S_NODE=%s\n' "${NODE_K8S_NAME}"
			printf 'RIG_K8S_CONTAINERD_SOCK=%s\n' "${NODE_CONTAINERD_SOCK}"
			printf 'RIG_K8S_KUBELET_DIR=%s\n' "${NODE_DIR}/kubelet"
			printf 'RIG_K8S_POD_CIDR=%s\n' "${NODE_POD_CIDR}"
			printf 'RIG_K8S_BUSYBOX_IMAGE=%s\n' "${NODE_BUSYBOX_IMAGE}"
			printf 'RIG_K8S_CLUSTER_DNS=%s\n' "${NODE_CLUSTER_DNS}"
		fi
		if site2_enabled || service_pid site2-sshd-login >/dev/null; then
			site2_env_lines
		fi
	} >"${file}.tmp"
	chmod 0644 "${file}.tmp"
	mv -f "${file}.tmp" "${file}"
	log "env: ${file}"
}

# env_replace PREFIX [FUNC]: in an existing rig.env, the lines of keys
# starting with PREFIX become FUNC's output (none without FUNC); every other
# line stays as it is. For parts started or stopped on a rig that is up.
env_replace() {
	local prefix="$1" func="${2:-}" file="${RIG_DIR}/rig.env"
	[[ -f "${file}" ]] || return 0
	{
		grep -v "^${prefix}" "${file}" || true
		[[ -z "${func}" ]] || "${func}"
	} >"${file}.tmp"
	chmod 0644 "${file}.tmp"
	mv -f "${file}.tmp" "${file}"
}
