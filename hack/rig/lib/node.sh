#!/usr/bin/env bash
# shellcheck disable=SC2034 # constants read by the other files
# A real node in the host namespace, started by `up` (SLUICE_RIG_NODE=0
# leaves it out; `rig.sh up node` starts it alone): containerd (Debian) with its CRI plugin and
# runc, the kubelet and kube-proxy (`kube kubelet`, `kube proxy`, built by
# hack/tools/build.sh with the control plane), and a bridge CNI network
# (Debian's containernetworking-plugins). Everything of its own lives in
# ${RIG_DIR}/node; `down` stops it by PID like the rest. Once it is Ready,
# lib/cluster.sh gives the cluster its DNS and the Service of Redis, and
# lib/metrics.sh starts metrics-server.
#
# Pods leaving for the site's network are masqueraded to the host's address
# (the bridge plugin's ipMasq), as a cluster's egress is: the login node
# has no route to the pods.
set -euo pipefail

NODE_PACKAGES=(containerd runc containernetworking-plugins iptables nftables)
NODE_SERVICES=(containerd kubelet kube-proxy)
NODE_K8S_NAME=rig-node
# the taint the node carried while the e2e tests ran elsewhere; removed
NODE_OLD_TAINT_KEY=sluice.io/rig-node
NODE_DIR="${RIG_DIR}/node"
NODE_CONTAINERD_SOCK="${NODE_DIR}/run/containerd.sock"
NODE_POD_CIDR=10.251.16.0/24
NODE_BRIDGE=sluice-cni0
NODE_CNI_NET=sluice-rig
NODE_CLUSTER_DNS=10.96.0.10
NODE_KUBELET_PORT=10250
NODE_KUBELET_HEALTHZ_PORT=10248
NODE_PROXY_HEALTHZ_PORT=10256
NODE_PROXY_METRICS_PORT=10249
# nftables (iptables also works here: Debian's iptables uses nf_tables)
NODE_PROXY_MODE="${SLUICE_RIG_PROXY_MODE:-nftables}"

# node_enabled: `up` starts the node unless SLUICE_RIG_NODE=0.
node_enabled() { [[ "${SLUICE_RIG_NODE:-1}" != 0 ]]; }

# node_ctr ARGS...: ctr on the node's containerd, in the CRI's namespace.
node_ctr() { ctr --address "${NODE_CONTAINERD_SOCK}" --namespace k8s.io "$@"; }

