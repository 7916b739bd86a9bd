#!/bin/sh
# What one shell command adds to a print-mode turn: text-only turns
# (`yolop -p hello`) against `$ true` turns (the sim provider runs `true`
# through the bash tool), alternated in one loop on one session, next to
# `bash -c true` as the floor. Prints the median of each and the median of
# the per-round differences, with the load average before and after.
#
# usage: scripts/bench-shell-turn.sh [-runs R] [-env inherit|login] [-yolop BIN]
#   -runs R     rounds (default 30)
#   -env E      [tools] env setting of the session (default: not set, the
#               environment yolop was started with)
#   -yolop BIN  time this binary instead of building ./cmd/yolop
# The user's own HOME (and so their login profile) is kept; settings come
# from a private XDG_CONFIG_HOME and the provider is the offline sim.
set -eu
runs=30
envmode=
yolop=
while [ $# -gt 0 ]; do
	case $1 in
	-runs) runs=$2; shift 2 ;;
	-env) envmode=$2; shift 2 ;;
	-yolop) yolop=$2; shift 2 ;;
	*) echo "usage: $0 [-runs R] [-env inherit|login] [-yolop BIN]" >&2; exit 2 ;;
	esac
done
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -z "$yolop" ]; then
	go build -o "$tmp/yolop" ./cmd/yolop
	yolop=$tmp/yolop
fi
export XDG_CONFIG_HOME="$tmp/config" YOLOP_DATA_DIR="$tmp/data" YOLOP_PROVIDER=sim
export YOLOP_WORKTREE_SPARES=0
unset YOLOP_TRACE_REQUESTS YOLOP_FAILPOINT
mkdir -p "$XDG_CONFIG_HOME/yolop"
if [ -n "$envmode" ]; then
	printf '[tools]\nenv = "%s"\n' "$envmode" >"$XDG_CONFIG_HOME/yolop/settings.toml"
fi
repo=$tmp/repo
git init -q "$repo"
echo hello >"$repo/README"
git -C "$repo" add README
git -C "$repo" -c user.name=bench -c user.email=bench@example.invalid commit -q -m init
cd "$repo"
sid=$("$yolop" --output-format json -p 'first turn' | sed 's/.*"session_id":"\([^"]*\)".*/\1/')
ms() { # run "$@" quietly, print its wall time in microseconds
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000))
}
: >"$tmp/text"
: >"$tmp/shell"
: >"$tmp/bash"
: >"$tmp/diff"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
i=0
while [ $i -lt "$runs" ]; do
	a=$(ms "$yolop" --session "$sid" -p 'hello')
	b=$(ms "$yolop" --session "$sid" -p '$ true')
	c=$(ms bash -c true)
	echo "$a" >>"$tmp/text"
	echo "$b" >>"$tmp/shell"
	echo "$c" >>"$tmp/bash"
	echo $((b - a)) >>"$tmp/diff"
	i=$((i + 1))
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
median() { sort -n "$1" | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.1f ms", m/1000}'; }
echo "rounds: $runs, [tools] env: ${envmode:-default}, load average before: $load0, after: $load1"
echo "text-only turn:          $(median "$tmp/text")"
echo "\$ true turn:             $(median "$tmp/shell")"
echo "added by the command:    $(median "$tmp/diff") (median of the per-round differences)"
echo "bash -c true:            $(median "$tmp/bash")"
