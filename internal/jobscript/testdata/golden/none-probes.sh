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
	if [ -n "$sluice_tmp" ]; then
		: >"$sluice_tmp/stopping" # the probes kill nothing more
	fi
	sluice_pre_stop
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
	sluice_halt=1
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
	sluice_up
	sluice_wait "$sluice_child"
	sluice_status=$sluice_code
	rm -f "$sluice_tmp/$sluice_name.pid"
	kill -s KILL -- "-$sluice_child" 2>/dev/null
	sluice_wait "$sluice_log"
	rm -f "$sluice_fifo"
	if [ -n "$sluice_started" ]; then
		sluice_stamp "$sluice_name" "$sluice_started"
	fi
	if sluice_restarting; then
		return "$sluice_status"
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
# sluice_up runs the postStart hook of the container sluice_run just
# started, if it has one, then writes the container's process id to the
# temporary NAME.pid: its probes begin then.
sluice_up() {
	if ! sluice_post_start; then
		return 0
	fi
	sluice_put "$sluice_tmp/$sluice_name.pid" "$sluice_child"
}

# sluice_probe NAME ROLE GATE DELAY PERIOD TIMEOUT SUCCESS FAILURE CHECK...
# runs CHECK, the ROLE (readiness, liveness or startup) probe of container
# NAME, every PERIOD seconds, each within TIMEOUT seconds, from DELAY
# seconds after each run of NAME began (when the temporary NAME.GATE took
# its process id: see containerData.Gate), until NAME.exit appears or the
# job's shell ends. SUCCESS checks in a row pass it, FAILURE in a row fail
# it (sluice_probed).
# shellcheck disable=SC2317 # called through sluice_probe or sluice_hook
sluice_probe() {
	sluice_pname=$1 sluice_role=$2 sluice_gate=$sluice_tmp/$1.$3 sluice_delay=$4
	sluice_period=$5 sluice_timeout=$6 sluice_success=$7 sluice_failure=$8
	sluice_err=$sluice_tmp/$1.$2.err sluice_said=
	shift 8
	sluice_seen=
	while sluice_alive; do
		if ! sluice_gate_pid || [ "$sluice_gpid" = "$sluice_seen" ]; then
			sleep 1
			continue
		fi
		sluice_seen=$sluice_gpid
		sleep "$sluice_delay"
		sluice_ok=0 sluice_bad=0 sluice_ready=
		while sluice_alive && sluice_gate_pid && [ "$sluice_gpid" = "$sluice_seen" ]; do
			if sluice_check "$@"; then
				sluice_ok=$((sluice_ok + 1)) sluice_bad=0 sluice_said=
			else
				sluice_bad=$((sluice_bad + 1)) sluice_ok=0
				sluice_why
			fi
			if ! sluice_probed; then
				break
			fi
			sleep "$sluice_period"
		done
	done
}

# sluice_alive tells whether sluice_probe's container may run: it has not
# ended and the job's shell runs.
# shellcheck disable=SC2317 # called through sluice_probe
sluice_alive() {
	[ ! -e "$sluice_dir/$sluice_pname.exit" ] && kill -0 "$$" 2>/dev/null
}

# sluice_gate_pid reads sluice_probe's gate file into sluice_gpid.
# shellcheck disable=SC2317 # called through sluice_probe
sluice_gate_pid() {
	sluice_gpid=
	{ read -r sluice_gpid <"$sluice_gate"; } 2>/dev/null
}

