#!/usr/bin/env bash
# The demo behind `make demo` (which brings the rig up first; run alone, it
# uses the rig as it is): sluice installed with Helm on the rig's cluster,
# a pod run as a Slurm job with both tunnels, then helm uninstall, checked
# to leave nothing behind. Each step says how long it took.
#
#   SLUICE_DEMO_SUFFIX  appended to the node, namespace and release names
#                       (default: none), so that a test can run it apart
#   SLUICE_DEMO_KEEP=1  leaves the release installed at the end (no uninstall)
set -euo pipefail
cd "$(dirname "$0")/../.."

rig_env="${SLUICE_RIG_DIR:-/var/lib/sluice-rig}/rig.env"
[[ -r "${rig_env}" ]] || { echo "demo: no ${rig_env}: run hack/rig/rig.sh up" >&2; exit 1; }
set -a
# shellcheck source=/dev/null
. "${rig_env}"
set +a
[[ -n "${RIG_K8S_NODE:-}" ]] || { echo "demo: the rig has no real node (RIG_K8S_NODE): run hack/rig/rig.sh up" >&2; exit 1; }

sfx="${SLUICE_DEMO_SUFFIX:-}"
node="hpc-demo${sfx}"     # the virtual node
tenant="demo${sfx}"       # where the pods, shadows and their credentials live
system="sluice-demo${sfx}" # where sluice-vk runs
release="sluice"
version="v0.0.0-demo"
work="$(mktemp -d)"

# step NAME: ends the step that runs (printing its time) and starts NAME.
times=()
step_name=
step_start=
step() {
	end_step
	step_name="$*"
	step_start=$(date +%s%N)
	printf '\n==> %s\n' "${step_name}"
}
end_step() {
	[[ -n "${step_name}" ]] || return 0
	local ms=$((($(date +%s%N) - step_start) / 1000000))
	times+=("$(printf '%6d.%01d s  %s' $((ms / 1000)) $((ms % 1000 / 100)) "${step_name}")")
	printf -- '--- %d.%01d s\n' $((ms / 1000)) $((ms % 1000 / 100))
	step_name=
}
fail() {
	echo "demo: $*" >&2
	exit 1
}

[[ -n "${RIG_REGISTRY:-}" ]] || { echo "demo: the rig has no registry (RIG_REGISTRY): run hack/rig/rig.sh up" >&2; exit 1; }
registry="${RIG_REGISTRY}/sluice-demo"
chart_version="${version#v}"

step "build kubectl and helm at the rig's release (once), the sluice-vk and sluice-tunnel images and the chart; push them to the rig's registry ${RIG_REGISTRY}"
kubectl_bin="$(hack/tools/build.sh kubectl)" || fail "cannot build kubectl"
helm_bin="$(hack/tools/build.sh helm)" || fail "cannot build helm"
k() { "${kubectl_bin}" --kubeconfig "${RIG_KUBECONFIG}" "$@"; }
h() {
	KUBECONFIG="${RIG_KUBECONFIG}" HELM_CONFIG_HOME="${work}/helm" HELM_CACHE_HOME="${work}/helm" \
		HELM_DATA_HOME="${work}/helm" "${helm_bin}" "$@"
}
# the registry's password stays in files (0600), never on a command line
# the site's users could read
(
	umask 077
	mkdir -p "${work}/docker"
	printf '{"auths":{"%s":{"auth":"%s"}}}\n' "${RIG_REGISTRY}" \
		"$(printf '%s:%s' "${RIG_REGISTRY_USER}" "$(<"${RIG_REGISTRY_PASSWORD_FILE}")" | base64 -w0)" >"${work}/docker/config.json"
)
DOCKER_CONFIG="${work}/docker" go run ./hack/tools/images -out "${work}/images" -images sluice-vk,sluice-tunnel \
	-version "${version}" -push "${registry}" -push-ca "${RIG_REGISTRY_CA}" >"${work}/pushed.txt"
