#!/bin/sh
#SBATCH --job-name=0a1b2c3d-0000-4000-8000-000000000001
#SBATCH --output=/scratch/alice/.sluice/default-0a1b2c3d-0000-4000-8000-000000000001/job.out
#SBATCH --error=/scratch/alice/.sluice/default-0a1b2c3d-0000-4000-8000-000000000001/job.out
#SBATCH --chdir=/scratch/alice/.sluice/default-0a1b2c3d-0000-4000-8000-000000000001

# Rendered by sluice: the batch script of pod
# default/hello
# (uid 0a1b2c3d-0000-4000-8000-000000000001).
# Every file it writes is in the job directory: see internal/jobscript/layout.go.
# shellcheck disable=SC2016 # the containers' arguments are literal: '$' in them stays '$'

sluice_dir=/scratch/alice/.sluice/default-0a1b2c3d-0000-4000-8000-000000000001
sluice_tmp=
sluice_pids=
sluice_stop=

# sluice_put FILE VALUE writes VALUE to FILE through a temporary file, so that
# a reader never sees a partial file.
sluice_put() {
	printf '%s\n' "$2" >"$1.tmp" && mv -f "$1.tmp" "$1"
}

# sluice_fail CODE MESSAGE ends the job with CODE.
sluice_fail() {
	echo "sluice: $2" >&2
	exit "$1"
}

# sluice_exit runs when the script ends, however it ends short of SIGKILL: it
# writes the exit code to job.exit, last.
# shellcheck disable=SC2317 # called by trap
sluice_exit() {
	sluice_code=$?
	sluice_rev_stop
	if [ -n "$sluice_tmp" ]; then
		rm -rf "$sluice_tmp"
	fi
	sluice_put "$sluice_dir/job.exit" "$sluice_code"
	exit "$sluice_code"
}

# sluice_forward passes SIGTERM and SIGINT on to the running containers, as
# SIGTERM: a non-interactive shell starts background commands with SIGINT
# ignored.
# shellcheck disable=SC2317 # called by trap
sluice_forward() {
	sluice_stop=1
	for sluice_pid in $sluice_pids; do
		kill -s TERM "$sluice_pid" 2>/dev/null
	done
}

# sluice_wait PID waits for PID across the signals trapped meanwhile and
# leaves its exit code in sluice_code.
sluice_wait() {
	while :; do
		wait "$1"
		sluice_code=$?
		if [ "$sluice_code" -le 128 ] || ! kill -0 "$1" 2>/dev/null; then
			return 0
		fi
	done
}

# sluice_term passes SIGTERM on to a container's main process, as Kubernetes
# does; the rest of its process group is killed when that process ends.
# shellcheck disable=SC2317 # called by trap
sluice_term() {
	if [ -n "$sluice_child" ]; then
		kill -s TERM "$sluice_child" 2>/dev/null
	fi
}

# sluice_run NAME ENV_FILE DIR COMMAND... runs one container: COMMAND, in its
# own process group, with the variables of ENV_FILE (when not empty) and in
# DIR (when not empty). Its output (stdout and stderr) goes to NAME.log, each
# line stamped with the UTC time; its start and finish times to NAME.time
# (sluice_stamp), then its exit code to NAME.exit. When
# COMMAND ends, what it left running in its group is killed, as a container's
# processes end with it.
sluice_run() {
	sluice_child=
	trap sluice_term TERM
	sluice_name=$1 sluice_env=$2 sluice_cd=$3
	shift 3
	set -- "$sluice_setsid" "$@"
	sluice_fifo=$sluice_tmp/$sluice_name
	if ! mkfifo -m 600 "$sluice_fifo"; then
		sluice_put "$sluice_dir/$sluice_name.exit" 1
		return 1
	fi
	# The stamping awk ignores SIGTERM: it ends when the output does, so
	# that no line is lost when the job is cancelled.
	(
		trap '' TERM INT
		TZ=UTC
		export TZ
		exec awk '{ print strftime("%Y-%m-%dT%H:%M:%SZ") " " $0; fflush() }'
	) <"$sluice_fifo" >>"$sluice_dir/$sluice_name.log" &
	sluice_log=$!
	sluice_stamp "$sluice_name"
	sluice_started=${sluice_now:-}
	(
		if [ -n "$sluice_cd" ]; then
			cd "$sluice_cd" || exit 1
		fi
		if [ -n "$sluice_env" ]; then
			set -a
			# shellcheck source=/dev/null
			. "$sluice_env"
			set +a
		fi
		exec "$@"
	) >"$sluice_fifo" 2>&1 &
	sluice_child=$!
	sluice_wait "$sluice_child"
	sluice_status=$sluice_code
	kill -s KILL -- "-$sluice_child" 2>/dev/null
	sluice_wait "$sluice_log"
	rm -f "$sluice_fifo"
	if [ -n "$sluice_started" ]; then
		sluice_stamp "$sluice_name" "$sluice_started"
	fi
	sluice_put "$sluice_dir/$sluice_name.exit" "$sluice_status"
	return "$sluice_status"
}
# sluice_stamp NAME [START] writes NAME.time: the container's start time
# (date +%s) when it starts, then START and its finish time when it ends,
# before its exit file. Without a clock reading it writes nothing.
sluice_stamp() {
	sluice_now=$(date +%s) || return 0
	if [ -n "${2:-}" ]; then
		sluice_put "$sluice_dir/$1.time" "$2 $sluice_now"
	else
		sluice_put "$sluice_dir/$1.time" "$sluice_now"
	fi
}

