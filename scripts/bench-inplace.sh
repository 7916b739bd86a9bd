#!/usr/bin/env bash
# Times in-place sessions end to end against `git status` and worktree
# sessions, on the shared generator's trees (mksynth.py, ~1% dirty):
#   - the first `yolop --in-place -p` turn, turns 2-5, and the start
#     overhead (first turn minus the median of turns 2-5);
#   - a 1-file turn in place and in a worktree session (turns 2-5);
#   - a workspace rewind (preview + confirm) of k paths, in place and in a
#     worktree session.
# Runs alternate between modes; each figure is the median of -runs runs.
# usage: scripts/bench-inplace.sh [-runs R] [-k "1 100"] [N...]   (default N: 10000 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=5
ks="1 100"
sizes=()
while [ $# -gt 0 ]; do
  case "$1" in
    -runs) runs=$2; shift 2 ;;
    -k) ks=$2; shift 2 ;;
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
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f×", a / b }'; }

echo "load: $(cut -d' ' -f1-3 /proc/loadavg); runs: $runs"
for n in "${sizes[@]}"; do
  tree="$work/t$n"
  python3 "$mksynth" "$n" "$tree" >/dev/null
  cd "$tree"
  st=()
  for _ in $(seq "$runs"); do st+=("$(timeit git status --porcelain --untracked-files=all)"); done
  status=$(echo "${st[*]}" | median)
  first=() later=() wt_later=()
  declare -A rin=() rwt=()
  for r in $(seq "$runs"); do
    for mode in in-place worktree; do
      export YOLOP_DATA_DIR="$work/data-$n-$r-$mode"
      t1=$(timeit "$Y" --workspace "$mode" -p 'hello')
      turns=()
      for i in 2 3 4 5; do turns+=("$(timeit "$Y" -c -p "\$ echo $i >> d000/s00/f000001.txt")"); done
      # The k-path turn whose files the rewind takes back.
      for k in $ks; do
        "$Y" -c -p "\$ for i in \$(seq 1 $k); do echo x > k$k-\$i.txt; done" >/dev/null
        cp=$("$Y" -c --output-format json -p /rewind | python3 -c 'import json,sys; print(json.load(sys.stdin)["checkpoints"][0]["id"])')
        t=$(date +%s%N)
        tok=$("$Y" -c --output-format json -p "/rewind $cp workspace" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
        "$Y" -c -p "/rewind $cp workspace --confirm $tok" >/dev/null
        if [ "$mode" = in-place ]; then rin[$k]+="$(ms "$t") "; else rwt[$k]+="$(ms "$t") "; fi
      done
      if [ "$mode" = in-place ]; then
        first+=("$t1"); later+=("$(echo "${turns[*]}" | median)")
      else
        wt_later+=("$(echo "${turns[*]}" | median)")
      fi
    done
  done
  f=$(echo "${first[*]}" | median); l=$(echo "${later[*]}" | median); w=$(echo "${wt_later[*]}" | median)
  echo
  echo "### $n files (git status --porcelain --untracked-files=all: $status ms)"
  echo
  echo "| figure | ms | ÷ status |"
  echo "|---|---|---|"
  echo "| in place: first turn | $f | $(ratio "$f" "$status") |"
  echo "| in place: turns 2-5 (median) | $l | $(ratio "$l" "$status") |"
  echo "| in place: start overhead (first - turns 2-5) | $((f - l)) | $(ratio "$((f - l))" "$status") |"
  echo "| worktree: turns 2-5 (median) | $w | $(ratio "$w" "$status") |"
  for k in $ks; do
    a=$(echo "${rin[$k]}" | median); b=$(echo "${rwt[$k]}" | median)
    echo "| workspace rewind of $k paths (preview + confirm): in place / worktree | $a / $b | in place = $(ratio "$a" "$b") the worktree's |"
  done
  unset rin rwt
  cd "$work"
done
