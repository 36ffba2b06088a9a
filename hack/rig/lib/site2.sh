#!/usr/bin/env bash
# shellcheck disable=SC2016 # single-quoted shell for the site's root
# The second site: Slurm 24.11 and OpenSSH 10.0 from the trixie root
# (lib/site2_root.sh), in its own namespaces (lib/site2_net.sh). Laid out
# like the first: munged, MariaDB (the site's own), slurmdbd, slurmctld and
# the login sshd in sluice2-login; slurmd (node1) and the node's sshd in
# sluice2-node. Every daemon runs with the site's root as its own (see
# SITE2_ENTER), so it runs the trixie binaries with the site's own /etc: its munge key, slurm.conf,
# accounts (alice and bob, with the host's uids and the rig's keys) and
# host keys (kept in the rig's key dir, so they stay stable).
set -euo pipefail

SITE2_SERVICES=(site2-munge site2-mariadb site2-slurmdbd site2-slurmctld site2-slurmd site2-sshd-login site2-sshd-node)
SITE2_CLUSTER=sluice2
SITE2_KNOWN_HOSTS_FILE="${RIG_DIR}/site2_known_hosts"
SITE2_NODE_KNOWN_HOSTS_FILE="${RIG_DIR}/site2_node_known_hosts"
# paths inside the site's root
SITE2_SLURM_STATE=/var/lib/slurm
SITE2_SLURM_RUN=/run/slurm
SITE2_MARIADB_SOCK=/run/mysqld/mysqld.sock
SITE2_CHANGED=()

site2_enabled() { [[ "${SLUICE_RIG_SITE2:-1}" != 0 ]]; }

site2_comm() {
	case "$1" in
	site2-munge) printf munged ;;
	site2-mariadb) printf mariadbd ;;
	site2-slurmdbd | site2-slurmctld | site2-slurmd) printf '%s' "${1#site2-}" ;;
	site2-sshd-login | site2-sshd-node) printf sshd ;;
	*) return 1 ;;
	esac
}

# SITE2_ENTER (bash -c SITE2_ENTER site2-enter ROOT CMD...) makes ROOT the
# root of the mount namespace it runs in (pivot_root, then the old root
# detached) and execs CMD there. Not chroot: the kernel refuses a chrooted
# process a user namespace, and Charliecloud's ch-run needs one.
SITE2_ENTER='cd "$1" && shift && pivot_root . . && umount -l . && cd / && exec "$@"'

# site2_exec SERVICE: how the service's daemon is started: in its network
# namespace, in a mount namespace of its own whose root is the site's. slurmd
# and the node's sshd keep the host's /sys (nsenter, as on the first site).
site2_exec() {
	case "$1" in
	site2-slurmd | site2-sshd-node) printf '%s\n' nsenter --net="/run/netns/${SITE2_NS_NODE}" -- ;;
	*) printf '%s\n' ip netns exec "${SITE2_NS_LOGIN}" ;;
	esac
	printf '%s\n' unshare --mount --propagation private -- /bin/bash -c "${SITE2_ENTER}" site2-enter "${SITE2_ROOT}"
}

site2_host_key() { printf '%s/site2_ssh_host_%s_ed25519_key' "${RIG_KEY_DIR}" "${1#site2-sshd-}"; }
site2_sshd_conf() { printf '/etc/ssh/sshd_%s.conf' "${1#site2-sshd-}"; }
site2_sshd_override() { printf '/etc/ssh/sshd_%s.override.conf' "${1#site2-sshd-}"; }
site2_sshd_addr() { if [[ "$1" == site2-sshd-login ]]; then printf '%s' "${SITE2_LOGIN_ADDR}"; else printf '%s' "${SITE2_NODE_ADDR}"; fi; }

# site2_key_line NAME SERVICE: a known_hosts line pinning SERVICE's key for NAME.
site2_key_line() {
	local type key _
	read -r type key _ <"$(site2_host_key "$2").pub"
	printf '%s %s %s\n' "$1" "${type}" "${key}"
}

