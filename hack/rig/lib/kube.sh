#!/usr/bin/env bash
# shellcheck disable=SC2034 # constants read by the other files
# The cluster's control plane, in the host namespace: etcd,
# kube-apiserver, kube-controller-manager and kube-scheduler, built from
# their Go modules by hack/tools/build.sh (one `kube` binary with
# subcommands, and `etcd`). The API server listens on EXT_ADDR only (not
# on an address the site's namespaces can reach) and advertises it: the
# endpoint of the `kubernetes` Service that the node's pods reach through
# kube-proxy (lib/node.sh).
set -euo pipefail

KUBE_DIR="${RIG_DIR}/kube"
KUBE_PORT=6443
KUBE_SERVER="https://${EXT_ADDR}:${KUBE_PORT}"
KUBE_SERVICE_CIDR=10.96.0.0/16
KUBE_SERVICE_IP=10.96.0.1
KUBE_ISSUER=https://kubernetes.default.svc.cluster.local
KUBE_CONTROLLER_MANAGER_PORT=10257
KUBE_SCHEDULER_PORT=10259
ETCD_CLIENT_URL=http://127.0.0.1:2379
ETCD_PEER_URL=http://127.0.0.1:2380
KUBE_BUILD="${RIG_SRC_DIR}/../tools/build.sh"
# the services, in start order (lib/services.sh starts them after the rest)
KUBE_SERVICES=(etcd kube-apiserver kube-controller-manager kube-scheduler)

# KUBE_BIN, ETCD_BIN: set by kube_prepare.
KUBE_BIN=
ETCD_BIN=
KUBE_PREPARED=no

# kube_prepare builds the binaries when they are missing (the first time on
# a machine: 15-30 minutes) and makes the keys, certificates and kubeconfigs.
kube_prepare() {
	[[ "${KUBE_PREPARED}" == no ]] || return 0
	local paths
	[[ -x "$("${KUBE_BUILD}" path kube)" && -x "$("${KUBE_BUILD}" path etcd)" ]] ||
		log "kube: building the control plane and etcd (hack/tools/build.sh; cold: 15-30 minutes)"
	paths="$("${KUBE_BUILD}" kube etcd)" || die "kube: hack/tools/build.sh failed"
	KUBE_BIN="$(sed -n 1p <<<"${paths}")"
	ETCD_BIN="$(sed -n 2p <<<"${paths}")"
	kube_pki_up
	KUBE_PREPARED=yes
}