node_packages_up() {
	local missing=() pkg
	for pkg in "${NODE_PACKAGES[@]}"; do
		package_installed "${pkg}" || missing+=("${pkg}")
	done
	((${#missing[@]} == 0)) || packages_install "${missing[@]}"
}

# node_pki_up: the kubelet's and kube-proxy's client certificates, from the
# rig CA, and their kubeconfigs (the Node authorizer knows the kubelet by
# system:node:NAME in system:nodes; kube-proxy is system:kube-proxy, bound
# to system:node-proxier by the API server's bootstrap policy); and the
# kubelet's serving certificate, from the rig CA too, for its name and
# address: the API server verifies kubelets (--kubelet-certificate-authority).
node_pki_up() {
	kube_cert ca kubelet "/O=system:nodes/CN=system:node:${NODE_K8S_NAME}" clientAuth
	kube_cert ca kubelet-serving "/O=system:nodes/CN=system:node:${NODE_K8S_NAME}" serverAuth \
		"DNS:${NODE_K8S_NAME}" "IP:${HOST_ADDR}"
	kube_cert ca kube-proxy /CN=system:kube-proxy clientAuth
	kube_kubeconfig kubelet "system:node:${NODE_K8S_NAME}"
	kube_kubeconfig kube-proxy system:kube-proxy
}

# node_conf_up writes containerd's, the CNI's, the kubelet's and
# kube-proxy's configuration. Returns nothing useful: the fingerprints
# (node_fingerprint) tell a running service that its files changed.
node_conf_up() {
	local etc="${NODE_DIR}/etc"
	install -d -m 0755 "${NODE_DIR}" "${etc}" "${etc}/cni" "${NODE_DIR}/run" "${NODE_DIR}/kubelet"
	install -d -m 0711 "${NODE_DIR}/containerd" "${NODE_DIR}/containerd-state"
	render "${RIG_SRC_DIR}/conf/containerd.toml.in" "${etc}/containerd.toml" 0644 \
		ROOT="${NODE_DIR}/containerd" STATE="${NODE_DIR}/containerd-state" \
		SOCK="${NODE_CONTAINERD_SOCK}" PAUSE_IMAGE="${NODE_PAUSE_IMAGE}" \
		CNI_CONF_DIR="${etc}/cni" CERTS_D="${REGISTRY_CERTS_D}" || true
	render "${RIG_SRC_DIR}/conf/cni.conflist.in" "${etc}/cni/10-${NODE_CNI_NET}.conflist" 0644 \
		NET="${NODE_CNI_NET}" BRIDGE="${NODE_BRIDGE}" SUBNET="${NODE_POD_CIDR}" \
		IPAM_DIR="${NODE_DIR}/ipam" || true
	# the resolv.conf pods with dnsPolicy Default get: cluster DNS only,
	# nothing of the host's (no query leaves the rig)
	printf 'nameserver %s\nsearch cluster.local\n' "${NODE_CLUSTER_DNS}" >"${etc}/resolv.conf"
	render "${RIG_SRC_DIR}/conf/kubelet.yaml.in" "${etc}/kubelet.yaml" 0644 \
		CA="${KUBE_CA_CERT}" ADDRESS="${HOST_ADDR}" PORT="${NODE_KUBELET_PORT}" \
		HEALTHZ_PORT="${NODE_KUBELET_HEALTHZ_PORT}" CLUSTER_DNS="${NODE_CLUSTER_DNS}" \
		RESOLV_CONF="${etc}/resolv.conf" SOCK="${NODE_CONTAINERD_SOCK}" \
		POD_CIDR="${NODE_POD_CIDR}" || true
	# shellcheck disable=SC2153 # KUBE_DIR is lib/kube.sh's
	render "${RIG_SRC_DIR}/conf/kube-proxy.yaml.in" "${etc}/kube-proxy.yaml" 0644 \
		KUBECONFIG="${KUBE_DIR}/kube-proxy.kubeconfig" NAME="${NODE_K8S_NAME}" \
		MODE="${NODE_PROXY_MODE}" CLUSTER_CIDR="${NODE_POD_CIDR}" \
		HEALTHZ_PORT="${NODE_PROXY_HEALTHZ_PORT}" METRICS_PORT="${NODE_PROXY_METRICS_PORT}" || true
}

# node_net_up: forwarding between the pods' bridge and the host, and
# bridged traffic through netfilter (kube-proxy's rules see pod-to-Service
# packets that stay on the bridge).
# NODE_SYSCTLS: host settings the node changes (the last three are the
# kubelet's own: it sets kernel.panic=10, kernel.panic_on_oops=1 and
# vm.overcommit_memory=1); saved before the first change, put back by down.
NODE_SYSCTLS=(net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables kernel.panic kernel.panic_on_oops vm.overcommit_memory)
NODE_SYSCTL_SAVE="${NODE_DIR}/sysctl.saved"

node_sysctls_save() {
	[[ ! -f "${NODE_SYSCTL_SAVE}" ]] || return 0
	local key value
	for key in "${NODE_SYSCTLS[@]}"; do
		value="$(sysctl -n "${key}" 2>/dev/null)" || continue
		printf '%s=%s\n' "${key}" "${value}"
	done >"${NODE_SYSCTL_SAVE}.tmp"
	mv -f "${NODE_SYSCTL_SAVE}.tmp" "${NODE_SYSCTL_SAVE}"
}

node_sysctls_restore() {
	[[ -f "${NODE_SYSCTL_SAVE}" ]] || return 0
	local setting
	while IFS= read -r setting; do
		sysctl -q -w "${setting}" >/dev/null 2>&1 || log "node: cannot put back ${setting}"
	done <"${NODE_SYSCTL_SAVE}"
	rm -f "${NODE_SYSCTL_SAVE}"
}

node_net_up() {
	node_sysctls_save
	sysctl -q -w net.ipv4.ip_forward=1 >/dev/null
	if [[ ! -e /proc/sys/net/bridge/bridge-nf-call-iptables ]]; then
		modprobe br_netfilter 2>/dev/null || true
	fi
	if [[ -e /proc/sys/net/bridge/bridge-nf-call-iptables ]]; then
		sysctl -q -w net.bridge.bridge-nf-call-iptables=1 >/dev/null
	fi
}

# node_args SERVICE: the service's command line, one word per line.
node_args() {
	local etc="${NODE_DIR}/etc"
	case "$1" in
	containerd)
		printf '%s\n' /usr/bin/containerd --config "${etc}/containerd.toml"
		;;
	kubelet)
		printf '%s\n' "${KUBE_BIN}" kubelet \
			--config="${etc}/kubelet.yaml" \
			--kubeconfig="${KUBE_DIR}/kubelet.kubeconfig" \
			--hostname-override="${NODE_K8S_NAME}" --node-ip="${HOST_ADDR}" \
			--root-dir="${NODE_DIR}/kubelet" --cert-dir="${NODE_DIR}/kubelet/pki" \
			--tls-cert-file="${KUBE_PKI_DIR}/kubelet-serving.crt" \
			--tls-private-key-file="${KUBE_PKI_DIR}/kubelet-serving.key" \
			--volume-plugin-dir="${NODE_DIR}/kubelet/volume-plugins"
		;;
	kube-proxy)
		printf '%s\n' "${KUBE_BIN}" proxy --config="${etc}/kube-proxy.yaml"
		;;
	esac
}