# site2_install USER MODE SRC DEST installs the host's file SRC as DEST in
# the site, USER's. Paths the site's users own (homes, /tmp) are written by
# a command run in the site's root, never through the host's path to it: a
# link a user left there then points into the site, not at the host's files.
site2_install() {
	local user="$1" mode="$2" src="$3" dest="$4" stage=/run/sluice-rig-stage
	install -d -m 0700 "${SITE2_ROOT}${stage}"
	install -m 0600 "${src}" "${SITE2_ROOT}${stage}/file"
	in_site2 install -m "${mode}" -o "${user}" -g "${user}" "${stage}/file" "${dest}"
	rm -f "${SITE2_ROOT}${stage}/file"
}

# site2_users: alice and bob in the site's root, with the host's uids (the
# same account on both sites) and the rig's keys.
site2_users() {
	local user uid gid
	for user in "${RIG_USER}" "${RIG_OTHER_USER}"; do
		uid="$(id -u "${user}")"
		gid="$(id -g "${user}")"
		in_site2 getent group "${user}" >/dev/null || in_site2 groupadd -g "${gid}" "${user}"
		in_site2 getent passwd "${user}" >/dev/null ||
			in_site2 useradd -u "${uid}" -g "${gid}" --create-home --shell /bin/bash "${user}"
		[[ "$(in_site2 getent shadow "${user}" | cut -d: -f2)" == "*" ]] || in_site2 usermod -p '*' "${user}"
		in_site2 install -d -m 0700 -o "${user}" -g "${user}" "/home/${user}/.ssh"
		site2_install "${user}" 0600 "$(user_key "${user}")" "/home/${user}/.ssh/id_ed25519"
		site2_install "${user}" 0600 "$(user_key "${user}").pub" "/home/${user}/.ssh/authorized_keys"
	done
	in_site2 install -d -m 0700 -o "${RIG_USER}" -g "${RIG_USER}" "/home/${RIG_USER}/.sluice"
	in_site2 install -d -m 1777 "${SOCKET_DIR_ROOT}"
	local hosts
	hosts="$(printf '127.0.0.1 localhost\n127.0.1.1 %s\n%s login\n%s %s' \
		"$(hostname -s)" "${SITE2_LOGIN_ADDR}" "${SITE2_NODE_ADDR}" "${NODE_NAME}")"
	[[ "$(cat "${SITE2_ROOT}/etc/hosts" 2>/dev/null)" == "${hosts}" ]] ||
		printf '%s\n' "${hosts}" >"${SITE2_ROOT}/etc/hosts"
}

# site2_prepare renders the site's configs and keys; SITE2_CHANGED lists the
# services whose config changed.
site2_prepare() {
	local root="${SITE2_ROOT}" host svc key
	host="$(hostname -s)"
	SITE2_CHANGED=()
	in_site2 install -d -m 0755 -o slurm -g slurm "${SITE2_SLURM_STATE}/ctld" "${SITE2_SLURM_RUN}"
	in_site2 install -d -m 0755 "${SITE2_SLURM_STATE}/d" "${SITE2_SLURM_STATE}/gpu" /run/sshd
	slurm_gpu_files "${root}${SITE2_SLURM_STATE}/gpu"
	if render "${RIG_SRC_DIR}/conf/slurm.conf.in" "${root}/etc/slurm/slurm.conf" 0644 \
		CLUSTER="${SITE2_CLUSTER}" CTLD_HOST="${host}" CTLD_ADDR="${SITE2_LOGIN_NODE_SIDE_ADDR}" \
		STATE_DIR="${SITE2_SLURM_STATE}" RUN_DIR="${SITE2_SLURM_RUN}" \
		NODE_NAME="${NODE_NAME}" NODE_ADDR="${SITE2_NODE_ADDR}"; then
		SITE2_CHANGED+=(site2-slurmctld site2-slurmd)
	fi
	if render "${RIG_SRC_DIR}/conf/gres.conf.in" "${root}/etc/slurm/gres.conf" 0644 \
		NODE_NAME="${NODE_NAME}" GPU_DIR="${SITE2_SLURM_STATE}/gpu"; then
		SITE2_CHANGED+=(site2-slurmctld site2-slurmd)
	fi
	if render "${RIG_SRC_DIR}/conf/slurmdbd.conf.in" "${root}/etc/slurm/slurmdbd.conf" 0600 \
		DBD_HOST="${host}" RUN_DIR="${SITE2_SLURM_RUN}" DB_PORT="${MARIADB_PORT}" \
		DB_USER="${SLURM_DB_USER}" DB_PASS="$(site2_db_pass)" DB_NAME="${SLURM_DB}"; then
		SITE2_CHANGED+=(site2-slurmdbd)
	fi
	in_site2 chown slurm:slurm /etc/slurm/slurmdbd.conf
	for svc in site2-sshd-login site2-sshd-node; do
		key="$(site2_host_key "${svc}")"
		[[ -f "${key}" ]] || ssh-keygen -q -t ed25519 -N '' -C "sluice-rig-${svc}" -f "${key}"
		install -m 0600 "${key}" "${root}/etc/ssh/${key##*/}"
		[[ -f "${root}$(site2_sshd_override "${svc}")" ]] || install -m 0644 /dev/null "${root}$(site2_sshd_override "${svc}")"
		if render "${RIG_SRC_DIR}/conf/sshd_config.in" "${root}$(site2_sshd_conf "${svc}")" 0644 \
			ROLE="site 2 ${svc#site2-sshd-}" ADDR="$(site2_sshd_addr "${svc}")" HOST_KEY="/etc/ssh/${key##*/}" \
			OVERRIDE="$(site2_sshd_override "${svc}")" PID_FILE="/run/${svc}.pid" \
			USERS="${RIG_USER} ${RIG_OTHER_USER}"; then
			SITE2_CHANGED+=("${svc}")
		fi
		in_site2 /usr/sbin/sshd -t -f "$(site2_sshd_conf "${svc}")" || die "${svc}: bad config"
	done
	site2_known_hosts
}

