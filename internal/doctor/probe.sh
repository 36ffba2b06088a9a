# The doctor's probe (internal/doctor), run on a compute node as the only
# container of a job of runtime none, after sluice_root_check (the relay
# package's rootcheck.sh), as
#
#   sh -c SCRIPT sluice-doctor SOCKET_DIR_ROOT RUNTIME DONE_FILE WAIT
#
# It prints one "key value" line per fact, then "ready"; it then waits, up
# to WAIT seconds, for DONE_FILE (the doctor writes it once it has checked
# the node's sshd with the socket directory made here), removes that
# directory and prints "done". Every value it prints is read as untrusted
# text by the doctor.
# shellcheck shell=sh
doctor_root=$1
doctor_runtime=$2
doctor_done=$3
doctor_wait=$4
doctor_dir=
doctor_uid=$(id -u)
# A cancelled probe removes its socket directory too.
trap 'if [ -n "$doctor_dir" ]; then rm -rf -- "$doctor_dir"; fi; exit 143' TERM INT
if [ -z "${USER:-}" ]; then
	USER=$(id -un)
	export USER
fi
echo "uid $doctor_uid"

if [ -z "$doctor_runtime" ]; then
	echo "runtime none"
elif doctor_path=$(command -v "$doctor_runtime"); then
	doctor_version=$("$doctor_path" --version </dev/null 2>&1 | head -n 1 | cut -c 1-200)
	echo "runtime ok $doctor_path $doctor_version"
else
	echo "runtime missing $doctor_runtime"
fi

if [ -z "$doctor_root" ]; then
	echo "sockroot unset"
else
	doctor_made=ok
	if [ ! -e "$doctor_root" ]; then
		# As the job's script does (reverse.sh.tmpl).
		mkdir -p -- "$doctor_root" 2>/dev/null && chmod 1777 -- "$doctor_root" 2>/dev/null && doctor_made=made
	fi
	if [ ! -d "$doctor_root" ] || [ ! -w "$doctor_root" ] || [ ! -x "$doctor_root" ]; then
		echo "sockroot unusable it is not a directory this job's user can write to"
	elif ! doctor_why=$(sluice_root_check "$doctor_root" "$doctor_uid"); then
		echo "sockroot unsafe $doctor_why"
	elif doctor_dir=$(mktemp -d "$doctor_root/sluice-doctor.XXXXXX" 2>/dev/null); then
		echo "sockroot $doctor_made $doctor_dir"
	else
		echo "sockroot unusable cannot make a directory in it"
	fi
fi

echo "portstart $(cat /proc/sys/net/ipv4/ip_unprivileged_port_start 2>/dev/null)"
echo ready

doctor_i=0
while [ ! -e "$doctor_done" ] && [ "$doctor_i" -lt "$doctor_wait" ]; do
	sleep 1
	doctor_i=$((doctor_i + 1))
done
if [ -n "$doctor_dir" ]; then
	rm -rf -- "$doctor_dir"
fi
echo finished