# node_fingerprint SERVICE: like kube_fingerprint, for the node's services,
# with the files their configuration files name (kube-proxy's kubeconfig,
# the kubelet's client CA), which the command line does not.
node_fingerprint() {
	{
		command_fingerprint node_args "$1"
		case "$1" in
		kube-proxy) sha256sum "${KUBE_DIR}/kube-proxy.kubeconfig" ;;
		kubelet) sha256sum "${KUBE_CA_CERT}" ;;
		esac
	} | sha256sum | cut -d' ' -f1
}

# node_prepare: packages, binaries, certificates, configuration.
node_prepare() {
	node_packages_up
	kube_prepare
	node_pki_up
	node_conf_up
	node_net_up
}

# node_start SERVICE: starts it and waits until it answers.
node_start() {
	local svc="$1" args=()
	node_prepare
	mapfile -t args < <(node_args "${svc}")
	node_fingerprint "${svc}" >"$(kube_fingerprint_file "${svc}")"
	case "${svc}" in
	containerd)
		spawn containerd containerd "${args[@]}"
		wait_until 30 "containerd to answer" node_ctr version ||
			{ tail_log containerd; die "containerd does not answer on ${NODE_CONTAINERD_SOCK}"; }
		node_images_up
		;;
	kubelet)
		node_pid containerd >/dev/null || die "kubelet: containerd is not running"
		spawn kubelet kube "${args[@]}"
		wait_until 60 "the kubelet to be healthy" node_healthz "${NODE_KUBELET_HEALTHZ_PORT}" ||
			{ tail_log kubelet; die "the kubelet is not healthy"; }
		;;
	kube-proxy)
		spawn kube-proxy kube "${args[@]}"
		wait_until 60 "kube-proxy to be healthy" node_healthz "${NODE_PROXY_HEALTHZ_PORT}" ||
			{ tail_log kube-proxy; die "kube-proxy is not healthy"; }
		;;
	esac
}

node_pid() { pid_of "$1" "$(svc_comm "$1")"; }

node_healthz() {
	curl -sf --max-time 2 "http://127.0.0.1:$1/healthz" >/dev/null
}

# node_ready_state: the Ready condition's status of the node ("True" when
# ready), as the API server has it.
node_ready_state() {
	kube_api_get "/api/v1/nodes/${NODE_K8S_NAME}" 2>/dev/null |
		tr -d ' \n' | grep -o '"type":"Ready","status":"[A-Za-z]*"' | cut -d'"' -f8
}

node_is_ready() { [[ "$(node_ready_state)" == True ]]; }

# node_up starts what is not running (a running service whose binary, flags
# or files changed is restarted first) and waits until the node is Ready.
node_up() {
	node_prepare
	local svc file
	for svc in "${NODE_SERVICES[@]}"; do
		node_pid "${svc}" >/dev/null || continue
		file="$(kube_fingerprint_file "${svc}")"
		if [[ -f "${file}" ]] && [[ "$(<"${file}")" == "$(node_fingerprint "${svc}")" ]]; then
			continue
		fi
		log "${svc}: binary, flags or configuration changed"
		service_stop "${svc}"
	done
	for svc in "${NODE_SERVICES[@]}"; do
		service_start "${svc}"
	done
	node_images_up
	wait_until 120 "${NODE_K8S_NAME} to be Ready" node_is_ready ||
		{ tail_log kubelet; die "node: ${NODE_K8S_NAME} is not Ready ($(node_ready_state))"; }
	node_untaint
	log "node: ${NODE_K8S_NAME} Ready (pods ${NODE_POD_CIDR}, proxy ${NODE_PROXY_MODE})"
	cluster_up
	metrics_up
}

# node_untaint removes the taint an older rig registered the node with (the
# kubelet keeps the taints of a node object that exists).
node_untaint() {
	local n
	n="$(kube_api_get "/api/v1/nodes/${NODE_K8S_NAME}" 2>/dev/null)" || return 0
	[[ "${n}" == *"\"key\": \"${NODE_OLD_TAINT_KEY}\""* || "${n}" == *"\"key\":\"${NODE_OLD_TAINT_KEY}\""* ]] || return 0
	curl -sSf --max-time 10 --cacert "${KUBE_CA_CERT}" \
		--cert "${KUBE_PKI_DIR}/admin.crt" --key "${KUBE_PKI_DIR}/admin.key" \
		-X PATCH -H 'Content-Type: application/merge-patch+json' --data '{"spec":{"taints":null}}' \
		"${KUBE_SERVER}/api/v1/nodes/${NODE_K8S_NAME}" >/dev/null || die "node: cannot remove the taint ${NODE_OLD_TAINT_KEY}"
	log "node: removed the taint ${NODE_OLD_TAINT_KEY}"
}

