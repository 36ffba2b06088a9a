#!/usr/bin/env bash
# Runs the walltime-renewal benchmark (issue 27, item 4; SPEC S16) on the
# rig: an HTTP service with a 2-minute time limit renewed 30 s before it,
# and the same service without renewal, each under a client sending a GET
# every 100 ms through the pod's IP and one through a Service, for the
# duration given (default 10m). It is TestRenewalOutlivesTheTimeLimit with
# SLUICE_RENEW_FOR set (test/e2e/renew_bench_test.go); its log ends with the
# table. The rig must be up (make rig-up). Run as root from anywhere in the
# repository, holding the rig's tests lock, e.g.
#   flock /var/lib/sluice-rig/tests.lock bench/renewal.sh 10m
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10m}
if [[ ! $duration =~ ^([0-9]+)m$ ]] || (( BASH_REMATCH[1] < 3 )); then
	echo "bench/renewal.sh: the duration is whole minutes, at least 3: 10m, not $duration" >&2
	exit 2
fi
timeout=$(( BASH_REMATCH[1] + 15 ))m
SLUICE_RENEW_FOR=$duration go test -tags e2e -count=1 -timeout "$timeout" \
	-run '^TestRenewalOutlivesTheTimeLimit$' -v ./test/e2e/