# kube_args SERVICE: the service's command line, one word per line.
kube_args() {
	local pki="${KUBE_PKI_DIR}"
	case "$1" in
	etcd)
		printf '%s\n' "${ETCD_BIN}" --name=rig --data-dir="${KUBE_DIR}/etcd" \
			--listen-client-urls="${ETCD_CLIENT_URL}" --advertise-client-urls="${ETCD_CLIENT_URL}" \
			--listen-peer-urls="${ETCD_PEER_URL}" --initial-advertise-peer-urls="${ETCD_PEER_URL}" \
			--initial-cluster="rig=${ETCD_PEER_URL}" --initial-cluster-state=new \
			--log-level=warn
		;;
	kube-apiserver)
		printf '%s\n' "${KUBE_BIN}" apiserver \
			--bind-address="${EXT_ADDR}" --advertise-address="${EXT_ADDR}" --secure-port="${KUBE_PORT}" \
			--etcd-servers="${ETCD_CLIENT_URL}" \
			--service-cluster-ip-range="${KUBE_SERVICE_CIDR}" \
			--tls-cert-file="${pki}/apiserver.crt" --tls-private-key-file="${pki}/apiserver.key" \
			--client-ca-file="${KUBE_CA_CERT}" \
			--kubelet-client-certificate="${pki}/apiserver-kubelet-client.crt" \
			--kubelet-client-key="${pki}/apiserver-kubelet-client.key" \
			--kubelet-certificate-authority="${KUBE_CA_CERT}" \
			--service-account-issuer="${KUBE_ISSUER}" \
			--service-account-key-file="${KUBE_SA_PUB}" \
			--service-account-signing-key-file="${KUBE_SA_KEY}" \
			--authorization-mode=Node,RBAC \
			--kubelet-preferred-address-types=InternalIP,Hostname \
			--enable-admission-plugins=NodeRestriction \
			--requestheader-client-ca-file="${KUBE_FRONT_PROXY_CA_CERT}" \
			--requestheader-allowed-names=front-proxy-client \
			--requestheader-username-headers=X-Remote-User \
			--requestheader-group-headers=X-Remote-Group \
			--requestheader-extra-headers-prefix=X-Remote-Extra- \
			--proxy-client-cert-file="${pki}/front-proxy-client.crt" \
			--proxy-client-key-file="${pki}/front-proxy-client.key" \
			--allow-privileged=true --profiling=false \
			--shutdown-send-retry-after=true
		# (without the last, TERM waits 60 s for open watches to end)
		;;
	kube-controller-manager)
		printf '%s\n' "${KUBE_BIN}" controller-manager \
			--bind-address=127.0.0.1 --secure-port="${KUBE_CONTROLLER_MANAGER_PORT}" \
			--kubeconfig="${KUBE_DIR}/controller-manager.kubeconfig" \
			--authentication-kubeconfig="${KUBE_DIR}/controller-manager.kubeconfig" \
			--authorization-kubeconfig="${KUBE_DIR}/controller-manager.kubeconfig" \
			--use-service-account-credentials=true \
			--root-ca-file="${KUBE_CA_CERT}" \
			--service-account-private-key-file="${KUBE_SA_KEY}" \
			--cluster-signing-cert-file="${KUBE_CA_CERT}" --cluster-signing-key-file="${KUBE_CA_KEY}" \
			--cluster-name="${CLUSTER_NAME}" --service-cluster-ip-range="${KUBE_SERVICE_CIDR}" \
			--leader-elect=false --profiling=false
		;;
	kube-scheduler)
		printf '%s\n' "${KUBE_BIN}" scheduler \
			--bind-address=127.0.0.1 --secure-port="${KUBE_SCHEDULER_PORT}" \
			--kubeconfig="${KUBE_DIR}/scheduler.kubeconfig" \
			--authentication-kubeconfig="${KUBE_DIR}/scheduler.kubeconfig" \
			--authorization-kubeconfig="${KUBE_DIR}/scheduler.kubeconfig" \
			--leader-elect=false --profiling=false
		;;
	esac
}

