#!/usr/bin/env bash
# The two network namespaces and their links:
#   host (the cluster) 10.251.1.1 <-veth-> 10.251.1.2 sluice-login
#   sluice-login       10.251.2.1 <-veth-> 10.251.2.2 sluice-node
# No forwarding, no default routes: the host reaches the login node only, and
# the node is reached only from the login node. The host's loopback device
# holds EXT_ADDR too, the address of the cluster's external services, which
# neither namespace can route to.
set -euo pipefail

netns_exists() { [[ -e "/run/netns/$1" ]]; }

link_exists() {
	local ns="$1" dev="$2"
	if [[ -z "${ns}" ]]; then
		ip link show dev "${dev}" >/dev/null 2>&1
	else
		ip -n "${ns}" link show dev "${dev}" >/dev/null 2>&1
	fi
}

# ns_ip NS ARGS...: ip in namespace NS, or in the host's when NS is empty.
ns_ip() {
	local ns="$1"
	shift
	if [[ -z "${ns}" ]]; then
		ip "$@"
	else
		ip -n "${ns}" "$@"
	fi
}

# veth_up NS_A DEV_A ADDR_A NS_B DEV_B ADDR_B: a veth pair between two
# namespaces ("" is the host's), each end with its /24 address, up.
veth_up() {
	local ns_a="$1" dev_a="$2" addr_a="$3" ns_b="$4" dev_b="$5" addr_b="$6"
	if ! link_exists "${ns_a}" "${dev_a}"; then
		ns_ip "${ns_a}" link add "${dev_a}" type veth peer name "${dev_b}" netns "${ns_b:-1}"
	fi
	ns_ip "${ns_a}" addr replace "${addr_a}/24" dev "${dev_a}"
	ns_ip "${ns_a}" link set "${dev_a}" up
	ns_ip "${ns_b}" addr replace "${addr_b}/24" dev "${dev_b}"
	ns_ip "${ns_b}" link set "${dev_b}" up
}

net_up() {
	local ns
	for ns in "${NS_LOGIN}" "${NS_NODE}"; do
		netns_exists "${ns}" || ip netns add "${ns}"
		ip -n "${ns}" link set lo up
		# a netns starts with forwarding off; keep it so
		in_netns_sysctl "${ns}" net.ipv4.ip_forward=0
	done
	# The compute node lets users bind ports below 1024 (a site's choice:
	# without it a job's relay cannot listen on 443 for
	# kubernetes.default.svc.cluster.local:443, and the pod maps the port
	# instead, 8443:kubernetes.default.svc.cluster.local:443).
	in_netns_sysctl "${NS_NODE}" net.ipv4.ip_unprivileged_port_start=0

	veth_up "" "${VETH_HOST}" "${HOST_ADDR}" "${NS_LOGIN}" "${VETH_LOGIN_UP}" "${LOGIN_ADDR}"
	veth_up "${NS_LOGIN}" "${VETH_LOGIN_DOWN}" "${LOGIN_NODE_SIDE_ADDR}" "${NS_NODE}" "${VETH_NODE}" "${NODE_ADDR}"

	ip addr replace "${EXT_ADDR}/32" dev lo

	# The host has a default route: without this, packets for the node's
	# network would leave through it. Unreachable fails them locally.
	ip route replace unreachable "${NODE_NET}"
	log "network: ${NS_LOGIN} ${LOGIN_ADDR}, ${NS_NODE} ${NODE_ADDR} (host ${HOST_ADDR}, services ${EXT_ADDR})"
}

in_netns_sysctl() {
	local ns="$1" setting="$2"
	nsenter --net="/run/netns/${ns}" -- sysctl -q -w "${setting}" >/dev/null
}

# netns_pids: every process in the rig's namespaces (daemons, sessions, jobs).
netns_pids() {
	local ns
	for ns in "${NS_LOGIN}" "${NS_NODE}"; do
		netns_exists "${ns}" && ip netns pids "${ns}"
	done
	return 0
}

net_down() {
	local pids=()
	mapfile -t pids < <(netns_pids)
	if ((${#pids[@]} > 0)); then
		log "network: stopping ${#pids[@]} leftover process(es) in the namespaces"
		kill_pids 3 "${pids[@]}"
	fi
	ip route del unreachable "${NODE_NET}" 2>/dev/null || true
	local ns
	for ns in "${NS_NODE}" "${NS_LOGIN}"; do
		if netns_exists "${ns}"; then
			ip netns del "${ns}"
		fi
	done
	# deleting the login namespace removes the pair; make sure
	if link_exists "" "${VETH_HOST}"; then
		ip link del "${VETH_HOST}"
	fi
	ip addr del "${EXT_ADDR}/32" dev lo 2>/dev/null || true
	log "network: down"
}

# net_ok: true when both namespaces and their addresses are in place.
# (Output is captured, not piped to grep -q: under pipefail, ip dying of
# SIGPIPE would read as failure.)
net_ok() {
	netns_exists "${NS_LOGIN}" && netns_exists "${NS_NODE}" || return 1
	local host login node ext
	host="$(ip -o addr show dev "${VETH_HOST}" 2>/dev/null)" || return 1
	ext="$(ip -o addr show dev lo 2>/dev/null)" || return 1
	login="$(ip -n "${NS_LOGIN}" -o addr show 2>/dev/null)" || return 1
	node="$(ip -n "${NS_NODE}" -o addr show 2>/dev/null)" || return 1
	[[ "${host}" == *" ${HOST_ADDR}/24 "* ]] &&
		[[ "${ext}" == *" ${EXT_ADDR}/32 "* ]] &&
		[[ "${login}" == *" ${LOGIN_ADDR}/24 "* ]] &&
		[[ "${login}" == *" ${LOGIN_NODE_SIDE_ADDR}/24 "* ]] &&
		[[ "${node}" == *" ${NODE_ADDR}/24 "* ]]
}
