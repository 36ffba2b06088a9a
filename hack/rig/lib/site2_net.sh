#!/usr/bin/env bash
# shellcheck disable=SC2034 # constants read by the other files
# The second site's network, beside the first's and laid out the same way:
#   host (the cluster) 10.251.21.1 <-veth-> 10.251.21.2 sluice2-login
#   sluice2-login      10.251.22.1 <-veth-> 10.251.22.2 sluice2-node
# No forwarding, no default routes: the host reaches the login node only,
# the node is reached only from the login node, and the two sites never
# reach each other.
set -euo pipefail

SITE2_NS_LOGIN=sluice2-login
SITE2_NS_NODE=sluice2-node
SITE2_HOST_ADDR=10.251.21.1
SITE2_LOGIN_ADDR=10.251.21.2
SITE2_LOGIN_NODE_SIDE_ADDR=10.251.22.1
SITE2_NODE_ADDR=10.251.22.2
SITE2_NODE_NET=10.251.22.0/24
SITE2_VETH_HOST=sluice2-h0
SITE2_VETH_LOGIN_UP=sluice2-l0
SITE2_VETH_LOGIN_DOWN=sluice2-l1
SITE2_VETH_NODE=sluice2-n0

in_site2_login() { nsenter --net="/run/netns/${SITE2_NS_LOGIN}" -- "$@"; }

site2_net_up() {
	local ns
	for ns in "${SITE2_NS_LOGIN}" "${SITE2_NS_NODE}"; do
		netns_exists "${ns}" || ip netns add "${ns}"
		ip -n "${ns}" link set lo up
		in_netns_sysctl "${ns}" net.ipv4.ip_forward=0
	done
	# as on the first site's node (lib/net.sh): users may bind ports below 1024
	in_netns_sysctl "${SITE2_NS_NODE}" net.ipv4.ip_unprivileged_port_start=0
	veth_up "" "${SITE2_VETH_HOST}" "${SITE2_HOST_ADDR}" \
		"${SITE2_NS_LOGIN}" "${SITE2_VETH_LOGIN_UP}" "${SITE2_LOGIN_ADDR}"
	veth_up "${SITE2_NS_LOGIN}" "${SITE2_VETH_LOGIN_DOWN}" "${SITE2_LOGIN_NODE_SIDE_ADDR}" \
		"${SITE2_NS_NODE}" "${SITE2_VETH_NODE}" "${SITE2_NODE_ADDR}"
	# the host's default route would take the node's network out
	ip route replace unreachable "${SITE2_NODE_NET}"
	log "site2: network ${SITE2_NS_LOGIN} ${SITE2_LOGIN_ADDR}, ${SITE2_NS_NODE} ${SITE2_NODE_ADDR} (host ${SITE2_HOST_ADDR})"
}

site2_net_ok() {
	netns_exists "${SITE2_NS_LOGIN}" && netns_exists "${SITE2_NS_NODE}" || return 1
	local host login node
	host="$(ip -o addr show dev "${SITE2_VETH_HOST}" 2>/dev/null)" || return 1
	login="$(ip -n "${SITE2_NS_LOGIN}" -o addr show 2>/dev/null)" || return 1
	node="$(ip -n "${SITE2_NS_NODE}" -o addr show 2>/dev/null)" || return 1
	[[ "${host}" == *" ${SITE2_HOST_ADDR}/24 "* ]] &&
		[[ "${login}" == *" ${SITE2_LOGIN_ADDR}/24 "* ]] &&
		[[ "${login}" == *" ${SITE2_LOGIN_NODE_SIDE_ADDR}/24 "* ]] &&
		[[ "${node}" == *" ${SITE2_NODE_ADDR}/24 "* ]]
}

# site2_net_down stops every process left in the site's namespaces (jobs,
# sessions) and removes them.
site2_net_down() {
	local ns pids=()
	for ns in "${SITE2_NS_LOGIN}" "${SITE2_NS_NODE}"; do
		netns_exists "${ns}" && mapfile -t -O "${#pids[@]}" pids < <(ip netns pids "${ns}")
	done
	if ((${#pids[@]} > 0)); then
		log "site2: stopping ${#pids[@]} leftover process(es) in the namespaces"
		kill_pids 3 "${pids[@]}"
	fi
	ip route del unreachable "${SITE2_NODE_NET}" 2>/dev/null || true
	for ns in "${SITE2_NS_NODE}" "${SITE2_NS_LOGIN}"; do
		if netns_exists "${ns}"; then
			ip netns del "${ns}"
		fi
	done
	if link_exists "" "${SITE2_VETH_HOST}"; then
		ip link del "${SITE2_VETH_HOST}"
	fi
}
