#!/usr/bin/env bash
# munged, in the host namespace: its socket is a file, so every namespace
# (slurmctld, slurmd, the Slurm commands) reaches it.
set -euo pipefail

munge_start() {
	if [[ ! -s /etc/munge/munge.key ]]; then
		log "munge: creating /etc/munge/munge.key"
		mungekey --create --keyfile=/etc/munge/munge.key
	fi
	chown munge:munge /etc/munge/munge.key
	chmod 0400 /etc/munge/munge.key
	install -d -m 0755 -o munge -g munge /run/munge
	install -d -m 0700 -o munge -g munge /var/lib/munge
	install -d -m 0700 -o munge -g munge /var/log/munge
	# setpriv execs (runuser would fork), so the recorded PID is munged's
	spawn munge munged setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged -F
	wait_until 10 "munge to answer" munge_answers || { tail_log munge; die "munge does not answer"; }
}

munge_answers() {
	munge -n | unmunge
}