# sluice_probed acts on sluice_probe's counts: a readiness probe writes 1
# to NAME.ready once it passed, 0 once it failed; a startup probe that
# passed writes 1 to NAME.started and the run's process id to the
# temporary NAME.up, for the other probes; a startup or liveness probe
# that failed kills the run (sluice_kill). It fails when the probe is
# done with this run.
# shellcheck disable=SC2317 # called through sluice_probe
sluice_probed() {
	case $sluice_role in
	readiness)
		if [ "$sluice_ok" -ge "$sluice_success" ] && [ "$sluice_ready" != 1 ]; then
			sluice_ready=1
			sluice_put "$sluice_dir/$sluice_pname.ready" 1
		elif [ "$sluice_bad" -ge "$sluice_failure" ] && [ "$sluice_ready" != 0 ]; then
			sluice_ready=0
			sluice_put "$sluice_dir/$sluice_pname.ready" 0
		fi
		;;
	startup)
		if [ "$sluice_ok" -ge "$sluice_success" ]; then
			sluice_put "$sluice_tmp/$sluice_pname.up" "$sluice_seen"
			sluice_put "$sluice_dir/$sluice_pname.started" 1
			return 1
		fi
		if [ "$sluice_bad" -ge "$sluice_failure" ]; then
			sluice_kill "$sluice_pname" "$sluice_seen" startup "startup probe of container $sluice_pname failed $sluice_bad times"
			return 1
		fi
		;;
	liveness)
		if [ "$sluice_bad" -ge "$sluice_failure" ]; then
			sluice_kill "$sluice_pname" "$sluice_seen" liveness "liveness probe of container $sluice_pname failed $sluice_bad times"
			return 1
		fi
		;;
	esac
}

# sluice_why says in the job's output why sluice_probe's check failed, the
# last line it wrote to its standard error, once until the reason changes
# or a check passes.
# shellcheck disable=SC2317 # called through sluice_probe
sluice_why() {
	sluice_msg=$(awk 'NF { l = $0 } END { print l }' "$sluice_err" 2>/dev/null)
	if [ -n "$sluice_msg" ] && [ "$sluice_msg" != "$sluice_said" ]; then
		printf 'sluice: %s probe of container %s failed: %s\n' "$sluice_role" "$sluice_pname" "$sluice_msg" >&2
	fi
	sluice_said=$sluice_msg
}

# sluice_check CHECK... runs CHECK, in a session of its own, and kills that
# session after sluice_timeout seconds: it fails then. Its standard error
# goes to sluice_err, if set.
# shellcheck disable=SC2317 # called through sluice_probe or sluice_hook
sluice_check() {
	"$@" </dev/null >/dev/null 2>"${sluice_err:-/dev/null}" &
	sluice_cpid=$!
	(
		sleep "$sluice_timeout"
		kill -s KILL -- "-$sluice_cpid" "$sluice_cpid" 2>/dev/null
	) &
	sluice_timer=$!
	wait "$sluice_cpid"
	sluice_ccode=$?
	kill -s KILL "$sluice_timer" 2>/dev/null
	return "$sluice_ccode"
}

# sluice_check_exec NAME ENV_FILE DIR COMMAND... runs an exec probe's
# COMMAND as sluice_run runs a container's.
# shellcheck disable=SC2317 # called through sluice_probe
sluice_check_exec() {
	sluice_env=$2 sluice_cd=$3
	shift 3
	if [ -n "$sluice_cd" ]; then
		cd "$sluice_cd" || exit 1
	fi
	if [ -n "$sluice_env" ]; then
		set -a
		# shellcheck source=/dev/null
		. "$sluice_env"
		set +a
	fi
	exec "$sluice_setsid" "$@"
}

# sluice_check_owned TARGET [--header HEADER]... checks TARGET, a probe's
# tcp://, http:// or https:// target on the node's loopback, with the relay
# (sluice-relay --probe): only a listener of the job's user passes it, never
# another user's that holds the port, and the relay says why a check failed.
# shellcheck disable=SC2317 # called through sluice_probe
sluice_check_owned() {
	exec "$sluice_setsid" "$sluice_probe_relay" --probe "$@"
}

# sluice_check_http URL [-H HEADER]... asks for URL with curl, else wget:
# a status from 200 to 399 passes. Certificates are checked.
# shellcheck disable=SC2317 # called through sluice_probe
sluice_check_http() {
	sluice_url=$1
	shift
	if command -v curl >/dev/null 2>&1; then
		exec "$sluice_setsid" curl -fsS -o /dev/null "$@" -- "$sluice_url"
	fi
	sluice_n=$#
	while [ "$sluice_n" -gt 0 ]; do
		set -- "$@" "--header=$2"
		shift 2
		sluice_n=$((sluice_n - 2))
	done
	exec "$sluice_setsid" wget -q -O /dev/null "$@" -- "$sluice_url"
}

