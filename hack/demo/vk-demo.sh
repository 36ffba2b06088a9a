#!/usr/bin/env bash
# The demo behind `make demo`: sluice-vk on the local rig, end to end. It
# starts the virtual kubelet against the rig's API server, offloads
# hack/demo/pod.yaml to Slurm through it, and shows what kubectl shows.
set -euo pipefail
cd "$(dirname "$0")/../.."

rig_env="${SLUICE_RIG_DIR:-/var/lib/sluice-rig}/rig.env"
[[ -r "${rig_env}" ]] || { echo "demo: no ${rig_env}: run hack/rig/rig.sh up" >&2; exit 1; }
set -a
# shellcheck source=/dev/null
. "${rig_env}"
set +a
# The rig's own kubectl, built once at the control plane's release (a
# kubectl on the PATH may be outside the version skew).
kubectl_bin="$("$(dirname "$0")/../tools/build.sh" kubectl)" || { echo "demo: cannot build kubectl" >&2; exit 1; }

node=hpc-rig
work="$(mktemp -d)"
k() { "${kubectl_bin}" --kubeconfig "${RIG_KUBECONFIG}" "$@"; }
step() { printf '\n==> %s\n' "$*"; }

vk_pid=
cleanup() {
	k delete pod hello-hpc -n demo --ignore-not-found --wait=true --timeout=60s >/dev/null 2>&1 || true
	if [[ -n "${vk_pid}" ]]; then
		kill "${vk_pid}" 2>/dev/null || true
		wait "${vk_pid}" 2>/dev/null || true
	fi
	k delete node "${node}" --ignore-not-found >/dev/null 2>&1 || true
	rm -rf "${work}"
}
trap cleanup EXIT

step "build sluice-vk"
go build -o "${work}/sluice-vk" ./cmd/sluice-vk

cat >"${work}/sluice.yaml" <<YAML
NodeName: ${node}
Site:
  Access: ssh
  DataRoot: ${RIG_DATA_ROOT}
  SocketDirRoot: ${RIG_SOCKET_DIR_ROOT}
  ContainerRuntime: charliecloud
  PollInterval: 1s
Network:
  SSH:
    LoginHost: ${RIG_LOGIN_ADDR}
    Port: ${RIG_LOGIN_PORT}
    User: ${RIG_USER}
    KeyFile: ${RIG_KEY}
    KnownHostsFile: ${RIG_KNOWN_HOSTS}
Node:
  InternalIP: 127.0.0.1
  KubeletAPI:
    Listen: 127.0.0.1:0
YAML

step "start sluice-vk as node ${node} (log: ${work}/vk.log)"
"${work}/sluice-vk" --config "${work}/sluice.yaml" --kubeconfig "${RIG_KUBECONFIG}" >"${work}/vk.log" 2>&1 &
vk_pid=$!
for _ in $(seq 60); do
	k get node "${node}" >/dev/null 2>&1 && break
	kill -0 "${vk_pid}" 2>/dev/null || { tail -20 "${work}/vk.log" >&2; exit 1; }
	sleep 1
done
if ! k wait --for=condition=Ready "node/${node}" --timeout=60s; then
	tail -20 "${work}/vk.log" >&2
	exit 1
fi
k get node "${node}" -o wide

step "offload the demo pod"
k create namespace demo --dry-run=client -o yaml | k apply -f - >/dev/null
sed "s#image: IMAGE#image: ${RIG_IMAGE}#" hack/demo/pod.yaml | k apply -f -
k wait --for=jsonpath='{.status.phase}'=Running pod/hello-hpc -n demo --timeout=120s || true
step "kubectl logs -f hello-hpc -c main (while the job runs)"
k logs -f hello-hpc -n demo -c main || true
if ! k wait --for=jsonpath='{.status.phase}'=Succeeded pod/hello-hpc -n demo --timeout=120s; then
	k describe pod hello-hpc -n demo
	tail -20 "${work}/vk.log" >&2
	exit 1
fi

step "kubectl get pod -o wide"
k get pod hello-hpc -n demo -o wide
step "kubectl describe pod"
k describe pod hello-hpc -n demo
step "kubectl logs (every container)"
for c in prepare main sidecar; do
	echo "--- ${c}"
	k logs hello-hpc -n demo -c "${c}" --timestamps
done
