#!/bin/sh
# Times `yolop sessions search --all` against `grep -rFi` (grep -rF when the
# query has a capital, like yolop's smart case) over the same generated
# session files: 500 sessions, 200,000 events by default.
# usage: scripts/bench-search.sh [SESSIONS] [EVENTS] [RUNS]
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/yolop" ./cmd/yolop
go run ./test/bench/cmd/searchbench -yolop "$bin/yolop" \
	-sessions "${1:-500}" -events "${2:-200000}" -runs "${3:-7}"
