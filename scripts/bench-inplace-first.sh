#!/usr/bin/env bash
# The first turn of an in-place session, turns 2-5 and the start overhead
# (first minus the median of turns 2-5) beside `git status -uall`, for each
# yolop binary given (build the one to compare with from another commit:
# git archive REV | tar -x -C DIR && (cd DIR && go build -o BIN ./cmd/yolop)).
# Runs alternate between the binaries; each run is on a fresh copy of the
# same mksynth tree, so every first capture writes the same new objects.
# Each run has its own data directory; with WARM=1 a session in a small
# repository uses it first, so the timed session is not the first of its
# data directory (whose first session also checks, once per boot, that
# commands can be given read-only paths). With several binaries it also
# gives each one's ratios against the median status of all their runs.
# usage: [WARM=1] scripts/bench-inplace-first.sh N RUNS BIN...
set -euo pipefail
n=$1 runs=$2; shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1 YOLOP_WORKTREE_SPARES=0 OPENAI_API_KEY= ANTHROPIC_API_KEY=
mkdir -p "$HOME"; git config --global user.name b; git config --global user.email b@x
python3 "${MKSYNTH:-/work/shared/bench/mksynth.py}" "$n" "$work/pristine" >/dev/null
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A F L S
for r in $(seq "$runs"); do
  for b in "$@"; do
    t="$work/t-$r-$(basename $b)"; cp -a "$work/pristine" "$t"; cd "$t"; sync
    st=(); for _ in 1 2 3; do s=$(date +%s%N); git status --porcelain -uall >/dev/null; st+=("$(ms $s)"); done
    export YOLOP_DATA_DIR="$t.data"
    if [ "${WARM:-}" = 1 ]; then
      w="$t.warm"; mkdir "$w"; (cd "$w" && git init -q && echo a >a && git add a && git commit -qm a && "$b" --in-place -p hello >/dev/null 2>&1)
    fi
    s=$(date +%s%N); "$b" --in-place -p hello >/dev/null 2>&1; f=$(ms $s)
    tu=(); for i in 2 3 4 5; do s=$(date +%s%N); "$b" -c -p "\$ echo $i >> d000/s00/f000001.txt" >/dev/null 2>&1; tu+=("$(ms $s)"); done
    F[$b]+="$f "; L[$b]+="$(echo "${tu[*]}" | median) "; S[$b]+="$(echo "${st[*]}" | median) "
    cd /; rm -rf "$t" "$t.data" "$t.warm"
  done
done
echo "N=$n runs=$runs load after: $(cut -d' ' -f1-3 /proc/loadavg)"
for b in "$@"; do
  f=$(echo ${F[$b]} | median); l=$(echo ${L[$b]} | median); s=$(echo ${S[$b]} | median)
  awk -v b="$(basename $b)" -v f=$f -v l=$l -v s=$s 'BEGIN{printf "%s: status %d ms; first %d ms (%.1fx); turns 2-5 %d ms (%.1fx); overhead %d ms (%.1fx)   [first: %s| later: %s]\n", b, s, f, f/s, l, l/s, f-l, (f-l)/s, "'"${F[$b]}"'", "'"${L[$b]}"'"}'
done
# git status does not depend on the binary: the median of every run's
# status in the round is the steadier floor when several are compared.
if [ $# -gt 1 ]; then
  all=""; for b in "$@"; do all+="${S[$b]} "; done
  s=$(echo $all | median)
  for b in "$@"; do
    f=$(echo ${F[$b]} | median); l=$(echo ${L[$b]} | median)
    awk -v b="$(basename $b)" -v f=$f -v l=$l -v s=$s 'BEGIN{printf "%s against every run'"'"'s status (%d ms): first %.1fx; turns 2-5 %.1fx; overhead %.1fx\n", b, s, f/s, l/s, (f-l)/s}'
  done
fi
rm -rf "$work"
