#!/bin/bash
#SBATCH --job-name=0a1b2c3d-0000-4000-8000-000000000001
#SBATCH --output=/scratch/alice/.sluice/default-0a1b2c3d-0000-4000-8000-000000000001/job.out
#SBATCH --error=/scratch/alice/.sluice/default-0a1b2c3d-0000-4000-8000-000000000001/job.out
#SBATCH --chdir=/scratch/alice/.sluice/default-0a1b2c3d-0000-4000-8000-000000000001
#SBATCH --partition=cpu
#SBATCH --time=01:00:00
#SBATCH --cpus-per-task=4
#SBATCH --mem=16384M

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

# The site's command prefix (Site.CommandPrefix) runs as it is, in this
# shell, before the pod's pre-exec snippet; a non-zero status fails the job.
sluice_command_prefix='export X=1'
eval "$sluice_command_prefix" || sluice_fail $? "the site's command prefix failed with exit code $?"
set +eu
cd "$sluice_dir" || exit 1

sluice_runtime=$(command -v ch-run) || sluice_fail 127 "ch-run not found in PATH"
# ch-run needs USER.
if [ -z "${USER:-}" ]; then
	USER=$(id -un) || sluice_fail 1 "cannot tell the user name"
	export USER
fi

# Containers, all together.
sluice_start hello /scratch/alice/.sluice/default-0a1b2c3d-0000-4000-8000-000000000001/env/hello '' "$sluice_runtime" /shared/ch/busybox -- echo --greeting 'hi there'
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
