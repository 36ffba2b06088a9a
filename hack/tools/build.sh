#!/usr/bin/env bash
# build.sh: builds the rig's Kubernetes control plane, etcd, kubectl,
# CoreDNS, helm and metrics-server from their Go modules (hack/tools/kube, hack/tools/etcd, …) into a
# cache directory keyed by version, once. A binary already there that runs and reports its version is
# kept, so only the first build on a machine pays (kube: 12+ minutes cold on
# 2 cores).
#
#   build.sh [kube|etcd|kubectl|coredns|helm|metrics-server]...  build what is missing (default: kube, etcd); prints
#                             each binary's path on stdout, progress on stderr
#   build.sh path TOOL   prints the binary's path without building
#
# Cache: ${SLUICE_TOOLS_CACHE:-/var/cache/sluice}/kube-v1.37.2/kube,
#        .../etcd-v3.6.16/etcd (versions from the tools modules' go.mod).
set -euo pipefail

TOOLS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE_DIR="${SLUICE_TOOLS_CACHE:-/var/cache/sluice}"
GO="${GO:-go}"

say() { printf 'build: %s\n' "$*" >&2; }
die() {
	say "error: $*"
	exit 1
}

usage() {
	printf 'usage: build.sh [kube|etcd|kubectl|coredns|helm|metrics-server]... | build.sh path TOOL\n' >&2
	exit 2
}

# module_of TOOL: the upstream module whose version names the cache entry.
module_of() {
	case "$1" in
	kube) printf k8s.io/kubernetes ;;
	etcd) printf go.etcd.io/etcd/server/v3 ;;
	kubectl) printf k8s.io/kubectl ;;
	coredns) printf github.com/coredns/coredns ;;
	helm) printf helm.sh/helm/v4 ;;
	metrics-server) printf sigs.k8s.io/metrics-server ;;
	*) usage ;;
	esac
}

# tool_version TOOL: that module's version, as the tools module requires it.
# Read from go.mod (no module loading): the require line names it once.
tool_version() {
	local mod version
	mod="$(module_of "$1")"
	version="$(awk -v m="${mod}" '$1 == m && $2 ~ /^v/ {print $2; exit} $1 == "require" && $2 == m {print $3; exit}' \
		"${TOOLS_DIR}/$1/go.mod")"
	[[ -n "${version}" ]] || die "$1: no ${mod} in ${TOOLS_DIR}/$1/go.mod"
	printf '%s' "${version}"
}

tool_path() {
	printf '%s/%s-%s/%s' "${CACHE_DIR}" "$1" "$(tool_version "$1")" "$1"
}

# reported_version TOOL BINARY: what the binary says its version is, in the
# form of the module version (v1.37.2, v3.6.16).
reported_version() {
	case "$1" in
	kube) "$2" version 2>/dev/null ;;
	etcd) "$2" --version 2>/dev/null | awk '/^etcd Version:/ {print "v" $3}' ;;
	kubectl) "$2" version --client 2>/dev/null | awk '/^Client Version:/ {print $3}' ;;
	coredns) "$2" -version 2>/dev/null | awk -F- 'NR == 1 && $1 == "CoreDNS" {print "v" $2}' ;;
	helm) "$2" version --template '{{.Version}}' 2>/dev/null ;;
	metrics-server) "$2" --version 2>/dev/null ;;
	esac
}

# release_of TOOL: the version the binary reports. kubectl's module is a
# staging module, v0.X.Y for Kubernetes v1.X.Y.
release_of() {
	local version
	version="$(tool_version "$1")"
	if [[ "$1" == kubectl ]]; then
		version="v1.${version#v0.}"
	fi
	printf '%s' "${version}"
}

# KUBE_COMMANDS: the subcommands the kube binary must hold (`kube commands`
# prints them, sorted, on one line). A cached kube of the right version that
# lacks one (built before kubelet and proxy were added; it answers `commands`
# with an error) is built again.
KUBE_COMMANDS="apiserver controller-manager kubelet proxy scheduler"

# tool_ok TOOL BINARY: the binary is there, runs, is the wanted version and,
# for kube, holds every wanted command.
tool_ok() {
	local got
	[[ -x "$2" ]] || return 1
	got="$(reported_version "$1" "$2")" || return 1
	[[ "${got}" == "$(release_of "$1")" ]] || return 1
	if [[ "$1" == kube ]]; then
		[[ "$("$2" commands 2>/dev/null)" == "${KUBE_COMMANDS}" ]] || return 1
	fi
}

# ldflags_of TOOL: -s -w for size; kube, helm and metrics-server also get their version
# stamped in (upstream's builds do the same), else they report
# v0.0.0-master and v4.3.
ldflags_of() {
	local flags="-s -w" version major minor pkg=k8s.io/component-base/version
	if [[ "$1" == kube || "$1" == kubectl ]]; then
		version="$(release_of "$1")"
		major="${version#v}"
		major="${major%%.*}"
		minor="${version#v*.}"
		minor="${minor%%.*}"
		flags+=" -X ${pkg}.gitVersion=${version} -X ${pkg}.gitMajor=${major}"
		flags+=" -X ${pkg}.gitMinor=${minor} -X ${pkg}.gitTreeState=clean"
	fi
	if [[ "$1" == helm ]]; then
		# helm's own Makefile stamps it so; unstamped it reports v4.3
		flags+=" -X helm.sh/helm/v4/internal/version.version=$(release_of helm)"
	fi
	if [[ "$1" == metrics-server ]]; then
		# as upstream's Makefile does: --version prints client-go's gitVersion
		flags+=" -X k8s.io/client-go/pkg/version.gitVersion=$(release_of metrics-server)"
	fi
	printf '%s' "${flags}"
}

# build TOOL: builds into a temporary file beside the target and renames it,
# under a lock, so concurrent callers neither collide nor see half a binary.
build() {
	local tool="$1" target dir start
	target="$(tool_path "${tool}")"
	dir="$(dirname "${target}")"
	if tool_ok "${tool}" "${target}"; then
		printf '%s\n' "${target}"
		return 0
	fi
	install -d -m 0755 "${dir}"
	exec {lock_fd}>"${dir}/.lock"
	flock -w 3600 "${lock_fd}" || die "${tool}: another build holds ${dir}/.lock"
	if ! tool_ok "${tool}" "${target}"; then
		say "${tool} $(tool_version "${tool}"): building into ${target} (the first build takes minutes)"
		start=${SECONDS}
		rm -f "${target}.tmp"
		(
			cd "${TOOLS_DIR}/${tool}"
			CGO_ENABLED=0 GOFLAGS="-trimpath -mod=readonly -buildvcs=false" \
				nice -n 10 "${GO}" build -ldflags="$(ldflags_of "${tool}")" -o "${target}.tmp" .
		) || die "${tool}: go build failed"
		tool_ok "${tool}" "${target}.tmp" || die "${tool}: the new binary does not report $(release_of "${tool}")"
		mv -f "${target}.tmp" "${target}"
		say "${tool}: built in $((SECONDS - start))s ($(du -m "${target}" | cut -f1) MB)"
	fi
	exec {lock_fd}>&-
	printf '%s\n' "${target}"
}

main() {
	if [[ "${1:-}" == path ]]; then
		[[ $# -eq 2 ]] || usage
		module_of "$2" >/dev/null
		tool_path "$2"
		printf '\n'
		return
	fi
	local tools=("$@") tool
	((${#tools[@]} > 0)) || tools=(kube etcd)
	for tool in "${tools[@]}"; do
		module_of "${tool}" >/dev/null
	done
	for tool in "${tools[@]}"; do
		build "${tool}"
	done
}

main "$@"
