#!/usr/bin/env bash
# shellcheck disable=SC2034 # constants read by the other files
# What a cluster has besides its nodes, applied once the rig's node is
# Ready (server-side apply, so `up` is idempotent and puts back what was
# changed): CoreDNS as a Deployment from the image hack/tools/images builds,
# with the cluster DNS Service at the kubelet's clusterDNS, and Redis (a host
# process) as the selectorless Service `redis` in default with an
# EndpointSlice of its own. The manifests are conf/cluster/*.yaml[.in].
set -euo pipefail

CLUSTER_DOMAIN=cluster.local
CLUSTER_CONF_DIR="${RIG_SRC_DIR}/conf/cluster"
CLUSTER_FIELD_MANAGER=sluice-rig

# kube_api_apply API_PATH FILE: server-side apply of the object in FILE
# (YAML) at API_PATH, as the admin.
kube_api_apply() {
	curl -sSf --max-time 10 --cacert "${KUBE_CA_CERT}" \
		--cert "${KUBE_PKI_DIR}/admin.crt" --key "${KUBE_PKI_DIR}/admin.key" \
		-X PATCH -H 'Content-Type: application/apply-patch+yaml' --data-binary "@$2" \
		"${KUBE_SERVER}$1?fieldManager=${CLUSTER_FIELD_MANAGER}&force=true" >/dev/null
}

# cluster_objects: API_PATH TEMPLATE pairs, one object a line, in the order
# they are applied.
cluster_objects() {
	local core=/api/v1 rbac=/apis/rbac.authorization.k8s.io/v1
	cat <<OBJECTS
${core}/namespaces/kube-system/serviceaccounts/coredns coredns-sa.yaml
${rbac}/clusterroles/system:coredns coredns-clusterrole.yaml
${rbac}/clusterrolebindings/system:coredns coredns-clusterrolebinding.yaml
${core}/namespaces/kube-system/configmaps/coredns coredns-configmap.yaml.in
${core}/namespaces/kube-system/services/kube-dns kube-dns-service.yaml.in
/apis/apps/v1/namespaces/kube-system/deployments/coredns coredns-deployment.yaml.in
${core}/namespaces/default/services/redis redis-service.yaml
/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/redis-external redis-endpointslice.yaml.in
OBJECTS
}

# cluster_up applies the objects and waits until CoreDNS is ready.
cluster_up() {
	local dir="${NODE_DIR}/cluster" api_path template out
	install -d -m 0755 "${dir}"
	while read -r api_path template; do
		out="${dir}/${template%.in}"
		render "${CLUSTER_CONF_DIR}/${template}" "${out}" 0644 \
			DOMAIN="${CLUSTER_DOMAIN}" IMAGE="${NODE_COREDNS_IMAGE}" \
			CLUSTER_DNS="${NODE_CLUSTER_DNS}" \
			ADDR="${REDIS_EXT_ADDR%%:*}" PORT="${REDIS_EXT_ADDR##*:}" || true
		kube_api_apply "${api_path}" "${out}" || die "cluster: cannot apply ${template} at ${api_path}"
	done < <(cluster_objects)
	wait_until 120 "CoreDNS to be ready" coredns_ready ||
		die "cluster: CoreDNS is not ready (kubectl -n kube-system describe deployment coredns)"
	log "cluster: DNS ${NODE_CLUSTER_DNS} (${CLUSTER_DOMAIN}), redis.default -> ${REDIS_EXT_ADDR}"
}

# coredns_ready: the Deployment's pod is ready (the kubernetes plugin has
# synced with the API server: the ready plugin says so).
coredns_ready() {
	local d
	d="$(kube_api_get /apis/apps/v1/namespaces/kube-system/deployments/coredns 2>/dev/null)" || return 1
	[[ "$(tr -d ' \n' <<<"${d}")" == *'"readyReplicas":1'* ]]
}
