#!/bin/sh
# Times the snapshot engine against the `git status` floor on generated trees.
# usage: scripts/bench-snapshot.sh [-runs R] [N...]   (default N: 10000 100000)
# The timing runs inside one Go process, so process start-up of this script
# and of `go` is not measured; each git call it makes is.
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/snapbench" ./test/bench/cmd/snapbench
"$bin/snapbench" "$@"
