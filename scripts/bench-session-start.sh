#!/bin/sh
# Times session start end to end: the first `yolop -p` turn of a new session
# on a big generated tree minus the same on a tiny tree, side by side with
# `git status --porcelain --untracked-files=all` and `git worktree add` on the
# big tree, without a spare worktree and with one at the user's commit, 1 and
# 100 commits behind. Trees come from the shared generator mksynth.py
# ($MKSYNTH, default /work/shared/bench/mksynth.py).
# usage: scripts/bench-session-start.sh [-runs R] [-dir D] [-only none,same,1,100] [N...]   (default N: 10000 100000)
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/yolop" ./cmd/yolop
go build -o "$bin/startbench" ./test/bench/cmd/startbench
"$bin/startbench" -yolop "$bin/yolop" -mksynth "${MKSYNTH:-/work/shared/bench/mksynth.py}" "$@"
