#!/usr/bin/env bash
# Measures what a sluice-tunnel process needs, to size the requests and
# limits of the shadow's tunnel containers (internal/shadow/resources.go):
# runs a command (e.g. one of the tunnel benchmarks), samples every
# sluice-tunnel process it starts every 100 ms, and prints for each its
# mode, VmRSS once started (idle), its last VmRSS (after the load), its
# highest VmRSS, VmHWM, CPU seconds and the highest CPU use over a 1 s
# window (cores). Run as root on the rig,
# holding its lock:
#   flock /tmp/sluice-rig.lock bench/tunnelmem.sh bench/tunnelfwd.sh -rounds 2 -paths sluice
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }
"$@" >&2 &
root=$!
hz=$(getconf CLK_TCK)

declare -A mode idle last rss hwm ticks wticks wstart peak

# descends tells whether pid is a descendant of the command.
descends() {
	local p=$1 key val _
	while [ "$p" -gt 1 ]; do
		[ "$p" = "$root" ] && return 0
		val=
		while read -r key val _; do
			[ "$key" = PPid: ] && break
		done <"/proc/$p/status" || return 1
		[ -n "$val" ] || return 1
		p=$val
	done
	return 1
}

sample() {
	local pid key val _ now us milli
	local -a args st
	now=$EPOCHREALTIME
	for pid in $(pgrep -x sluice-tunnel || true); do
		if [ -z "${mode[$pid]:-}" ]; then
			descends "$pid" 2>/dev/null || continue
			mapfile -d '' args <"/proc/$pid/cmdline" 2>/dev/null || continue
			mode[$pid]=${args[1]:-?}
			wstart[$pid]=$now
			peak[$pid]=0
		fi
		while read -r key val _; do
			case $key in
			VmRSS:)
				rss[$pid]=$(( val > ${rss[$pid]:-0} ? val : ${rss[$pid]:-0} ))
				idle[$pid]=${idle[$pid]:-$val}
				last[$pid]=$val
				;;
			VmHWM:) hwm[$pid]=$val ;;
			esac
		done <"/proc/$pid/status" 2>/dev/null || continue
		read -ra st <"/proc/$pid/stat" 2>/dev/null || continue
		# utime and stime are fields 14 and 15; the command name (field 2)
		# holds no space here.
		ticks[$pid]=$(( st[13] + st[14] ))
		wticks[$pid]=${wticks[$pid]:-${ticks[$pid]}}
		# Every second or so: the CPU used since the last window, in
		# thousandths of a core.
		us=$(( ${now/./} - ${wstart[$pid]/./} ))
		if [ "$us" -ge 1000000 ]; then
			milli=$(( (ticks[$pid] - wticks[$pid]) * 1000000000 / hz / us ))
			[ "$milli" -gt "${peak[$pid]}" ] && peak[$pid]=$milli
			wticks[$pid]=${ticks[$pid]}
			wstart[$pid]=$now
		fi
	done
}

while kill -0 "$root" 2>/dev/null; do
	sample
	sleep 0.1
done
status=0
wait "$root" || status=$?

printf '%-8s %-8s %10s %10s %12s %10s %8s %14s\n' pid mode idle_MiB last_MiB peakRSS_MiB VmHWM_MiB cpu_s peak_cores_1s
for pid in "${!mode[@]}"; do
	awk -v p="$pid" -v m="${mode[$pid]}" -v i="${idle[$pid]:-0}" -v l="${last[$pid]:-0}" -v r="${rss[$pid]:-0}" -v h="${hwm[$pid]:-0}" \
		-v t="${ticks[$pid]:-0}" -v hz="$hz" -v c="${peak[$pid]}" \
		'BEGIN { printf "%-8s %-8s %10.1f %10.1f %12.1f %10.1f %8.2f %14.3f\n", p, m, i/1024, l/1024, r/1024, h/1024, t/hz, c/1000 }'
done
exit "$status"