# command_fingerprint ARGS_FN SERVICE: a hash of the command line ARGS_FN
# prints for SERVICE and of every file it names, so that a new binary, flag,
# certificate or key shows as a change.
command_fingerprint() {
	local word path
	{
		"$1" "$2"
		while IFS= read -r word; do
			path="${word#*=}"
			if [[ "${path}" != /* || ! -f "${path}" ]]; then
				continue
			fi
			# binaries (150 MB) by identity, the rest by content
			if [[ -x "${path}" ]]; then
				stat -c '%n %s %y %i' "${path}"
			else
				sha256sum "${path}"
			fi
		done < <("$1" "$2")
	} | sha256sum | cut -d' ' -f1
}

# kube_fingerprint SERVICE: the fingerprint of a control-plane service.
kube_fingerprint() { command_fingerprint kube_args "$1"; }

kube_fingerprint_file() { printf '%s/%s.fingerprint' "${RIG_RUN_DIR}" "$1"; }

# kube_start SERVICE: starts it and waits until it is healthy.
kube_start() {
	local svc="$1" args=()
	kube_prepare
	mapfile -t args < <(kube_args "${svc}")
	kube_fingerprint "${svc}" >"$(kube_fingerprint_file "${svc}")"
	case "${svc}" in
	etcd)
		install -d -m 0700 "${KUBE_DIR}/etcd"
		spawn etcd etcd "${args[@]}"
		wait_until 60 "etcd to be healthy" etcd_healthy || { tail_log etcd; die "etcd is not healthy"; }
		;;
	kube-apiserver)
		spawn "${svc}" kube "${args[@]}"
		wait_until 120 "the API server to be ready" kube_api_ready || {
			tail_log "${svc}"
			die "the API server is not ready: $(kube_api_readyz_failures)"
		}
		;;
	kube-controller-manager)
		spawn "${svc}" kube "${args[@]}"
		wait_until 60 "the controller manager to be healthy" kube_healthz "${KUBE_CONTROLLER_MANAGER_PORT}" ||
			{ tail_log "${svc}"; die "the controller manager is not healthy"; }
		;;
	kube-scheduler)
		spawn "${svc}" kube "${args[@]}"
		wait_until 60 "the scheduler to be healthy" kube_healthz "${KUBE_SCHEDULER_PORT}" ||
			{ tail_log "${svc}"; die "the scheduler is not healthy"; }
		;;
	esac
}

# kube_restart_changed stops each running control-plane service whose
# fingerprint changed since it started (services_up then starts it again).
kube_restart_changed() {
	local svc file
	for svc in "${KUBE_SERVICES[@]}"; do
		service_pid "${svc}" >/dev/null || continue
		file="$(kube_fingerprint_file "${svc}")"
		if [[ -f "${file}" ]] && [[ "$(<"${file}")" == "$(kube_fingerprint "${svc}")" ]]; then
			continue
		fi
		log "${svc}: binary, flags or certificates changed"
		service_stop "${svc}"
	done
}

etcd_healthy() {
	curl -sf --max-time 2 "${ETCD_CLIENT_URL}/health" | grep -q '"health":"true"'
}

# kube_api_get PATH: GET on the API server as the admin.
kube_api_get() {
	curl -sSf --max-time 5 --cacert "${KUBE_CA_CERT}" \
		--cert "${KUBE_PKI_DIR}/admin.crt" --key "${KUBE_PKI_DIR}/admin.key" "${KUBE_SERVER}$1"
}

# kube_api_readyz_failures: the checks /readyz reports as failing.
kube_api_readyz_failures() {
	curl -sS --max-time 5 --cacert "${KUBE_CA_CERT}" \
		--cert "${KUBE_PKI_DIR}/admin.crt" --key "${KUBE_PKI_DIR}/admin.key" \
		"${KUBE_SERVER}/readyz?verbose" 2>&1 | grep -v '^\[+\]' | tail -n 5 || true
}

kube_api_ready() {
	[[ "$(kube_api_get /readyz)" == ok ]]
}

# kube_healthz PORT: the controller manager's and the scheduler's /healthz
# (served on a self-signed certificate of their own, hence -k; loopback only).
kube_healthz() {
	[[ "$(curl -skf --max-time 2 "https://127.0.0.1:$1/healthz")" == ok ]]
}

# kube_ready waits until pods can be made: the controller manager has made
# the `default` ServiceAccount (the ServiceAccount admission plugin rejects
# pods without it).
kube_ready() {
	wait_until 120 "the default ServiceAccount" kube_api_get /api/v1/namespaces/default/serviceaccounts/default ||
		{ tail_log kube-controller-manager; die "kube: no default ServiceAccount in default"; }
	log "kube: API ready at ${KUBE_SERVER} (kubeconfig ${KUBE_DIR}/admin.kubeconfig)"
}

# kube_status prints the API's readiness line; non-zero when not ready.
kube_status() {
	if [[ -r "${KUBE_CA_CERT}" ]] && kube_api_ready >/dev/null 2>&1; then
		printf '%-23s ready (%s)\n' kube-api "${KUBE_SERVER}"
	else
		printf '%-23s not ready\n' kube-api
		return 1
	fi
}
