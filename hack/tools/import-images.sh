#!/usr/bin/env bash
# import-images.sh VERSION NAME...: builds the images NAME (sluice-vk,
# sluice-tunnel) stamped VERSION with hack/tools/images, as `make images`
# does, and imports them into the rig node's containerd, where the rig's
# pods run them without pulling (ghcr.io/sluice-hpc/NAME:VERSION). The
# e2e tests and the demo use it. The socket is RIG_K8S_CONTAINERD_SOCK,
# else the one of the rig's rig.env.
set -euo pipefail
cd "$(dirname "$0")/../.."

[[ $# -ge 2 ]] || { echo "usage: import-images.sh VERSION NAME..." >&2; exit 2; }
version=$1
shift
if [[ -z "${RIG_K8S_CONTAINERD_SOCK:-}" ]]; then
	rig_env="${SLUICE_RIG_DIR:-/var/lib/sluice-rig}/rig.env"
	RIG_K8S_CONTAINERD_SOCK=$(sed -n 's/^RIG_K8S_CONTAINERD_SOCK=//p' "${rig_env}" 2>/dev/null || true)
	[[ -n "${RIG_K8S_CONTAINERD_SOCK}" ]] || { echo "import-images: the rig has no node (no RIG_K8S_CONTAINERD_SOCK in ${rig_env})" >&2; exit 1; }
fi
dir=$(mktemp -d)
trap 'rm -rf "${dir}"' EXIT
names=$(IFS=,; printf '%s' "$*")
go run ./hack/tools/images -out "${dir}" -images "${names}" -version "${version}" >/dev/null
for name in "$@"; do
	ctr --address "${RIG_K8S_CONTAINERD_SOCK}" --namespace k8s.io images import "${dir}/${name}.tar" >/dev/null
done
