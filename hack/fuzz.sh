#!/usr/bin/env bash
# Runs every fuzz target of the module for a while each: hack/fuzz.sh [duration]
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-30s}
grep -rl --include='*_test.go' '^func Fuzz' . | while read -r file; do
	pkg=./$(dirname "${file#./}")
	grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | cut -d' ' -f2 | while read -r target; do
		echo "fuzz $pkg $target ($fuzztime)"
		go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" "$pkg"
	done
done
