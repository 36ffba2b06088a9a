#!/usr/bin/env bash
# Runs the forward-tunnel benchmark (issue 4; SPEC S4, S10) on the rig:
# sluice-tunnel forward against `ssh -J login node -L` and a direct
# connection on the node, interleaved. Run as root from anywhere in the
# repository, with the rig up (bash hack/rig/rig.sh up). Arguments go to
# the program, e.g. bench/tunnelfwd.sh -rounds 6 -paths sluice,openssh,openssh-gcm,direct
# (-rtt 0,10ms,50ms measures every path again across each round trip, added
# between the cluster and the login node by a delaying relay).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -tags bench -o "$work/tunnelfwd" ./bench/tunnelfwd
"$work/tunnelfwd" "$@"