site2_known_hosts() {
	site2_key_line "${SITE2_LOGIN_ADDR}" site2-sshd-login >"${SITE2_KNOWN_HOSTS_FILE}.tmp"
	{
		site2_key_line "${NODE_NAME}" site2-sshd-node
		site2_key_line "${SITE2_NODE_ADDR}" site2-sshd-node
	} >"${SITE2_NODE_KNOWN_HOSTS_FILE}.tmp"
	chmod 0644 "${SITE2_KNOWN_HOSTS_FILE}.tmp" "${SITE2_NODE_KNOWN_HOSTS_FILE}.tmp"
	mv -f "${SITE2_KNOWN_HOSTS_FILE}.tmp" "${SITE2_KNOWN_HOSTS_FILE}"
	mv -f "${SITE2_NODE_KNOWN_HOSTS_FILE}.tmp" "${SITE2_NODE_KNOWN_HOSTS_FILE}"
	# alice on the login node reaches the node with its key pinned
	site2_install "${RIG_USER}" 0644 "${SITE2_NODE_KNOWN_HOSTS_FILE}" "/home/${RIG_USER}/.ssh/known_hosts"
}

site2_db_pass() { rig_secret site2_slurmdb.pass; }

site2_munge_key() {
	local key="${RIG_KEY_DIR}/site2_munge.key"
	if [[ ! -s "${key}" ]]; then
		log "site2: creating its munge key"
		(umask 077 && head -c 1024 /dev/urandom >"${key}")
	fi
	install -m 0400 "${key}" "${SITE2_ROOT}/etc/munge/munge.key"
	in_site2 chown munge:munge /etc/munge/munge.key
	in_site2 install -d -m 0755 -o munge -g munge /run/munge
}

site2_mariadb_sql() {
	in_site2 mariadb --no-defaults --socket="${SITE2_MARIADB_SOCK}" --user=root --batch --skip-column-names -e "$1"
}

site2_slurm_ready() {
	local state
	state="$(in_site2_login chroot "${SITE2_ROOT}" sinfo -h -n "${NODE_NAME}" -o %t 2>/dev/null || true)"
	case "${state}" in
	idle | mix | alloc | comp) return 0 ;;
	drain | drng | down)
		in_site2_login chroot "${SITE2_ROOT}" scontrol update nodename="${NODE_NAME}" state=resume >/dev/null 2>&1 || true
		return 1
		;;
	*) return 1 ;;
	esac
}

