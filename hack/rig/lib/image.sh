#!/usr/bin/env bash
# The Charliecloud image: a directory made from Debian's busybox-static, with
# the rig's probe (test/probe, a TLS and Redis client busybox lacks) in
# /usr/local/bin, and a check that alice can run it in the node namespace.
set -euo pipefail

RIG_IMAGE_DIR="${RIG_DIR}/images/busybox"

image_build() {
	local dir="${RIG_IMAGE_DIR}.tmp" applet
	rm -rf "${dir}"
	install -d -m 0755 "${dir}"
	install -d -m 0755 "${dir}"/{bin,etc,dev,proc,sys,home,root,run,mnt,usr,var}
	install -d -m 1777 "${dir}/tmp" "${dir}/var/tmp"
	install -m 0755 /bin/busybox "${dir}/bin/busybox"
	while read -r applet; do
		[[ -n "${applet}" && "${applet}" != busybox ]] || continue
		ln -s busybox "${dir}/bin/${applet}"
	done < <(/bin/busybox --list)
	ln -s ../bin "${dir}/usr/bin"
	ln -s bin "${dir}/sbin"
	ln -s ../bin "${dir}/usr/sbin"
	# bind destinations must exist in the image; ch-run binds /etc/hosts and
	# /etc/resolv.conf by default, and sluice binds its own hosts file
	local f
	for f in hosts passwd group resolv.conf; do
		install -m 0644 /dev/null "${dir}/etc/${f}"
	done
	rm -rf "${RIG_IMAGE_DIR}"
	mv "${dir}" "${RIG_IMAGE_DIR}"
}

# userns_up: ch-run needs unprivileged user namespaces.
userns_up() {
	if runuser -u "${RIG_USER}" -- unshare --user true 2>/dev/null; then
		return 0
	fi
	log "image: unprivileged user namespaces are off; enabling them with sysctl"
	local f
	f=/proc/sys/kernel/unprivileged_userns_clone
	[[ ! -e "${f}" ]] || sysctl -q -w kernel.unprivileged_userns_clone=1
	f=/proc/sys/kernel/apparmor_restrict_unprivileged_userns
	[[ ! -e "${f}" ]] || sysctl -q -w kernel.apparmor_restrict_unprivileged_userns=0
	if [[ "$(sysctl -n user.max_user_namespaces)" == 0 ]]; then
		sysctl -q -w user.max_user_namespaces=15000
	fi
	runuser -u "${RIG_USER}" -- unshare --user true ||
		die "image: unprivileged user namespaces still fail for ${RIG_USER}"
}

# image_probe builds test/probe static and installs it in the image when it
# changed (go build's cache makes an unchanged build quick).
image_probe() {
	local repo tmp
	repo="$(cd "${RIG_SRC_DIR}/../.." && pwd)"
	tmp="$(mktemp)"
	(cd "${repo}" && CGO_ENABLED=0 go build -trimpath -o "${tmp}" ./test/probe) ||
		die "image: go build ./test/probe failed"
	if ! cmp -s "${tmp}" "${RIG_IMAGE_DIR}/usr/local/bin/sluice-probe"; then
		install -d -m 0755 "${RIG_IMAGE_DIR}/usr/local/bin"
		install -m 0755 "${tmp}" "${RIG_IMAGE_DIR}/usr/local/bin/sluice-probe"
		log "image: sluice-probe installed"
	fi
	rm -f "${tmp}"
}

image_up() {
	install -d -m 0755 "${RIG_DIR}/images"
	if ! cmp -s /bin/busybox "${RIG_IMAGE_DIR}/bin/busybox" || [[ ! -e "${RIG_IMAGE_DIR}/etc/group" ]]; then
		log "image: building ${RIG_IMAGE_DIR}"
		image_build
	fi
	image_probe
	userns_up
	local got
	got="$(in_node runuser -u "${RIG_USER}" -- env USER="${RIG_USER}" \
		ch-run "${RIG_IMAGE_DIR}" -- sh -c 'echo hi' 2>&1)" ||
		die "image: ch-run as ${RIG_USER} failed: ${got}"
	[[ "${got}" == hi ]] || die "image: ch-run as ${RIG_USER} printed ${got}; want hi"
	log "image: ${RIG_IMAGE_DIR} runs with ch-run as ${RIG_USER}"
}