# node_containers_down kills every container of the node's containerd and
# removes it, so that no pod outlives `down` (the shims hold containers
# without containerd). Sandboxes' network namespaces and addresses go with
# node_net_down.
node_containers_down() {
	node_ctr version >/dev/null 2>&1 || return 0
	local ids=() id
	mapfile -t ids < <(node_ctr tasks ls -q 2>/dev/null)
	if ((${#ids[@]} > 0)); then
		log "node: killing ${#ids[@]} container(s)"
		for id in "${ids[@]}"; do
			node_ctr tasks kill -s SIGKILL "${id}" >/dev/null 2>&1 || true
		done
		for id in "${ids[@]}"; do
			wait_until 10 "container ${id} to exit" node_task_gone "${id}" || true
		done
	fi
	mapfile -t ids < <(node_ctr containers ls -q 2>/dev/null)
	for id in "${ids[@]}"; do
		node_ctr containers delete "${id}" >/dev/null 2>&1 || true
	done
}

# node_task_gone ID: the task is deleted, by us or by the CRI plugin (which
# deletes the tasks of its containers when they exit).
node_task_gone() {
	node_ctr tasks delete "$1" >/dev/null 2>&1 && return 0
	local left
	left="$(node_ctr tasks ls -q 2>/dev/null)" || return 1
	! grep -qxF -- "$1" <<<"${left}"
}

# node_shim_pids: the runc shims of the node's containerd (they name its
# socket on their command line).
node_shim_pids() {
	local dir pid
	for dir in /proc/[0-9]*; do
		pid="${dir#/proc/}"
		[[ "$(cat "${dir}/comm" 2>/dev/null)" == containerd-shim* ]] || continue
		if tr '\0' ' ' <"${dir}/cmdline" 2>/dev/null | grep -qF -- "-address ${NODE_CONTAINERD_SOCK} "; then
			printf '%s\n' "${pid}"
		fi
	done
}

# node_net_down removes what the CNI left: the sandboxes' network
# namespaces the CRI made (cni-*), the bridge, the address leases, and
# kube-proxy's rules.
node_net_down() {
	local ns
	while read -r ns _; do
		[[ "${ns}" == cni-* ]] || continue
		ip netns del "${ns}" 2>/dev/null || true
	done < <(ip netns list 2>/dev/null)
	if link_exists "" "${NODE_BRIDGE}"; then
		ip link del "${NODE_BRIDGE}"
	fi
	rm -rf "${NODE_DIR}/ipam"
	node_sysctls_restore
	if [[ -x "${KUBE_BIN:-}" && -f "${NODE_DIR}/etc/kube-proxy.yaml" ]]; then
		"${KUBE_BIN}" proxy --config="${NODE_DIR}/etc/kube-proxy.yaml" --cleanup >/dev/null 2>&1 || true
	fi
}

# node_down: kube-proxy and the kubelet first (the kubelet would start
# containers again), then every container, then containerd and its shims.
# Nothing to do on a rig whose node never ran.
node_down() {
	[[ -d "${NODE_DIR}" ]] || return 0
	service_stop metrics-server
	service_stop kube-proxy
	service_stop kubelet
	node_containers_down
	service_stop containerd
	local shims=()
	mapfile -t shims < <(node_shim_pids)
	if ((${#shims[@]} > 0)); then
		log "node: stopping ${#shims[@]} leftover shim(s)"
		kill_pids 3 "${shims[@]}"
	fi
	KUBE_BIN="$("${KUBE_BUILD}" path kube)"
	node_net_down
}

# node_status: one line per node service (and the node's readiness) when the
# node is asked for or any part of it runs; non-zero if it is not all up.
node_status() {
	local svc pid rc=0 any=no
	for svc in "${NODE_SERVICES[@]}"; do
		node_pid "${svc}" >/dev/null && any=yes
	done
	node_enabled || [[ "${any}" == yes ]] || return 0
	for svc in "${NODE_SERVICES[@]}" metrics-server; do
		if pid="$(node_pid "${svc}")"; then
			printf '%-23s running (pid %s)\n' "${svc}" "${pid}"
		else
			printf '%-23s not running\n' "${svc}"
			rc=1
		fi
	done
	if [[ -r "${KUBE_CA_CERT}" ]] && node_is_ready; then
		printf '%-23s Ready (pods %s)\n' "node ${NODE_K8S_NAME}" "${NODE_POD_CIDR}"
	else
		printf '%-23s not Ready\n' "node ${NODE_K8S_NAME}"
		rc=1
	fi
	return "${rc}"
}