# site2_answers SERVICE: the daemon does its work.
site2_answers() {
	case "$1" in
	site2-munge) in_site2 sh -c 'munge -n | unmunge' ;;
	site2-mariadb) site2_mariadb_sql 'SELECT 1' ;;
	site2-slurmdbd) in_site2_login chroot "${SITE2_ROOT}" sacctmgr -n -P list cluster format=cluster ;;
	site2-slurmctld) [[ "$(in_site2_login chroot "${SITE2_ROOT}" scontrol ping)" == *"is UP"* ]] ;;
	site2-slurmd) site2_slurm_ready ;;
	site2-sshd-login)
		[[ "$(ssh-keyscan -T 2 -t ed25519 "${SITE2_LOGIN_ADDR}" 2>/dev/null)" == "$(<"${SITE2_KNOWN_HOSTS_FILE}")" ]]
		;;
	site2-sshd-node)
		[[ "$(in_site2_login ssh-keyscan -T 2 -t ed25519 "${SITE2_NODE_ADDR}" 2>/dev/null)" == "$(site2_key_line "${SITE2_NODE_ADDR}" site2-sshd-node)" ]]
		;;
	esac
}

# site2_start SERVICE starts one daemon of the site (its root mounted, its
# network up) and waits until it answers.
site2_start() {
	local svc="$1" argv=() exec_prefix=()
	site2_net_ok || die "${svc}: the second site's network is down (run rig.sh up site2)"
	site2_mounted || die "${svc}: the second site's root is not mounted (run rig.sh up site2)"
	mapfile -t exec_prefix < <(site2_exec "${svc}")
	case "${svc}" in
	site2-munge)
		site2_munge_key
		argv=(/usr/bin/setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged -F)
		;;
	site2-mariadb)
		if [[ ! -d "${SITE2_ROOT}/var/lib/mysql/mysql" ]]; then
			log "site2: initialising MariaDB"
			in_site2 mariadb-install-db --no-defaults --user=mysql --datadir=/var/lib/mysql \
				--auth-root-authentication-method=socket --skip-test-db \
				>>"${RIG_LOG_DIR}/site2-mariadb.log" 2>&1 || { tail_log site2-mariadb; die "site2: mariadb-install-db failed"; }
		fi
		in_site2 install -d -m 0755 -o mysql -g mysql "$(dirname "${SITE2_MARIADB_SOCK}")"
		argv=(/usr/sbin/mariadbd --no-defaults --user=mysql --datadir=/var/lib/mysql
			--socket="${SITE2_MARIADB_SOCK}" --pid-file=/run/mysqld/mariadbd.pid
			--bind-address=127.0.0.1 --port="${MARIADB_PORT}" --skip-name-resolve
			--skip-log-bin --innodb-buffer-pool-size=64M --innodb-lock-wait-timeout=900)
		;;
	site2-slurmdbd) argv=(/usr/sbin/slurmdbd -D) ;;
	site2-slurmctld) argv=(/usr/sbin/slurmctld -D) ;;
	site2-slurmd) argv=(/usr/sbin/slurmd -D -N "${NODE_NAME}") ;;
	site2-sshd-login | site2-sshd-node) argv=(/usr/sbin/sshd -D -e -f "$(site2_sshd_conf "${svc}")") ;;
	esac
	spawn "${svc}" "$(site2_comm "${svc}")" "${exec_prefix[@]}" "${argv[@]}"
	wait_until 60 "${svc} to answer" site2_answers "${svc}" || { tail_log "${svc}"; die "${svc} does not answer"; }
	case "${svc}" in
	site2-mariadb) site2_mariadb_sql "$(mariadb_grant_sql "$(site2_db_pass)")" >/dev/null ;;
	site2-slurmdbd)
		if ! grep -qxF "${SITE2_CLUSTER}" <<<"$(site2_answers site2-slurmdbd)"; then
			log "site2: adding cluster ${SITE2_CLUSTER} to slurmdbd"
			in_site2_login chroot "${SITE2_ROOT}" sacctmgr -i add cluster "${SITE2_CLUSTER}" >>"${RIG_LOG_DIR}/site2-slurmdbd.log" 2>&1
		fi
		;;
	esac
}

