#!/usr/bin/env bash
# MariaDB for slurmdbd, inside the login namespace on its 127.0.0.1:3306,
# with its data directory in the rig dir (none of Debian's /etc/mysql).
set -euo pipefail

MARIADB_DATA="${RIG_DIR}/mysql"
MARIADB_SOCK="${MARIADB_DATA}/mysqld.sock"
MARIADB_PORT=3306
SLURM_DB=slurm_acct_db
SLURM_DB_USER=slurm

slurm_db_pass() { rig_secret slurmdb.pass; }

# rig_secret NAME: a password kept in the key dir, made on first use.
rig_secret() {
	local file="${RIG_KEY_DIR}/$1"
	if [[ ! -s "${file}" ]]; then
		(umask 077 && head -c 18 /dev/urandom | base64 | tr -d '/+=\n' >"${file}")
	fi
	cat "${file}"
}

mariadb_sql() {
	mariadb --no-defaults --socket="${MARIADB_SOCK}" --user=root --batch --skip-column-names -e "$1"
}

mariadb_answers() { mariadb_sql 'SELECT 1'; }

mariadb_start() {
	if [[ ! -d "${MARIADB_DATA}/mysql" ]]; then
		log "mariadb: initialising ${MARIADB_DATA}"
		install -d -m 0750 -o mysql -g mysql "${MARIADB_DATA}"
		mariadb-install-db --no-defaults --user=mysql --datadir="${MARIADB_DATA}" \
			--auth-root-authentication-method=socket --skip-test-db \
			>>"${RIG_LOG_DIR}/mariadb.log" 2>&1 || { tail_log mariadb; die "mariadb-install-db failed"; }
	fi
	spawn mariadb mariadbd ip netns exec "${NS_LOGIN}" /usr/sbin/mariadbd --no-defaults \
		--user=mysql --datadir="${MARIADB_DATA}" --socket="${MARIADB_SOCK}" \
		--pid-file="${MARIADB_DATA}/mariadbd.pid" \
		--bind-address=127.0.0.1 --port="${MARIADB_PORT}" --skip-name-resolve \
		--skip-log-bin --innodb-buffer-pool-size=64M --innodb-lock-wait-timeout=900
	wait_until 60 "mariadb to answer" mariadb_answers || { tail_log mariadb; die "mariadb does not answer"; }
	mariadb_sql "$(mariadb_grant_sql "$(slurm_db_pass)")" >/dev/null
}

# mariadb_grant_sql PASSWORD: the SQL that makes the slurm database and its
# user.
mariadb_grant_sql() {
	local pass="$1"
	printf '%s\n' "CREATE DATABASE IF NOT EXISTS ${SLURM_DB};
CREATE USER IF NOT EXISTS '${SLURM_DB_USER}'@'127.0.0.1' IDENTIFIED BY '${pass}';
ALTER USER '${SLURM_DB_USER}'@'127.0.0.1' IDENTIFIED BY '${pass}';
GRANT ALL ON ${SLURM_DB}.* TO '${SLURM_DB_USER}'@'127.0.0.1';"
}
