#!/usr/bin/env bash
# shellcheck disable=SC2034 # constants read by the other files
# The second site's root file system: Debian 13 (trixie: Slurm 24.11,
# OpenSSH 10.0) from Debian's packages, built once with mmdebstrap into
# ${SLUICE_TOOLS_CACHE:-/var/cache/sluice}/trixie-<key>/root (with the
# tools of hack/tools/build.sh), the key a hash of the suite, the
# package list and the build options (a change builds a new root). The site
# runs in an overlay over it (lower: the cached root, read-only; upper: the
# rig dir's site2/upper, so the cache is never written), with the host's
# /proc, /sys and /dev bound in; its daemons run there (lib/site2.sh).
set -euo pipefail

SITE2_SUITE=trixie
SITE2_MIRROR=http://deb.debian.org/debian
SITE2_PACKAGES=(
	slurmctld slurmd slurmdbd slurm-client munge mariadb-server
	openssh-server openssh-client procps charliecloud-runtime mpich
)
# no recommends, no manuals, documentation or translations: a smaller root,
# built faster
SITE2_MMDEBSTRAP_OPTS=(
	--mode=root --variant=apt --format=directory
	--aptopt='APT::Install-Recommends "false"'
	--dpkgopt='path-exclude=/usr/share/man/*'
	--dpkgopt='path-exclude=/usr/share/doc/*'
	--dpkgopt='path-exclude=/usr/share/locale/*'
)
SITE2_CACHE_DIR="${SLUICE_TOOLS_CACHE:-/var/cache/sluice}"
SITE2_DIR="${RIG_DIR}/site2"
SITE2_ROOT="${SITE2_DIR}/root"

# site2_root_key: what the cached root is built from, hashed.
site2_root_key() {
	printf '%s\n' "${SITE2_SUITE}" "${SITE2_MIRROR}" "${SITE2_PACKAGES[*]}" "${SITE2_MMDEBSTRAP_OPTS[*]}" |
		sha256sum | cut -c1-12
}

site2_lower() { printf '%s/%s-%s/root' "${SITE2_CACHE_DIR}" "${SITE2_SUITE}" "$(site2_root_key)"; }

# site2_root_build builds the cached root when it is missing. A root is only
# ever complete: it is built beside its place and moved in.
site2_root_build() {
	local lower tmp start=${SECONDS} include
	lower="$(site2_lower)"
	[[ ! -x "${lower}/usr/sbin/slurmctld" ]] || return 0
	command -v mmdebstrap >/dev/null || die "site2: mmdebstrap is missing (rig.sh up installs it)"
	tmp="${lower}.tmp"
	rm -rf "${tmp}"
	install -d -m 0755 "$(dirname "${lower}")"
	include="$(
		IFS=,
		printf '%s' "${SITE2_PACKAGES[*]}"
	)"
	log "site2: building the ${SITE2_SUITE} root ${lower} (mmdebstrap, see ${RIG_LOG_DIR}/site2-mmdebstrap.log)"
	mmdebstrap "${SITE2_MMDEBSTRAP_OPTS[@]}" --include="${include}" \
		"${SITE2_SUITE}" "${tmp}" "${SITE2_MIRROR}" >>"${RIG_LOG_DIR}/site2-mmdebstrap.log" 2>&1 || {
		tail -n 20 "${RIG_LOG_DIR}/site2-mmdebstrap.log" >&2
		rm -rf "${tmp}"
		die "site2: mmdebstrap failed"
	}
	mv "${tmp}" "${lower}"
	log "site2: ${SITE2_SUITE} root built in $((SECONDS - start))s ($(du -sh "${lower}" | cut -f1))"
}

# site2_mounted: the overlay is mounted over the current cached root.
site2_mounted() {
	local opts
	opts="$(findmnt -n -o OPTIONS --mountpoint "${SITE2_ROOT}" 2>/dev/null)" || return 1
	[[ "${opts}" == *"lowerdir=$(site2_lower),"* ]]
}

# site2_mount mounts the overlay and binds /proc, /sys, /dev and the rig's
# Charliecloud image (read-only, at its host path) into it. An upper made
# over another cached root is stale (its copies would hide the new root's
# files): it is dropped, and the site's state with it.
site2_mount() {
	site2_root_build
	if site2_mounted; then
		return 0
	fi
	site2_umount
	local lower old
	lower="$(site2_lower)"
	if [[ "$(cat "${SITE2_DIR}/lower" 2>/dev/null || true)" != "${lower}" ]]; then
		log "site2: new root ${lower}: starting from a clean upper layer"
		rm -rf "${SITE2_DIR}/upper" "${SITE2_DIR}/work"
	fi
	# roots of other package lists go, unless a site (of another rig dir)
	# still runs over one
	local overlays
	overlays="$(findmnt -n -t overlay -o OPTIONS 2>/dev/null || true)"
	for old in "${SITE2_CACHE_DIR}/${SITE2_SUITE}"-*; do
		if [[ -d "${old}" && "${old}" != "$(dirname "${lower}")" && "${overlays}" != *"lowerdir=${old}/root,"* ]]; then
			log "site2: removing the old root ${old}"
			rm -rf "${old}"
		fi
	done
	# root's only: the upper layer holds the site's files under the site's
	# uids, which name other accounts on the host (trixie's munge is the
	# host's messagebus), so the host's users must not reach it
	install -d -m 0700 "${SITE2_DIR}"
	install -d -m 0755 "${SITE2_DIR}/upper" "${SITE2_DIR}/work" "${SITE2_ROOT}"
	printf '%s\n' "${lower}" >"${SITE2_DIR}/lower"
	mount -t overlay sluice-site2 \
		-o "lowerdir=${lower},upperdir=${SITE2_DIR}/upper,workdir=${SITE2_DIR}/work" "${SITE2_ROOT}"
	local d
	for d in proc sys dev; do
		mount --rbind "/${d}" "${SITE2_ROOT}/${d}"
	done
	install -d -m 0755 "${SITE2_ROOT}${RIG_IMAGE_DIR}"
	mount --bind "${RIG_IMAGE_DIR}" "${SITE2_ROOT}${RIG_IMAGE_DIR}"
	mount -o remount,bind,ro "${SITE2_ROOT}${RIG_IMAGE_DIR}"
	log "site2: root ${SITE2_ROOT} (overlay over ${lower})"
}

# site2_umount unmounts the overlay and all below it (the site's processes
# must be gone; a mount still busy is detached lazily).
site2_umount() {
	mountpoint -q "${SITE2_ROOT}" 2>/dev/null || return 0
	umount -R "${SITE2_ROOT}" 2>/dev/null || {
		log "site2: ${SITE2_ROOT} busy: detaching it"
		umount -R -l "${SITE2_ROOT}"
	}
}

# in_site2 runs a command in the site's root, in the host's namespaces (for
# files and accounts; the daemons run in the site's network namespaces).
in_site2() { chroot "${SITE2_ROOT}" "$@"; }