# pulled by digest ("NAME DIGEST FILE" lines): the node may hold an
# earlier demo's images under the same tag
digest() { awk -v n="/$1:" 'index($1, n) { print $2 }' "${work}/pushed.txt"; }
vk_digest="$(digest sluice-vk)"
tunnel_digest="$(digest sluice-tunnel)"
[[ "${vk_digest}" == sha256:* && "${tunnel_digest}" == sha256:* ]] || fail "no digests pushed: $(cat "${work}/pushed.txt")"
h registry login "${RIG_REGISTRY}" --username "${RIG_REGISTRY_USER}" --password-stdin \
	--ca-file "${RIG_REGISTRY_CA}" <"${RIG_REGISTRY_PASSWORD_FILE}"
h package charts/sluice --destination "${work}" --version "${chart_version}" --app-version "${version}"
h push "${work}/sluice-${chart_version}.tgz" "oci://${registry}/charts" --ca-file "${RIG_REGISTRY_CA}"
# site ARGS: a command on the login node, as the site account (ssh joins
# ARGS into one command line for the remote shell)
site() {
	ssh -F /dev/null -i "${RIG_KEY}" -o UserKnownHostsFile="${RIG_KNOWN_HOSTS}" -o StrictHostKeyChecking=yes \
		-o BatchMode=yes -p "${RIG_LOGIN_PORT}" "${RIG_USER}@${RIG_LOGIN_ADDR}" "$@"
}