# sluice_check_tcp HOST PORT connects to HOST:PORT with bash, else nc -z.
# shellcheck disable=SC2317 # called through sluice_probe
sluice_check_tcp() {
	if command -v bash >/dev/null 2>&1; then
		exec "$sluice_setsid" bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$1" "$2"
	fi
	exec "$sluice_setsid" nc -z "$1" "$2"
}
# sluice_pre_stop runs the containers' preStop hooks, once, together, each
# within the pod's grace period, and returns when they have ended: the
# containers are stopped after them.
# shellcheck disable=SC2317 # called by trap
sluice_pre_stop() {
	if [ -n "$sluice_pre_stopped" ]; then
		return 0
	fi
	sluice_pre_stopped=1
	sluice_hooks=
	sluice_hook web 20 sluice_check_exec web /scratch/alice/.sluice/default-0a1b2c3d-0000-4000-8000-000000000001/env/web '' sh -c 'kill -USR1 1; sleep 3' &
	sluice_hooks="$sluice_hooks $!"
	sluice_hook db 20 sluice_check_owned http://127.0.0.1:5433/quit &
	sluice_hooks="$sluice_hooks $!"
	sluice_hook app 20 sluice_check_owned http://127.0.0.1:8080/quit &
	sluice_hooks="$sluice_hooks $!"
	for sluice_hook_pid in $sluice_hooks; do
		wait "$sluice_hook_pid"
	done
}

# sluice_hook NAME TIMEOUT CHECK... runs a container's hook and says in the
# job's output how it ended.
# shellcheck disable=SC2317 # called by sluice_pre_stop
sluice_hook() {
	sluice_hname=$1 sluice_timeout=$2
	shift 2
	if sluice_check "$@"; then
		echo "sluice: preStop hook of container $sluice_hname ran"
	else
		echo "sluice: preStop hook of container $sluice_hname failed with exit code $sluice_ccode"
	fi
}
# sluice_start_kept POLICY NAME ... starts a container that its probes or
# postStart hook can kill under sluice_keep, in the background.
sluice_start_kept() {
	if [ -z "$sluice_stop" ]; then
		sluice_keep "$@" &
		sluice_pids="$sluice_pids $!"
	fi
}

# sluice_keep POLICY NAME ENV_FILE DIR COMMAND... runs a container (see
# sluice_run) and runs it again each time its liveness or startup probe or
# its postStart hook killed it and POLICY (the pod's restartPolicy) says
# so: Always, or OnFailure when it did not exit 0. Each such run is counted
# in NAME.restarts, "COUNT CODE START END REASON", before the back-off of
# the kubelet: the first restart at once (the kubelet backs off from the
# second on), then 10 s, doubling up to 300 s, from 0 again after a run of
# 10 minutes. A container that ends by itself is not run again: the pod is
# a batch job. Told to stop (SIGTERM), it runs nothing again and writes
# NAME.exit.
sluice_keep() {
	sluice_policy=$1
	shift
	sluice_halt='' sluice_restarts=0 sluice_backoff=0
	while :; do
		sluice_again=
		sluice_run "$@"
		sluice_child=
		if [ -z "$sluice_again" ]; then
			return "$sluice_status"
		fi
		sluice_restarts=$((sluice_restarts + 1))
		sluice_put "$sluice_dir/$1.restarts" "$sluice_restarts $sluice_status ${sluice_started:-0} ${sluice_now:-0} $sluice_reason"
		if [ "${sluice_now:-0}" -ge $((${sluice_started:-0} + 600)) ]; then
			sluice_backoff=0
		fi
		echo "sluice: container $1 ended with exit code $sluice_status; restart $sluice_restarts in $sluice_backoff s (restartPolicy $sluice_policy)"
		# The back-off's sleep stands for the container: SIGTERM ends it.
		sleep "$sluice_backoff" &
		sluice_child=$!
		if [ -z "$sluice_halt" ]; then
			wait "$sluice_child"
		fi
		kill "$sluice_child" 2>/dev/null
		sluice_child=
		if [ -n "$sluice_halt" ]; then
			sluice_put "$sluice_dir/$1.exit" "$sluice_status"
			return "$sluice_status"
		fi
		sluice_backoff=$((sluice_backoff * 2))
		if [ "$sluice_backoff" -eq 0 ]; then
			sluice_backoff=10
		elif [ "$sluice_backoff" -gt 300 ]; then
			sluice_backoff=300
		fi
	done
}