# site2_up brings the second site up: root (built once), network, accounts,
# configs, then every daemon not running; a running daemon whose config
# changed, or whose sshd override a test left, is restarted.
site2_up() {
	local start=${SECONDS} svc f
	site2_root_build
	if mountpoint -q "${SITE2_ROOT}" && ! site2_mounted; then
		log "site2: the cached root changed: moving the site onto the new one"
		site2_stop_services
	fi
	site2_mount
	site2_net_ok || site2_net_up
	site2_users
	for svc in site2-sshd-login site2-sshd-node; do
		f="${SITE2_ROOT}$(site2_sshd_override "${svc}")"
		if [[ -s "${f}" ]]; then
			log "${svc}: override ${f} left by a test: emptied"
			: >"${f}"
			SITE2_CHANGED+=("${svc}")
		fi
	done
	local overridden=("${SITE2_CHANGED[@]}")
	site2_prepare
	for svc in "${overridden[@]}" "${SITE2_CHANGED[@]}"; do
		if service_pid "${svc}" >/dev/null; then
			log "${svc}: config changed"
			service_stop "${svc}"
		fi
	done
	for svc in "${SITE2_SERVICES[@]}"; do
		service_start "${svc}"
	done
	log "site2: up in $((SECONDS - start))s ($(in_site2 sbatch --version), $(in_site2 /usr/sbin/sshd -V 2>&1 | cut -d, -f1))"
}

# site2_down stops the site's daemons and every process left in its
# namespaces, removes the namespaces and unmounts its root. The root's
# upper layer (its state) and the cached root stay.
site2_down() {
	site2_stop_services
	site2_net_down
	wait_reaped
	site2_umount
	log "site2: down"
}

site2_stop_services() {
	local i
	for ((i = ${#SITE2_SERVICES[@]} - 1; i >= 0; i--)); do
		service_stop "${SITE2_SERVICES[i]}"
	done
}

# site2_status: one line per service of the second site when it is asked
# for or any of it runs; non-zero if it is not all up.
site2_status() {
	local svc rc=0 any=no
	for svc in "${SITE2_SERVICES[@]}"; do
		service_pid "${svc}" >/dev/null && any=yes
	done
	site2_enabled || [[ "${any}" == yes ]] || return 0
	service_lines "${SITE2_SERVICES[@]}" || rc=1
	if site2_net_ok && site2_mounted; then
		printf '%-23s up (%s %s, %s %s; root %s)\n' site2-network "${SITE2_NS_LOGIN}" "${SITE2_LOGIN_ADDR}" \
			"${SITE2_NS_NODE}" "${SITE2_NODE_ADDR}" "$(site2_lower)"
	else
		printf '%-23s down\n' site2-network
		rc=1
	fi
	return "${rc}"
}

# site2_env_lines: the second site's lines of rig.env, named as the first
# site's with RIG_SITE2_ for RIG_ (internal/testrig's Site2 reads them so).
# Paths are as the site sees them, but for the override files and known_hosts
# (host paths); RIG_SITE2_ROOT is where the site's files are on the host.
site2_env_lines() {
	printf 'RIG_SITE2_ROOT=%s\n' "${SITE2_ROOT}"
	printf 'RIG_SITE2_CLUSTER=%s\n' "${SITE2_CLUSTER}"
	printf 'RIG_SITE2_LOGIN_ADDR=%s\n' "${SITE2_LOGIN_ADDR}"
	printf 'RIG_SITE2_LOGIN_PORT=%s\n' 22
	printf 'RIG_SITE2_NODE_ADDR=%s\n' "${SITE2_NODE_ADDR}"
	printf 'RIG_SITE2_NODE_NAME=%s\n' "${NODE_NAME}"
	printf 'RIG_SITE2_KNOWN_HOSTS=%s\n' "${SITE2_KNOWN_HOSTS_FILE}"
	printf 'RIG_SITE2_NODE_KNOWN_HOSTS=%s\n' "${SITE2_NODE_KNOWN_HOSTS_FILE}"
	printf 'RIG_SITE2_DATA_ROOT=/home/%s/.sluice\n' "${RIG_USER}"
	printf 'RIG_SITE2_IMAGE=%s\n' "${RIG_IMAGE_DIR}"
	printf 'RIG_SITE2_SOCKET_DIR_ROOT=%s\n' "${SOCKET_DIR_ROOT}"
	printf 'RIG_SITE2_SSHD_NODE_OVERRIDE=%s\n' "${SITE2_ROOT}$(site2_sshd_override site2-sshd-node)"
	printf 'RIG_SITE2_SSHD_LOGIN_OVERRIDE=%s\n' "${SITE2_ROOT}$(site2_sshd_override site2-sshd-login)"
	printf 'RIG_SITE2_SLURM_CONF=%s\n' /etc/slurm/slurm.conf
}
