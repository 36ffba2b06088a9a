#!/usr/bin/env bash
# shellcheck disable=SC2034 # constants read by the other files
# The rig's container registry (hack/tools/registry: go-containerregistry's
# pkg/registry behind TLS and basic auth) on the cluster side, at
# REGISTRY_ADDR. Its certificate comes from the registry CA of the rig's
# PKI, which the node's containerd trusts (certs.d, lib/node.sh) and the
# tests hand to helm (--ca-file). The one user's password is made once and
# kept in a 0600 file: rig.env names the file, never the password (the
# site's users share this machine). Blobs are kept on disk; manifests live
# in memory, so images are pushed after each start (the e2e tests and the
# demo push once per run).
set -euo pipefail

REGISTRY_DIR="${RIG_DIR}/registry"
REGISTRY_ADDR="${EXT_ADDR}:5443"
REGISTRY_USER=sluice
REGISTRY_PASSWORD_FILE="${REGISTRY_DIR}/password"
REGISTRY_USERS_FILE="${REGISTRY_DIR}/users"
REGISTRY_BIN="${REGISTRY_DIR}/bin/sluice-registry"
REGISTRY_CA_CERT="${KUBE_PKI_DIR}/registry-ca.crt"
# containerd's registry hosts (config_path), one directory per registry
REGISTRY_CERTS_D="${NODE_DIR}/etc/certs.d"

# registry_prepare: the CA, the server's certificate, the password, the
# binary (go build from this checkout: seconds with Go's build cache) and
# containerd's hosts.toml for the registry.
registry_prepare() {
	install -d -m 0700 "${REGISTRY_DIR}" "${REGISTRY_DIR}/blobs" "${REGISTRY_DIR}/bin"
	kube_ca_up registry-ca "sluice-rig registry CA"
	kube_cert registry-ca registry "/CN=sluice-rig registry" serverAuth \
		"IP:${EXT_ADDR}" "IP:127.0.0.1" DNS:localhost
	if [[ ! -s "${REGISTRY_PASSWORD_FILE}" ]]; then
		(umask 077 && openssl rand -hex 24 >"${REGISTRY_PASSWORD_FILE}")
	fi
	(umask 077 && printf '%s:%s\n' "${REGISTRY_USER}" "$(<"${REGISTRY_PASSWORD_FILE}")" >"${REGISTRY_USERS_FILE}")
	local src
	src="$(cd "${RIG_SRC_DIR}/../.." && pwd)"
	(cd "${src}" && CGO_ENABLED=0 go build -trimpath -o "${REGISTRY_BIN}.tmp" ./hack/tools/registry) ||
		die "registry: go build ./hack/tools/registry failed"
	mv -f "${REGISTRY_BIN}.tmp" "${REGISTRY_BIN}"
	install -d -m 0755 "${REGISTRY_CERTS_D}/${REGISTRY_ADDR}"
	printf 'server = "https://%s"\n\n[host."https://%s"]\n  capabilities = ["pull", "resolve"]\n  ca = "%s"\n' \
		"${REGISTRY_ADDR}" "${REGISTRY_ADDR}" "${REGISTRY_CA_CERT}" >"${REGISTRY_CERTS_D}/${REGISTRY_ADDR}/hosts.toml"
}

registry_start() {
	registry_prepare
	spawn registry sluice-registry "${REGISTRY_BIN}" -listen "${REGISTRY_ADDR}" \
		-cert "${KUBE_PKI_DIR}/registry.crt" -key "${KUBE_PKI_DIR}/registry.key" \
		-users "${REGISTRY_USERS_FILE}" -dir "${REGISTRY_DIR}/blobs"
	wait_until 10 "the registry to answer" registry_answers || { tail_log registry; die "registry does not answer"; }
	# a registry started alone on a rig that is up is told in rig.env too
	env_replace RIG_REGISTRY registry_env_lines
}

# registry_answers: /v2/ answers 200 to the user, over TLS checked against
# the registry CA.
registry_answers() {
	[[ "$(curl -sS --cacert "${REGISTRY_CA_CERT}" -u "${REGISTRY_USER}:$(<"${REGISTRY_PASSWORD_FILE}")" \
		-o /dev/null -w '%{http_code}' "https://${REGISTRY_ADDR}/v2/" 2>/dev/null)" == 200 ]]
}

registry_env_lines() {
	printf 'RIG_REGISTRY=%s\n' "${REGISTRY_ADDR}"
	printf 'RIG_REGISTRY_CA=%s\n' "${REGISTRY_CA_CERT}"
	printf 'RIG_REGISTRY_USER=%s\n' "${REGISTRY_USER}"
	printf 'RIG_REGISTRY_PASSWORD_FILE=%s\n' "${REGISTRY_PASSWORD_FILE}"
}