# sluice_start NAME ... starts a container (see sluice_run) in the background.
sluice_start() {
	if [ -z "$sluice_stop" ]; then
		sluice_run "$@" &
		sluice_pids="$sluice_pids $!"
	fi
}

# sluice_rev_stat PATH prints the mode, as ls shows it, and the owner's uid of
# PATH itself: a symbolic link is not followed. (stat -c is not POSIX.)
# shellcheck disable=SC2012 # one path, numeric owner
sluice_rev_stat() {
	ls -ldn -- "$1" 2>/dev/null | awk '{ print $1, $3 }'
}

# sluice_root_check ROOT UID tells whether ROOT, the node's directory of
# socket directories, is safe for the socket directory of user UID: it
# prints why not, naming the path and its owner, and returns 1 when it is
# not. Whoever may rename an entry of a directory on the way to a socket
# directory can move it away and put one of their own in its place, or take
# the relay's address once it is gone; so, as OpenSSH's StrictModes asks of
# the files it trusts:
#
#   - every directory from / down to ROOT, both as ROOT names it and as it
#     resolves (cd -P), is owned by root (uid 0) or by UID: the owner of a
#     directory may rename anything in it, whatever its mode;
#   - none of them is writable by its group or by others, unless it has the
#     sticky bit, as /tmp has: then the others may add entries but not
#     rename or remove those of UID (a sticky directory of root's, or of
#     UID's own, as the job or the tunnel makes a missing ROOT);
#   - every symbolic link met on the way is owned by root or by UID (a link
#     cannot be changed, only replaced, which its directory's rule covers).
#
# The links inside a link's target are trusted as they resolve now.
# shellcheck disable=SC2012 # one path at a time, numeric owner
sluice_root_check() {
	sluice_rc_path=$1
	while :; do
		sluice_root_check_entry "$sluice_rc_path" "$2" || return 1
		[ "$sluice_rc_path" = / ] && break
		sluice_rc_path=${sluice_rc_path%/*}
		sluice_rc_path=${sluice_rc_path:-/}
	done
	if ! sluice_rc_path=$(cd -P -- "$1" 2>/dev/null && pwd -P); then
		echo "$1 cannot be resolved"
		return 1
	fi
	while :; do
		sluice_root_check_entry "$sluice_rc_path" "$2" || return 1
		[ "$sluice_rc_path" = / ] && break
		sluice_rc_path=${sluice_rc_path%/*}
		sluice_rc_path=${sluice_rc_path:-/}
	done
}

# sluice_root_check_entry PATH UID checks one entry on the way (see
# sluice_root_check): a link, then the directory it resolves to, or a
# directory.
# shellcheck disable=SC2012 # one path at a time, numeric owner
sluice_root_check_entry() {
	sluice_rc_ls=$(ls -ldn -- "$1" 2>/dev/null | awk '{ print $1, $3 }')
	case $sluice_rc_ls in
	l*)
		sluice_root_check_owner "$1" "${sluice_rc_ls#* }" "$2" "the symbolic link" || return 1
		sluice_rc_ls=$(ls -ldn -- "$1/." 2>/dev/null | awk '{ print $1, $3 }')
		;;
	esac
	case $sluice_rc_ls in
	d*) ;;
	*)
		echo "$1 is not a directory"
		return 1
		;;
	esac
	sluice_root_check_owner "$1" "${sluice_rc_ls#* }" "$2" "the directory" || return 1
	case ${sluice_rc_ls%% *} in
	?????????[tT]*) ;;
	?????w* | ????????w*)
		echo "$1 is writable by others (${sluice_rc_ls%% *}) and not sticky: any of them could rename what it holds"
		return 1
		;;
	esac
}

# sluice_root_check_owner PATH OWNER UID WHAT fails unless OWNER is 0 or UID.
# shellcheck disable=SC2012 # one path, for the owner's name
sluice_root_check_owner() {
	if [ "$2" = 0 ] || [ "$2" = "$3" ]; then
		return 0
	fi
	echo "$4 $1 is owned by uid $2 ($(ls -ld -- "$1" 2>/dev/null | awk '{ print $3 }')), not by root or uid $3: its owner could rename what it holds"
	return 1
}

# sluice_rev_check_root ROOT makes ROOT when it is missing, sticky and open to
# all as /tmp is (every user of the node keeps socket directories there), and
# fails the job unless this job's user can make a directory in it that nobody
# but root and this user can move or take away: ROOT and every directory
# above it must be theirs, and not writable by others unless sticky
# (sluice_root_check). A ROOT another user made first is refused: its owner
# could rename this job's socket directory and bind the relay's address.
sluice_rev_check_root() {
	if [ ! -e "$1" ]; then
		mkdir -p -- "$1" 2>/dev/null && chmod 1777 -- "$1" 2>/dev/null
	fi
	if [ ! -d "$1" ] || [ ! -w "$1" ] || [ ! -x "$1" ]; then
		sluice_fail 1 "reverse tunnel: socket directory root $1 is not usable: it is not a directory this job's user can write to"
	fi
	sluice_rev_why=$(sluice_root_check "$1" "$sluice_uid") ||
		sluice_fail 1 "reverse tunnel: socket directory root $1 is not safe: $sluice_rev_why (the site should make it owned by root, mode 1777, in directories only root can write)"
}

# sluice_rev_make_dir DIR makes the pod's socket directory afresh, drwx------
# and owned by this job's user whatever the umask. One left by an earlier run
# on this node (a requeue) is removed first, with its stale sockets, and the
# tunnel's old session ends with it.
sluice_rev_make_dir() {
	if [ -e "$1" ] || [ -L "$1" ]; then
		case $(sluice_rev_stat "$1") in
		d*" $sluice_uid") rm -rf -- "$1" || sluice_fail 1 "reverse tunnel: cannot remove $1, left by an earlier run" ;;
		*) sluice_fail 1 "reverse tunnel: $1 exists and is not a directory of this job's user (uid $sluice_uid)" ;;
		esac
	fi
	# The tunnel's session may make the directory in the meantime (it does
	# mkdir -p as the same user): that one is taken, after the check below.
	if ! mkdir -m 700 -- "$1" 2>/dev/null && { [ -L "$1" ] || [ ! -d "$1" ]; }; then
		sluice_fail 1 "reverse tunnel: cannot make the socket directory $1"
	fi
	sluice_rev_made=1
	sluice_rev_mode=$(sluice_rev_stat "$1")
	case $sluice_rev_mode in
	"drwx------ $sluice_uid" | "drwx------. $sluice_uid") ;;
	*) sluice_fail 1 "reverse tunnel: the socket directory $1 is '$sluice_rev_mode'; want drwx------ owned by uid $sluice_uid" ;;
	esac
}

# sluice_rev_start_relay ADDR PORTS starts the relay in the background. Its
# messages go to the job's output, and to a file for the job's failure
# message; the copy ignores SIGTERM, so that it ends with the relay and loses
# nothing. The copy's input ends when the relay does, however it ends: the
# copy then tells this shell with SIGUSR1 (sluice_rev_relay_lost).
sluice_rev_start_relay() {
	if [ ! -x "$sluice_relay" ]; then
		sluice_fail 1 "reverse tunnel: the relay $sluice_relay is missing or not executable on this node"
	fi
	sluice_relay_err=$sluice_tmp/relay.err
	mkfifo -m 600 "$sluice_tmp/relay.fifo" || sluice_fail 1 "reverse tunnel: cannot make a fifo for the relay"
	trap sluice_rev_relay_lost USR1
	(
		trap '' TERM INT
		tee "$sluice_relay_err" >&2
		kill -s USR1 "$$" 2>/dev/null
	) <"$sluice_tmp/relay.fifo" &
	sluice_relay_copy=$!
	"$sluice_relay" --addr "$1" --dir "$sluice_rev_dir" --forward --port-file "$SLUICE_PORT_FILE" \
		--parent-pid "$$" 2>"$sluice_tmp/relay.fifo" &
	sluice_relay_pid=$!
}

# sluice_rev_relay_lost runs when the relay has exited (SIGUSR1, from its
# output's copy), unless the job is already stopping. Before the tunnel is
# up sluice_rev_wait fails the job with the relay's message. After, the
# containers are stopped and the job fails (sluice_rev_stop says why): the
# names the job maps point at the relay's address, which nobody holds now
# and any user of the node could bind.
# shellcheck disable=SC2317 # called by trap
sluice_rev_relay_lost() {
	if [ -n "$sluice_stop" ] || [ -z "${sluice_relay_pid:-}" ]; then
		return 0
	fi
	sluice_rev_lost=1
	if [ -n "${sluice_rev_up:-}" ]; then
		sluice_forward
	fi
}

# sluice_rev_wait TIMEOUT SOCKET... waits up to TIMEOUT seconds (at least
# TIMEOUT seconds, less than one more) for what the job has of the tunnel: the
# relay's readiness file and each SOCKET of the tunnel in the socket
# directory, the SOCKS proxy (see sluice_rev_socks_ready). It fails the job
# naming what is missing, or with the relay's own message when the relay ends
# first.
sluice_rev_wait() {
	sluice_rev_timeout=$1
	shift
	sluice_rev_deadline=$(($(date +%s) + sluice_rev_timeout))
	while :; do
		if [ -n "$sluice_stop" ]; then
			exit 143
		fi
		sluice_rev_why=
		if [ -n "${sluice_rev_lost:-}" ] || ! kill -0 "$sluice_relay_pid" 2>/dev/null; then
			sluice_rev_relay_status
			sluice_fail 1 "reverse tunnel: the relay exited $sluice_rev_how before the tunnel was up: $sluice_rev_msg"
		fi
		if [ ! -e "$sluice_rev_dir/$sluice_rev_ready_file" ]; then
			sluice_rev_why="the relay is not ready (no $sluice_rev_ready_file)"
		fi
		sluice_rev_missing=
		for sluice_rev_sock in "$@"; do
			if [ ! -S "$sluice_rev_dir/$sluice_rev_sock" ]; then
				sluice_rev_missing="$sluice_rev_missing $sluice_rev_sock"
			fi
		done
		if [ -n "$sluice_rev_missing" ]; then
			sluice_rev_why="${sluice_rev_why:+$sluice_rev_why; }the tunnel's sockets are missing:$sluice_rev_missing (the pod's shadow makes them over SSH)"
		fi
		if [ -z "$sluice_rev_why" ]; then
			return 0
		fi
		if [ "$(date +%s)" -gt "$sluice_rev_deadline" ]; then
			sluice_fail 1 "reverse tunnel not up after ${sluice_rev_timeout}s in $sluice_rev_dir: $sluice_rev_why"
		fi
		sleep 0.1 2>/dev/null || sleep 1
	done
}

# sluice_rev_relay_status waits for the relay, which has ended, and leaves
# its exit status, said as "with status N", in sluice_rev_how and its last
# message in sluice_rev_msg. Now and then bash answers -1 for a child that
# was killed while a trap ran (seen under load, asking again does not help):
# that is said as such rather than as a status.
sluice_rev_relay_status() {
	wait "$sluice_relay_pid"
	sluice_rev_code=$?
	sluice_rev_how="with status $sluice_rev_code"
	if [ "$sluice_rev_code" -lt 0 ]; then
		sluice_rev_how="(the shell lost its exit status)"
	fi
	sluice_relay_pid=
	wait "$sluice_relay_copy"
	sluice_rev_msg=$(awk 'NF { l = $0 } END { print l }' "$sluice_relay_err" 2>/dev/null)
	sluice_rev_msg=${sluice_rev_msg:-no message}
}

# sluice_rev_stop stops the relay and removes the socket directory, which ends
# the tunnel's session on the node too. When the relay ended while the job
# ran (sluice_rev_relay_lost), it says so, last, and the job's exit code,
# sluice_exit's sluice_code, becomes 1.
# shellcheck disable=SC2317 # called by sluice_exit
sluice_rev_stop() {
	trap '' USR1
	if [ -n "${sluice_rev_lost:-}" ] && [ -n "${sluice_relay_pid:-}" ]; then
		sluice_rev_relay_status
		echo "sluice: reverse tunnel: the relay exited $sluice_rev_how while the job ran, and the containers were stopped: $sluice_rev_msg" >&2
		sluice_code=1
	fi
	if [ -n "${sluice_relay_pid:-}" ]; then
		kill -s TERM "$sluice_relay_pid" 2>/dev/null
		# Its output's copy ends with it and signals this shell, which
		# must still be there to ignore it.
		wait "$sluice_relay_copy"
	fi
	if [ -n "${sluice_rev_made:-}" ]; then
		rm -rf -- "$sluice_rev_dir"
	fi
}

cd "$sluice_dir" || exit 1
trap sluice_exit EXIT
trap sluice_forward TERM INT
# A requeued job runs again: the exit codes of its last run are gone.
rm -f -- job.exit hello.exit hello.time
if [ -n "${SLURM_JOB_ID:-}" ]; then
	sluice_put "$sluice_dir/job.id" "$SLURM_JOB_ID"
fi
for sluice_tool in awk mkfifo mktemp setsid; do
	command -v "$sluice_tool" >/dev/null || sluice_fail 127 "$sluice_tool not found in PATH"
done
sluice_setsid=$(command -v setsid)
sluice_tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice.XXXXXX") || sluice_fail 1 "cannot make a temporary directory"

# The reverse tunnel (SPEC S5), up before the pre-exec snippet and the
# containers, as the pod asks for it: the pod's socket directory; for
# forwards, the relay and the tunnel's sockets, which the pod's shadow makes
# over SSH; the SOCKS proxy on 127.0.0.1, which the shadow opens over SSH.
sluice_rev_root=/tmp/sluice
sluice_rev_dir=$sluice_rev_root/e7635fd280c28aa256253decb3398ff4
sluice_rev_ready_file=rev-relay.ready
sluice_relay=/scratch/alice/.sluice/.bin/sluice-relay-0123456789abcdef
for sluice_tool in date id ls pwd tee; do
	command -v "$sluice_tool" >/dev/null || sluice_fail 127 "$sluice_tool not found in PATH"
done
if [ -z "$sluice_rev_root" ]; then
	sluice_fail 1 "reverse tunnel: the site sets no SocketDirRoot, so the job has no socket directory for its tunnel"
fi
sluice_uid=$(id -u) || sluice_fail 1 "reverse tunnel: cannot tell the user id"
sluice_rev_check_root "$sluice_rev_root"
sluice_rev_make_dir "$sluice_rev_dir"
# The relay's forward entry (fwd.sock) joins the tunnel only to listeners of
# this job's user. The job may listen on its own address, SLUICE_POD_IP, so
# that pods on one node can share a port, and may write the ports it picks
# at run time to SLUICE_PORT_FILE, "containerPort=actualPort" a line. One
# left by an earlier run (a requeue) is removed. APPTAINERENV_ passes them
# through --cleanenv.
SLUICE_POD_IP=127.120.240.157
SLUICE_PORT_FILE=$sluice_dir/ports
rm -f -- "$SLUICE_PORT_FILE" || sluice_fail 1 "reverse tunnel: cannot remove the port file $SLUICE_PORT_FILE"
APPTAINERENV_SLUICE_POD_IP=$SLUICE_POD_IP
APPTAINERENV_SLUICE_PORT_FILE=$SLUICE_PORT_FILE
export SLUICE_POD_IP SLUICE_PORT_FILE APPTAINERENV_SLUICE_POD_IP APPTAINERENV_SLUICE_PORT_FILE
sluice_rev_start_relay 127.120.240.157
sluice_rev_wait 120
sluice_rev_up=1
printf 'sluice: forward entry up: relay on %s, entry in %s\n' 127.120.240.157 "$sluice_rev_dir" >&2

sluice_runtime=$(command -v apptainer) || sluice_fail 127 "apptainer not found in PATH"

# Containers, all together.
sluice_start hello /scratch/alice/.sluice/default-0a1b2c3d-0000-4000-8000-000000000001/env/hello '' "$sluice_runtime" exec --env-file /scratch/alice/.sluice/default-0a1b2c3d-0000-4000-8000-000000000001/env/hello docker://ghcr.io/org/redis-client:7 sh -c 'printf '\''PING\r\n'\'' | nc redis 6379' --greeting 'hi there'
sluice_result=0
for sluice_pid in $sluice_pids; do
	sluice_wait "$sluice_pid"
	if [ "$sluice_result" -eq 0 ]; then
		sluice_result=$sluice_code
	fi
done
if [ "$sluice_result" -eq 0 ] && [ -n "$sluice_stop" ]; then
	sluice_result=143
fi
exit "$sluice_result"
