#!/usr/bin/env bash
# Debian packages the rig needs. Nothing starts on its own: there is no
# systemd, and package scripts do not start services.
set -euo pipefail

RIG_PACKAGES=(
	slurm-wlm slurmdbd mariadb-server munge
	openssh-server openssh-client redis-server iproute2
	charliecloud-runtime busybox-static shellcheck socat bubblewrap
	curl openssl
	# builds the second site's root (lib/site2_root.sh); its recommends
	# (gpg, uidmap, arch-test, distro-info) are what it uses to fetch and
	# check a suite
	mmdebstrap
	krb5-kdc krb5-admin-server krb5-user
)

# RIG_PACKAGES_LEAN are installed without their recommends: MPICH's
# (its headers, gfortran, autotools) are not needed to run mpiexec.
RIG_PACKAGES_LEAN=(mpich)

package_installed() {
	[[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" == "install ok installed" ]]
}

packages_up() {
	local missing=() lean=() pkg
	for pkg in "${RIG_PACKAGES[@]}"; do
		package_installed "${pkg}" || missing+=("${pkg}")
	done
	for pkg in "${RIG_PACKAGES_LEAN[@]}"; do
		package_installed "${pkg}" || lean+=("${pkg}")
	done
	if ((${#missing[@]} + ${#lean[@]} == 0)); then
		log "packages: all installed"
		return 0
	fi
	if ((${#missing[@]} > 0)); then
		packages_install "${missing[@]}"
	fi
	if ((${#lean[@]} > 0)); then
		packages_install --no-install-recommends "${lean[@]}"
	fi
}

# packages_install [--no-install-recommends] PACKAGE...: apt-get install,
# with service starts denied.
packages_install() {
	local missing=("$@")
	log "packages: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >>"${RIG_LOG_DIR}/apt.log" 2>&1 ||
		die "apt-get update failed (see ${RIG_LOG_DIR}/apt.log)"
	# Package scripts must not start munge, redis or mariadb themselves (they
	# would take the rig's socket and ports): deny service starts meanwhile.
	local policy=/usr/sbin/policy-rc.d ours=0 rc=0
	if [[ ! -e "${policy}" ]]; then
		printf '#!/bin/sh\n# hack/rig: no service starts during install\nexit 101\n' >"${policy}"
		chmod 0755 "${policy}"
		ours=1
	fi
	apt-get install -y -q "${missing[@]}" >>"${RIG_LOG_DIR}/apt.log" 2>&1 || rc=$?
	if ((ours)); then
		rm -f "${policy}"
	fi
	((rc == 0)) || die "apt-get install failed (see ${RIG_LOG_DIR}/apt.log)"
}
