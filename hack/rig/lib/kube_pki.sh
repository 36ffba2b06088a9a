#!/usr/bin/env bash
# shellcheck disable=SC2034 # constants read by the other files
# The control plane's keys and certificates (openssl), and the kubeconfigs
# built from them, in ${KUBE_DIR}/pki and ${KUBE_DIR}. Everything is made
# once and kept by `down`; a certificate is made again when it is missing,
# near its end, not from the current CA, or asked for other names. A service
# whose files changed is restarted by `up` (kube_restart_changed).
set -euo pipefail

KUBE_PKI_DIR="${KUBE_DIR}/pki"
KUBE_CA_CERT="${KUBE_PKI_DIR}/ca.crt"
KUBE_CA_KEY="${KUBE_PKI_DIR}/ca.key"
KUBE_FRONT_PROXY_CA_CERT="${KUBE_PKI_DIR}/front-proxy-ca.crt"
KUBE_SA_KEY="${KUBE_PKI_DIR}/sa.key"
KUBE_SA_PUB="${KUBE_PKI_DIR}/sa.pub"
KUBE_CA_DAYS=3650
KUBE_CERT_DAYS=365
# a certificate with less than this left is made again
KUBE_CERT_RENEW_S=$((30 * 24 * 3600))

# The API server's names: the in-cluster names a job uses (through the
# tunnel, with TLS verified), loopback, the host's rig address, the address
# it advertises, and the first IP of the service range (the `kubernetes`
# Service).
KUBE_APISERVER_SANS=(
	DNS:kubernetes.default.svc.cluster.local DNS:kubernetes.default.svc
	DNS:kubernetes.default DNS:kubernetes DNS:localhost
	"IP:127.0.0.1" "IP:${HOST_ADDR}" "IP:${EXT_ADDR}" "IP:${KUBE_SERVICE_IP}"
)

kube_new_key() {
	(umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null)
}

# kube_ca_up NAME CN: the CA ${KUBE_PKI_DIR}/NAME.{key,crt}.
kube_ca_up() {
	local name="$1" cn="$2" key="${KUBE_PKI_DIR}/$1.key" crt="${KUBE_PKI_DIR}/$1.crt"
	if [[ -s "${key}" && -s "${crt}" ]] &&
		openssl x509 -noout -checkend "${KUBE_CERT_RENEW_S}" -in "${crt}" >/dev/null; then
		return 0
	fi
	log "kube: making the ${name} CA (${cn})"
	local cnf="${KUBE_PKI_DIR}/${name}.cnf"
	cat >"${cnf}" <<EOF
[req]
distinguished_name = dn
x509_extensions = ca
prompt = no
[dn]
CN = ${cn}
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
EOF
	kube_new_key "${key}"
	openssl req -x509 -new -config "${cnf}" -key "${key}" -sha256 \
		-days "${KUBE_CA_DAYS}" -out "${crt}" 2>/dev/null || die "kube: openssl req (${name}) failed"
}

