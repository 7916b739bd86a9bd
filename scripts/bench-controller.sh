#!/bin/sh
# Times the checkpoint controller's Preview and Confirm of k changed paths
# (1, 10, 100, 1000) on a generated repository, as a ratio to
# `git status --porcelain --untracked-files=all` in the same worktree
# (the x-git-status column).
# usage: scripts/bench-controller.sh [FILES] [RUNS]   (default 100000 files, 5 runs)
set -eu
cd "$(dirname "$0")/.."
YOLOP_BENCH_FILES=${1:-100000} exec go test ./internal/checkpoint -run '^$' \
	-bench 'BenchmarkPreview|BenchmarkConfirm' -benchtime "${2:-5}x" -timeout 60m
