#!/usr/bin/env bash
# Runs the reconnection-storm benchmark (issue 15, item 4) on the rig:
# 50 sluice-tunnel processes against a login sshd with MaxStartups 3:50:10
# (the rig's login configuration, run by the benchmark on port 2222 of the
# login node), the login node dropping every connection; reconnections at
# once (before) against jittered over a window (after). Run as root from
# anywhere in the repository, holding the rig's lock, e.g.
#   flock /tmp/sluice-rig.lock bench/storm.sh -rounds 3
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -tags bench -o "$work/storm" ./bench/storm
"$work/storm" "$@"