# sluice_restarting tells sluice_run, once its container ended, whether
# sluice_keep runs it again (sluice_again): it does when a probe or hook
# killed it (the temporary NAME.kill holds the reason), the restart policy
# says so and the job is not being stopped. A container killed and not run
# again has the reason in NAME.killed.
sluice_restarting() {
	sluice_again='' sluice_reason=''
	if ! { read -r sluice_reason <"$sluice_tmp/$sluice_name.kill"; } 2>/dev/null; then
		return 1
	fi
	rm -f "$sluice_tmp/$sluice_name.kill"
	case ${sluice_halt:-}/${sluice_policy:-}/$sluice_status in
	/Always/* | /OnFailure/[1-9]*)
		sluice_again=1
		return 0
		;;
	/*)
		echo "sluice: container $sluice_name ended with exit code $sluice_status and is not run again (restartPolicy ${sluice_policy:-Never})"
		;;
	esac
	sluice_put "$sluice_dir/$sluice_name.killed" "$sluice_reason"
	return 1
}

# sluice_kill NAME PID REASON WHY kills the run PID of container NAME as
# the kubelet kills a container: SIGTERM to its process group, SIGKILL
# after the pod's grace period. It says WHY in the job's output, leaves
# REASON in the temporary NAME.kill first, for sluice_restarting, and sets
# the container's readiness and startup back to 0. A job being stopped
# kills nothing more.
# shellcheck disable=SC2317 # called through sluice_probe
sluice_kill() {
	if [ -e "$sluice_tmp/stopping" ]; then
		return 0
	fi
	echo "sluice: $4: killing the container"
	sluice_put "$sluice_tmp/$1.kill" "$3"
	for sluice_flag in "$sluice_dir/$1.ready" "$sluice_dir/$1.started"; do
		if [ -e "$sluice_flag" ]; then
			sluice_put "$sluice_flag" 0
		fi
	done
	# The run itself too: a hook may end before the run's setsid made its
	# process group.
	kill -s TERM -- "-$2" "$2" 2>/dev/null
	sluice_waited=0
	while [ "$sluice_waited" -lt "$sluice_grace" ] && { kill -s 0 -- "-$2" || kill -s 0 "$2"; } 2>/dev/null; do
		sleep 1
		sluice_waited=$((sluice_waited + 1))
	done
	kill -s KILL -- "-$2" "$2" 2>/dev/null
}

# sluice_post_start runs the postStart hook of the container sluice_run
# just started, if it has one, within the pod's grace period, and fails
# when the hook does: the container is killed then (sluice_kill).
sluice_post_start() {
	sluice_timeout=$sluice_grace
	case $sluice_name in
	app)
		set -- sluice_check_exec app /scratch/alice/.sluice/default-0a1b2c3d-0000-4000-8000-000000000001/env/app '' sh -c 'echo '\''$started'\'' > /tmp/started'
		;;
	*)
		return 0
		;;
	esac
	if sluice_check "$@"; then
		echo "sluice: postStart hook of container $sluice_name ran"
		return 0
	fi
	if [ -n "$sluice_halt" ]; then
		kill -s KILL -- "-$sluice_cpid" 2>/dev/null
		return 1
	fi
	sluice_kill "$sluice_name" "$sluice_child" postStart "postStart hook of container $sluice_name failed with exit code $sluice_ccode" &
	return 1
}

# sluice_start NAME ... starts a container (see sluice_run) in the background.
# shellcheck disable=SC2317 # unused when every container is kept
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
rm -f -- job.exit web.exit web.time web.ready checked.exit checked.time checked.ready db.exit db.time db.ready hello.exit hello.time app.exit app.time app.ready app.restarts app.killed app.started side.exit side.time side.restarts side.killed
if [ -n "${SLURM_JOB_ID:-}" ]; then
	sluice_put "$sluice_dir/job.id" "$SLURM_JOB_ID"
fi
for sluice_tool in awk mkfifo mktemp setsid; do
	command -v "$sluice_tool" >/dev/null || sluice_fail 127 "$sluice_tool not found in PATH"
done
sluice_setsid=$(command -v setsid)
sluice_tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice.XXXXXX") || sluice_fail 1 "cannot make a temporary directory"
# Probes on the node's loopback are checked with the relay.
sluice_probe_relay=/scratch/alice/.sluice/.bin/sluice-relay-0123456789abcdef
sluice_pre_stopped=
sluice_grace=20

# Containers with a readiness probe are not ready until it passes, nor
# started, with a startup probe, until it does.
sluice_put "$sluice_dir/web.ready" 0
sluice_put "$sluice_dir/checked.ready" 0
sluice_put "$sluice_dir/db.ready" 0
sluice_put "$sluice_dir/app.ready" 0
sluice_put "$sluice_dir/app.started" 0

# Containers, all together.
sluice_start web /scratch/alice/.sluice/default-0a1b2c3d-0000-4000-8000-000000000001/env/web '' sh -c 'sleep 600' --greeting 'hi there'
sluice_start checked /scratch/alice/.sluice/default-0a1b2c3d-0000-4000-8000-000000000001/env/checked '' sh -c 'sleep 600' --greeting 'hi there'
sluice_start db /scratch/alice/.sluice/default-0a1b2c3d-0000-4000-8000-000000000001/env/db '' sh -c 'sleep 600' --greeting 'hi there'
sluice_start hello /scratch/alice/.sluice/default-0a1b2c3d-0000-4000-8000-000000000001/env/hello '' sh -c 'sleep 600' --greeting 'hi there'
sluice_start_kept OnFailure app /scratch/alice/.sluice/default-0a1b2c3d-0000-4000-8000-000000000001/env/app '' sh -c 'sleep 600' --greeting 'hi there'
sluice_start_kept OnFailure side /scratch/alice/.sluice/default-0a1b2c3d-0000-4000-8000-000000000001/env/side '' sh -c 'sleep 600' --greeting 'hi there'
# Probes, beside their containers.
sluice_probe web readiness pid 2 3 1 1 3 sluice_check_owned 'http://127.0.0.1:8080/healthz?who='\''me'\''&x=$(id)' --header 'X-Probe: it'\''s "$HOME"' &
sluice_probe checked readiness pid 0 1 2 2 1 sluice_check_exec checked /scratch/alice/.sluice/default-0a1b2c3d-0000-4000-8000-000000000001/env/checked '' sh -c 'test -e "$HOME/ready" && echo '\''$x'\''' &
sluice_probe db readiness pid 0 5 1 1 3 sluice_check_tcp db.example.org 5432 &
sluice_probe app startup pid 0 2 1 1 30 sluice_check_owned http://127.0.0.1:8080/started &
sluice_probe app liveness up 3 5 2 1 3 sluice_check_exec app /scratch/alice/.sluice/default-0a1b2c3d-0000-4000-8000-000000000001/env/app '' sh -c 'test -e "$HOME/alive"' &
sluice_probe app readiness up 0 1 1 1 1 sluice_check_owned tcp://127.0.0.1:8080 &
sluice_probe side liveness pid 0 10 1 1 3 sluice_check_owned tcp://127.0.0.1:9090 &
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
