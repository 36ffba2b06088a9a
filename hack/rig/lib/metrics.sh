#!/usr/bin/env bash
# shellcheck disable=SC2034 # constants read by the other files
# metrics-server (built from its Go module by hack/tools/build.sh), started
# with the node: it scrapes every node's kubelet API (/metrics/resource),
# the virtual nodes of sluice-vk included, and serves metrics.k8s.io
# through the API server's aggregation layer (the requestheader and
# proxy-client flags of lib/kube.sh), which `kubectl top` reads.
#
# It runs on the host, not as a pod: the e2e tests' virtual nodes listen on
# the host's loopback (Node.InternalIP 127.0.0.1), which no pod reaches. The
# API server reaches it through the selectorless Service
# kube-system/metrics-server, whose EndpointSlice names METRICS_ADDR.
#
# Kubelet TLS is verified against the rig CA (--kubelet-certificate-authority),
# as the API server does: the rig's kubelet serves a certificate of the rig
# CA (lib/node.sh), and sluice-vk one the controller manager signed with it
# (Node.KubeletAPI.Certificate: csr, approved by the e2e tests). A virtual
# node whose request waits, or that serves a self-signed certificate, is
# not scraped. metrics-server also proves who it is to each kubelet (its
# client certificate) and is authorised there (nodes/metrics).
set -euo pipefail

METRICS_PORT=4443
METRICS_ADDR="${EXT_ADDR}"
# how often it scrapes: its shortest resolution, sluice-vk's
# Node.StatsInterval default
METRICS_RESOLUTION=10s
METRICS_APISERVICE=/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.metrics.k8s.io
METRICS_BIN=

# metrics_prepare builds the binary when it is missing (cold: minutes) and
# makes its client and serving certificates and its kubeconfig.
metrics_prepare() {
	[[ -z "${METRICS_BIN}" ]] || return 0
	METRICS_BIN="$("${KUBE_BUILD}" metrics-server)" || die "metrics-server: hack/tools/build.sh failed"
	kube_cert ca metrics-server-client /CN=system:metrics-server clientAuth
	kube_cert ca metrics-server /CN=metrics-server serverAuth \
		DNS:metrics-server.kube-system.svc DNS:metrics-server.kube-system "IP:${METRICS_ADDR}"
	kube_kubeconfig metrics-server-client system:metrics-server
}

# metrics_args: its command line, one word per line.
metrics_args() {
	local kc="${KUBE_DIR}/metrics-server-client.kubeconfig"
	printf '%s\n' "${METRICS_BIN}" \
		--bind-address="${METRICS_ADDR}" --secure-port="${METRICS_PORT}" \
		--tls-cert-file="${KUBE_PKI_DIR}/metrics-server.crt" \
		--tls-private-key-file="${KUBE_PKI_DIR}/metrics-server.key" \
		--kubeconfig="${kc}" --authentication-kubeconfig="${kc}" --authorization-kubeconfig="${kc}" \
		--kubelet-preferred-address-types=InternalIP --kubelet-use-node-status-port \
		--kubelet-certificate-authority="${KUBE_CA_CERT}" --metric-resolution="${METRICS_RESOLUTION}" --kubelet-request-timeout=5s \
		--profiling=false
}

metrics_fingerprint() { command_fingerprint metrics_args metrics-server; }

# metrics_objects: API_PATH TEMPLATE pairs, applied in order.
metrics_objects() {
	local core=/api/v1 rbac=/apis/rbac.authorization.k8s.io/v1
	cat <<OBJECTS
${rbac}/clusterroles/system:metrics-server metrics-server-clusterrole.yaml
${rbac}/clusterrolebindings/system:metrics-server metrics-server-clusterrolebinding.yaml
${rbac}/clusterrolebindings/metrics-server:system:auth-delegator metrics-server-auth-delegator.yaml
${rbac}/namespaces/kube-system/rolebindings/metrics-server-auth-reader metrics-server-auth-reader.yaml
${core}/namespaces/kube-system/services/metrics-server metrics-server-service.yaml
/apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices/metrics-server-host metrics-server-endpointslice.yaml.in
${METRICS_APISERVICE} metrics-server-apiservice.yaml.in
OBJECTS
}

# metrics_start applies its objects and starts it (lib/services.sh).
metrics_start() {
	metrics_prepare
	local dir="${RIG_DIR}/metrics" api_path template out args=()
	install -d -m 0755 "${dir}"
	while read -r api_path template; do
		out="${dir}/${template%.in}"
		render "${CLUSTER_CONF_DIR}/${template}" "${out}" 0644 \
			ADDR="${METRICS_ADDR}" PORT="${METRICS_PORT}" CA_BUNDLE="$(base64 -w0 "${KUBE_CA_CERT}")" || true
		kube_api_apply "${api_path}" "${out}" || die "metrics-server: cannot apply ${template} at ${api_path}"
	done < <(metrics_objects)
	mapfile -t args < <(metrics_args)
	metrics_fingerprint >"$(kube_fingerprint_file metrics-server)"
	spawn metrics-server metrics-server "${args[@]}"
}

# metrics_available: the API server reports metrics.k8s.io Available (it
# reached metrics-server, which has scraped the nodes once).
metrics_available() {
	kube_api_get "${METRICS_APISERVICE}" 2>/dev/null | tr -d ' \n' |
		grep -q '"type":"Available","status":"True"'
}

# metrics_up (re)starts metrics-server when it is not running or its
# binary, flags or certificates changed, and waits until metrics.k8s.io is
# available. Called by node_up once the node is Ready.
metrics_up() {
	local start=${SECONDS} file
	metrics_prepare
	file="$(kube_fingerprint_file metrics-server)"
	if service_pid metrics-server >/dev/null &&
		! { [[ -f "${file}" ]] && [[ "$(<"${file}")" == "$(metrics_fingerprint)" ]]; }; then
		log "metrics-server: binary, flags or certificates changed"
		service_stop metrics-server
	fi
	service_start metrics-server
	wait_until 90 "metrics.k8s.io to be available" metrics_available ||
		{ tail_log metrics-server; die "metrics-server: metrics.k8s.io is not available"; }
	log "metrics-server: metrics.k8s.io available in $((SECONDS - start))s (scraping every ${METRICS_RESOLUTION})"
}

# metrics_stop withdraws metrics.k8s.io before metrics-server stops: an
# aggregated API that does not answer fails discovery, and with it the
# deletion of every namespace.
metrics_stop() {
	curl -sS --max-time 10 --cacert "${KUBE_CA_CERT}" \
		--cert "${KUBE_PKI_DIR}/admin.crt" --key "${KUBE_PKI_DIR}/admin.key" \
		-X DELETE "${KUBE_SERVER}${METRICS_APISERVICE}" >/dev/null 2>&1 || true
}
