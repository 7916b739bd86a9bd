#!/bin/sh
# Times back-to-back session starts on a generated tree (test/bench/synth):
# a fresh start, a second start while the first one's background spare
# preparation is in flight, and a start with a spare ready, side by side
# with `git status --porcelain --untracked-files=all` in the same rounds.
# usage: scripts/bench-back-to-back.sh [-runs R] [-dir D] [N]   (default N: 100000)
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/yolop" ./cmd/yolop
go build -o "$bin/b2bbench" ./test/bench/cmd/b2bbench
"$bin/b2bbench" -yolop "$bin/yolop" "$@"
