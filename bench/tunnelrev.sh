#!/bin/sh
# Runs the reverse-tunnel benchmark (issues 5 and 6; bench/tunnelrev) on the rig,
# as root, from the module's root; extra arguments go to the benchmark
# (-rounds, -duration, -chains, -rtt 0,10ms,50ms, -cpuprofile DIR, ...). The table goes to standard
# output, progress to standard error.
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d /tmp/tunnelrev-bin.XXXXXX)
trap 'rm -rf "$bin"' EXIT
go build -tags bench -o "$bin/tunnelrev" ./bench/tunnelrev
"$bin/tunnelrev" "$@"