# kube_cert CA NAME SUBJECT USAGE [SAN...]: ${KUBE_PKI_DIR}/NAME.{key,crt},
# signed by the CA ${KUBE_PKI_DIR}/CA.{key,crt}, for USAGE serverAuth or
# clientAuth.
kube_cert() {
	local ca="${KUBE_PKI_DIR}/$1" name="$2" subject="$3" usage="$4"
	shift 4
	local key="${KUBE_PKI_DIR}/${name}.key" crt="${KUBE_PKI_DIR}/${name}.crt"
	local ext="${KUBE_PKI_DIR}/${name}.ext" want sans
	want="basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = ${usage}
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
# subject ${subject}"
	if (($# > 0)); then
		sans="$(printf '%s,' "$@")"
		want+=$'\n'"subjectAltName = ${sans%,}"
	fi
	if [[ -s "${key}" && -s "${crt}" && -f "${ext}" && "$(<"${ext}")" == "${want}" ]] &&
		openssl x509 -noout -checkend "${KUBE_CERT_RENEW_S}" -in "${crt}" >/dev/null &&
		openssl verify -CAfile "${ca}.crt" "${crt}" >/dev/null 2>&1; then
		return 0
	fi
	log "kube: making the ${name} certificate (${subject})"
	printf '%s\n' "${want}" >"${ext}"
	[[ -s "${key}" ]] || kube_new_key "${key}"
	openssl req -new -key "${key}" -subj "${subject}" -out "${KUBE_PKI_DIR}/${name}.csr" 2>/dev/null ||
		die "kube: openssl req (${name}) failed"
	openssl x509 -req -in "${KUBE_PKI_DIR}/${name}.csr" -CA "${ca}.crt" -CAkey "${ca}.key" \
		-set_serial "0x$(openssl rand -hex 16)" -sha256 -days "${KUBE_CERT_DAYS}" \
		-extfile "${ext}" -out "${crt}" 2>/dev/null || die "kube: openssl x509 (${name}) failed"
	rm -f "${KUBE_PKI_DIR}/${name}.csr"
}

# kube_sa_keys: the key pair that signs and checks service-account tokens.
kube_sa_keys() {
	if [[ -s "${KUBE_SA_KEY}" && -s "${KUBE_SA_PUB}" ]]; then
		return 0
	fi
	log "kube: making the service-account signing key"
	(umask 077 && openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "${KUBE_SA_KEY}" 2>/dev/null)
	openssl pkey -in "${KUBE_SA_KEY}" -pubout -out "${KUBE_SA_PUB}"
}

# kube_kubeconfig NAME USER: ${KUBE_DIR}/NAME.kubeconfig for the NAME
# client certificate, with everything inline (the file stands alone).
# Written only when its content changes.
kube_kubeconfig() {
	local name="$1" user="$2" file="${KUBE_DIR}/$1.kubeconfig" content
	content="apiVersion: v1
kind: Config
clusters:
- name: sluice-rig
  cluster:
    server: ${KUBE_SERVER}
    certificate-authority-data: $(base64 -w0 "${KUBE_CA_CERT}")
users:
- name: ${user}
  user:
    client-certificate-data: $(base64 -w0 "${KUBE_PKI_DIR}/${name}.crt")
    client-key-data: $(base64 -w0 "${KUBE_PKI_DIR}/${name}.key")
contexts:
- name: ${user}@sluice-rig
  context:
    cluster: sluice-rig
    user: ${user}
current-context: ${user}@sluice-rig"
	if [[ -f "${file}" ]] && [[ "$(<"${file}")" == "${content}" ]]; then
		return 0
	fi
	(umask 077 && printf '%s\n' "${content}" >"${file}.tmp")
	mv -f "${file}.tmp" "${file}"
}

# kube_pki_up makes whatever is missing or stale.
kube_pki_up() {
	install -d -m 0755 "${KUBE_DIR}"
	# keys are 0600; the certificates (the CA for clients) readable by all
	install -d -m 0755 "${KUBE_PKI_DIR}"
	kube_ca_up ca sluice-rig-ca
	kube_sa_keys
	kube_cert ca apiserver /CN=kube-apiserver serverAuth "${KUBE_APISERVER_SANS[@]}"
	# what the API server shows a kubelet (logs, exec): an admin identity
	kube_cert ca apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
	kube_cert ca admin "/O=system:masters/CN=kubernetes-admin" clientAuth
	kube_cert ca controller-manager /CN=system:kube-controller-manager clientAuth
	kube_cert ca scheduler /CN=system:kube-scheduler clientAuth
	# the aggregation layer (request-header authentication): the API server
	# proxies as front-proxy-client, and publishes this CA for the
	# controller manager and the scheduler to check such requests with
	kube_ca_up front-proxy-ca sluice-rig-front-proxy-ca
	kube_cert front-proxy-ca front-proxy-client /CN=front-proxy-client clientAuth
	kube_kubeconfig admin kubernetes-admin
	kube_kubeconfig controller-manager system:kube-controller-manager
	kube_kubeconfig scheduler system:kube-scheduler
}
