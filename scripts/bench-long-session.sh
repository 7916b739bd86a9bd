#!/bin/sh
# Grows one session to 1,000 and 5,000 turns (sim provider, a 20-file
# repository, each turn rewrites one file) and reports side by side, in one
# run: a print-mode turn at turn 10, 1,000 and 5,000, `-p /rewind`, and the
# floor of parsing the session's event log in a process of its own, and
# the TUI's first screen (`yolop --session ID` in a tmux window, until the
# last turn's reply is drawn; skipped without tmux, or with -tui=false);
# then `yolop sessions` over 500 sessions. Every timed command is a
# separate process; the session is grown in-process with the product's
# constructor. The load average at the end is printed with the table.
# usage: scripts/bench-long-session.sh [-runs R] [-sessions N] [TURNS...]
#        (default: -runs 5 -sessions 500 1000 5000; ~25 min on 2 busy cores)
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/yolop" ./cmd/yolop
go build -o "$bin/longbench" ./test/bench/cmd/longbench
"$bin/longbench" -yolop "$bin/yolop" "$@"