installed=
cleanup() {
	local rc=$?
	end_step
	if [[ -n "${installed}" && -z "${SLUICE_DEMO_KEEP:-}" ]]; then
		h uninstall "${release}" -n "${system}" --wait --timeout 120s >/dev/null 2>&1 || true
	fi
	if [[ -z "${SLUICE_DEMO_KEEP:-}" ]]; then
		k delete namespace "${tenant}" "${system}" --ignore-not-found --wait=false >/dev/null 2>&1 || true
		k delete node "${node}" --ignore-not-found >/dev/null 2>&1 || true
	fi
	rm -rf "${work}"
	if ((${#times[@]})); then
		printf '\n==> time of each step\n'
		printf '%s\n' "${times[@]}"
	fi
	exit "${rc}"
}
trap cleanup EXIT

step "namespaces ${system} (sluice-vk) and ${tenant} (the pods); the site's key as a Secret of ${system} only"
if h status "${release}" -n "${system}" >/dev/null 2>&1; then
	h uninstall "${release}" -n "${system}" --wait --timeout 120s
fi
k delete node "${node}" --ignore-not-found >/dev/null
for ns in "${tenant}" "${system}"; do
	k delete namespace "${ns}" --ignore-not-found --wait=true --timeout=120s >/dev/null
	k create namespace "${ns}"
done
k -n "${system}" create secret generic site-key --from-file=ssh-privatekey="${RIG_KEY}"
# the pull Secret sluice-vk's pod and the shadows (in ${tenant}) pull with
for ns in "${system}" "${tenant}"; do
	k -n "${ns}" create secret generic regcred --type=kubernetes.io/dockerconfigjson \
		--from-file=.dockerconfigjson="${work}/docker/config.json"
done

step "helm install ${release} oci://${registry}/charts/sluice: node ${node}, confined to namespace ${tenant}, both tunnels, images pulled from ${RIG_REGISTRY}"
cat >"${work}/values.yaml" <<YAML
config:
  NodeName: ${node}
  Site:
    DataRoot: ${RIG_DATA_ROOT}
    SocketDirRoot: ${RIG_SOCKET_DIR_ROOT}
    ContainerRuntime: charliecloud
    PollInterval: 1s
  Network:
    EnableTunnel: true
    TenantNamespace: ${tenant}
    SSH:
      LoginHost: ${RIG_LOGIN_ADDR}
      Port: ${RIG_LOGIN_PORT}
      User: ${RIG_USER}
      TunnelImage: ${registry}/sluice-tunnel:${version}@${tunnel_digest}
      Reverse:
        Enabled: true
credentials:
  existingSecret: site-key
image:
  repository: ${registry}/sluice-vk
  tag: ${version}
  digest: ${vk_digest}
gateway:
  image:
    digest: ${tunnel_digest}
imagePullSecrets: [{name: regcred}]
log:
  format: text
YAML
h install "${release}" "oci://${registry}/charts/sluice" --version "${chart_version}" --ca-file "${RIG_REGISTRY_CA}" \
	-n "${system}" -f "${work}/values.yaml" \
	--set-file credentials.knownHosts="${RIG_KNOWN_HOSTS}" \
	--set-file credentials.nodeKnownHosts="${RIG_NODE_KNOWN_HOSTS}"
installed=1
k -n "${system}" rollout status "deployment/${release}" --timeout=120s
for _ in $(seq 60); do
	k get node "${node}" >/dev/null 2>&1 && break
	sleep 1
done
k wait --for=condition=Ready "node/${node}" --timeout=60s || { k -n "${system}" logs "deployment/${release}" --tail=20 >&2; fail "node ${node} not Ready"; }

step "kubectl certificate approve: the kubelet API's CertificateSigningRequest (signer kubernetes.io/kubelet-serving), asked by sluice-vk's service account"
# pending requests of the signer from a service account of ${system}: name
# signer user, and no conditions yet
pending_csr() {
	k get csr -o jsonpath='{range .items[*]}{.metadata.name} {.spec.signerName} {.spec.username} {.status.conditions}{"\n"}{end}' |
		awk -v u="system:serviceaccount:${system}:" '$2 == "kubernetes.io/kubelet-serving" && index($3, u) == 1 && NF == 3 { print $1 }'
}
csr=
for _ in $(seq 60); do
	csr="$(pending_csr | tail -n 1)"
	[[ -n "${csr}" ]] && break
	sleep 1
done
[[ -n "${csr}" ]] || fail "no CertificateSigningRequest of sluice-vk's to approve"
k certificate approve "${csr}"

step "kubectl get node -o wide (OS, kernel and runtime as the site reports them; the Slurm version as a label)"
k get node "${node}" -o wide
k get node "${node}" -L sluice.io/slurm-version

step "the pod 'mission' on ${node}: a Slurm job serving HTTP, reaching Redis and the Kubernetes API by name"
sed -e "s#NODE#${node}#" -e "s#IMAGE#${RIG_IMAGE}#" hack/demo/mission.yaml | k -n "${tenant}" apply -f -
k -n "${tenant}" wait --for=condition=sluice.io/TunnelReady pod/mission --timeout=180s ||
	{ k -n "${tenant}" describe pod mission >&2; fail "the pod's tunnels did not come up"; }
for _ in $(seq 60); do
	k -n "${tenant}" logs mission 2>/dev/null | grep -q '^tls ' && break
	sleep 1
done

step "kubectl get pod -o wide; the job in Slurm"
k -n "${tenant}" get pod mission -o wide
# the container ID is slurm://<job ID>/<container>
job=$(k -n "${tenant}" get pod mission -o jsonpath='{.status.containerStatuses[0].containerID}' | sed -n 's#^slurm://\([0-9]*\)/.*#\1#p')
uid=$(k -n "${tenant}" get pod mission -o jsonpath='{.metadata.uid}')
[[ -n "${job}" ]] || fail "the pod has no Slurm job"
echo "squeue -j ${job} on the login node:"
site "squeue -j ${job} -o '%.8i %.40j %.8T %.10M %N'"

step "kubectl describe pod (the job, its node, the tunnel condition, the Events)"
k -n "${tenant}" describe pod mission

step "a cluster pod on ${RIG_K8S_NODE} fetches /hosts from the job's HTTP server at the pod's IP (forward tunnel)"
ip=$(k -n "${tenant}" get pod mission -o jsonpath='{.status.podIP}')
k -n "${tenant}" run fetch --image="${RIG_K8S_BUSYBOX_IMAGE}" --image-pull-policy=Never --restart=Never \
	--overrides="{\"spec\":{\"nodeSelector\":{\"kubernetes.io/hostname\":\"${RIG_K8S_NODE}\"},\"automountServiceAccountToken\":false}}" \
	--command -- sh -c "for i in 1 2 3 4 5 6 7 8 9 10; do printf 'GET /hosts HTTP/1.0\r\n\r\n' | nc -w 5 ${ip} 8080 && exit 0; sleep 2; done; exit 1" >/dev/null
k -n "${tenant}" wait --for=jsonpath='{.status.phase}'=Succeeded pod/fetch --timeout=90s ||
	{ k -n "${tenant}" logs fetch >&2 || true; fail "the cluster pod could not fetch from the job"; }
echo "GET http://${ip}:8080/hosts from pod fetch:"
k -n "${tenant}" logs fetch
k -n "${tenant}" delete pod fetch --wait=false >/dev/null

step "kubectl logs mission: Redis's PONG and the Kubernetes API's version, through the reverse tunnel"
k -n "${tenant}" logs mission | tee "${work}/mission.log"
grep -q 'says +PONG' "${work}/mission.log" || fail "no PONG from Redis in the job's log"
grep -q '^tls ok: .*gitVersion' "${work}/mission.log" || fail "no verified TLS answer of the Kubernetes API in the job's log"

if [[ -n "${SLUICE_DEMO_KEEP:-}" ]]; then
	step "SLUICE_DEMO_KEEP: the release stays installed (helm uninstall ${release} -n ${system})"
	exit 0
fi

step "helm uninstall ${release}: the pre-delete hook deletes the pod (its job cancelled), stops sluice-vk, deletes the node"
h uninstall "${release}" -n "${system}" --wait --timeout 180s
installed=

step "nothing left behind"
left=0
check() { # check WHAT COUNT-COMMAND...: prints ok when the command counts 0
	local what=$1 out
	shift
	out=$("$@" 2>/dev/null || true)
	if [[ -z "${out}" ]]; then
		printf 'ok    no %s\n' "${what}"
	else
		printf 'LEFT  %s: %s\n' "${what}" "$(printf '%s' "${out}" | grep -c .)"
		printf '%s\n' "${out}" | sed 's/^/        /'
		left=1
	fi
}
for _ in $(seq 30); do # the garbage collector deletes the key's copy
	[[ -z "$(k -n "${tenant}" get secrets -l sluice.io/copy=true -o name 2>/dev/null)" ]] && break
	sleep 1
done
# the gateway's pods are a Deployment's, not objects of the release that
# helm waits for: they end after it, within their grace period
k -n "${system}" wait --for=delete pod -l app.kubernetes.io/instance="${release}" --timeout=60s >/dev/null 2>&1 || true
check "node ${node}" k get node "${node}" -o name
check "node Lease" k -n kube-node-lease get lease "${node}" -o name
check "leader Lease" k -n "${system}" get lease "sluice-vk-${node}" -o name
check "pod in ${tenant}" k -n "${tenant}" get pods -o name
check "shadow (Deployment, Service, ConfigMap) in ${tenant}" k -n "${tenant}" get deployments,services,configmaps -l sluice.io/node="${node}" -o name
check "copied credential in ${tenant}" k -n "${tenant}" get secrets,configmaps -l sluice.io/copy=true -o name
check "credential of the chart in ${tenant}" k -n "${tenant}" get secrets,configmaps -l app.kubernetes.io/instance="${release}" -o name
check "object of the release in ${system}" k -n "${system}" get all,secrets,configmaps,roles,rolebindings,serviceaccounts -l app.kubernetes.io/instance="${release}" -o name
check "ClusterRole of the release" k get clusterroles,clusterrolebindings -l app.kubernetes.io/instance="${release}" -o name
check "Slurm job ${job} pending or running" site squeue -h -j "${job}" -t PD,R,S,CG,CF
check "job directory ${RIG_DATA_ROOT}/${tenant}-${uid}" site ls -d "${RIG_DATA_ROOT}/${tenant}-${uid}"
((left == 0)) || fail "helm uninstall left something behind"
