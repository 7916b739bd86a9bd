#!/usr/bin/env bash
# Times sessions in a folder outside git, on the shared generator's trees
# (mksynth.py, ~1% dirty) copied without their .git:
#   - the floor: `git status --porcelain --untracked-files=all` of the same
#     tree held in its repository;
#   - the peers' way: a plain `git add -A` + `write-tree` into a fresh shadow
#     repository (GIT_DIR elsewhere, GIT_WORK_TREE the folder);
#   - yolop's first turn in the folder (fresh data directory: the folder's
#     first capture by fast-import, the session's first and end captures),
#     turns 2-5, and the start overhead (first turn minus turns 2-5);
#   - turns 2-5 in place in the checkout (--workspace in-place), for the
#     per-turn overhead afterwards.
# Runs alternate between the folder and the checkout; each figure is the
# median of -runs runs; the trees are in the page cache (as a folder one
# works in is).
# usage: scripts/bench-nogit.sh [-runs R] [N...]   (default N: 10000 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=5
sizes=()
while [ $# -gt 0 ]; do
  case "$1" in
    -runs) runs=$2; shift 2 ;;
    *) sizes+=("$1"); shift ;;
  esac
done
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 100000)
mksynth=${MKSYNTH:-/work/shared/bench/mksynth.py}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/yolop" ./cmd/yolop
Y="$work/yolop"
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1 YOLOP_WORKTREE_SPARES=0 OPENAI_API_KEY= ANTHROPIC_API_KEY=
mkdir -p "$HOME"
git config --global user.name bench; git config --global user.email bench@example.invalid

ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timeit() { local t; t=$(date +%s%N); "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }; ms "$t"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f×", a / b }'; }
shadow() { rm -rf "$1"; git init -q --bare "$1" && GIT_DIR="$1" GIT_WORK_TREE="$2" git -c core.bare=false add -A && GIT_DIR="$1" git write-tree; }

echo "load: $(cut -d' ' -f1-3 /proc/loadavg); runs: $runs; $(nproc) cores"
for n in "${sizes[@]}"; do
  tree="$work/t$n" folder="$work/f$n"
  python3 "$mksynth" "$n" "$tree" >/dev/null
  cp -a "$tree" "$folder" && rm -rf "$folder/.git"
  files=$(cd "$folder" && find . -type f -not -path './build/*' | wc -l)
  st=() sh=()
  cd "$tree"
  for _ in $(seq "$runs"); do st+=("$(timeit git status --porcelain --untracked-files=all)"); done
  for r in $(seq "$runs"); do sh+=("$(timeit shadow "$work/shadow" "$folder")"); done
  status=$(echo "${st[*]}" | median); shadowed=$(echo "${sh[*]}" | median)
  first=() later=() ip_later=()
  for r in $(seq "$runs"); do
    # The folder: a fresh data directory each run, so its first capture
    # runs every time.
    export YOLOP_DATA_DIR="$work/data-$n-$r-folder"
    cd "$folder"
    t1=$(timeit "$Y" -p 'hello')
    turns=()
    for i in 2 3 4 5; do turns+=("$(timeit "$Y" -c -p "\$ echo $i >> d000/s00/f000001.txt")"); done
    first+=("$t1"); later+=("$(echo "${turns[*]}" | median)")
    "$Y" -c -p '/rewind' | grep -q ' yes ' || { echo "folder session has no snapshots" >&2; exit 1; }
    # In place in the checkout of the same tree.
    export YOLOP_DATA_DIR="$work/data-$n-$r-inplace"
    cd "$tree"
    "$Y" --workspace in-place -p 'hello' >/dev/null 2>&1
    turns=()
    for i in 2 3 4 5; do turns+=("$(timeit "$Y" -c -p "\$ echo $i >> d000/s00/f000001.txt")"); done
    ip_later+=("$(echo "${turns[*]}" | median)")
    git checkout -q -- d000/s00/f000001.txt 2>/dev/null || true
  done
  f=$(echo "${first[*]}" | median); l=$(echo "${later[*]}" | median); p=$(echo "${ip_later[*]}" | median)
  echo
  echo "### $n files ($files in the folder; git status --porcelain --untracked-files=all of the repository: $status ms)"
  echo
  echo "| figure | ms | ÷ status |"
  echo "|---|---|---|"
  echo "| git add -A + write-tree into a fresh shadow repository | $shadowed | $(ratio "$shadowed" "$status") |"
  echo "| folder: first turn (first capture included) | $f | $(ratio "$f" "$status") |"
  echo "| folder: turns 2-5 (median) | $l | $(ratio "$l" "$status") |"
  echo "| folder: start overhead (first - turns 2-5) | $((f - l)) | $(ratio "$((f - l))" "$status") |"
  echo "| in place in the checkout: turns 2-5 (median) | $p | $(ratio "$p" "$status") |"
  cd "$work"
  rm -rf "$tree" "$folder" "$work"/data-* "$work/shadow"
done
