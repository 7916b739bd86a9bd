#!/usr/bin/env bash
# Times copying a shared dependency directory ([worktree] share) the way
# yolop does it (a reflink per file where the filesystem can share extents,
# else its bytes; never a hard link) against `cp -r` and, where reflinks
# work, `cp -r --reflink=always`, on a generated node_modules-like tree of
# about -mb MiB (many small files, a few large ones, .bin symlinks).
# Each figure is the median of -runs runs, warm page cache, interleaved.
# Filesystems: the one under $TMPDIR, and an XFS image with reflink=1
# loop-mounted at -xfs DIR (made and mounted here when run as root with
# mkfs.xfs installed and no -xfs given).
# usage: scripts/bench-share.sh [-runs R] [-mb M] [-xfs DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=5
mb=200
xfs=
while [ $# -gt 0 ]; do
  case "$1" in
    -runs) runs=$2; shift 2 ;;
    -mb) mb=$2; shift 2 ;;
    -xfs) xfs=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d)
mounted=
cleanup() {
  [ -z "$mounted" ] || umount "$mounted" || true
  rm -rf "$work"
}
trap cleanup EXIT
go test -c -o "$work/worktree.test" ./internal/worktree

if [ -z "$xfs" ] && [ "$(id -u)" = 0 ] && command -v mkfs.xfs >/dev/null; then
  truncate -s $((mb * 3 + 600))M "$work/xfs.img"
  mkfs.xfs -q -m reflink=1 "$work/xfs.img"
  mkdir "$work/xfs"
  if mount -o loop "$work/xfs.img" "$work/xfs" 2>/dev/null; then
    xfs="$work/xfs"; mounted="$xfs"
  fi
fi

# gen DIR: the node_modules-like tree.
gen() {
  python3 - "$1" "$mb" <<'PY'
import os, random, sys
root, mb = sys.argv[1], int(sys.argv[2])
random.seed(7)
total, n = 0, 0
budget = mb << 20
pkg = 0
while total < budget:
    pkg += 1
    d = os.path.join(root, f"pkg{pkg}", "lib", f"sub{pkg % 7}")
    os.makedirs(d, exist_ok=True)
    for i in range(random.randint(5, 40)):
        size = int(random.lognormvariate(8.3, 1.2)) if random.random() > 0.002 else random.randint(2 << 20, 8 << 20)
        with open(os.path.join(d, f"f{i}.js"), "wb") as f:
            f.write(os.urandom(min(size, 4096)) * (size // 4096 + 1))
        total += size; n += 1
    os.makedirs(os.path.join(root, ".bin"), exist_ok=True)
    os.symlink(f"../pkg{pkg}/lib/sub{pkg % 7}/f0.js", os.path.join(root, ".bin", f"pkg{pkg}"))
print(f"{n} files, {total >> 20} MiB, {pkg} packages", file=sys.stderr)
PY
}

ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timeit() { local t; t=$(date +%s%N); "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }; ms "$t"; }

echo "load: $(cut -d' ' -f1-3 /proc/loadavg); runs: $runs; ~$mb MiB"
bench() { # bench DIR LABEL
  local base=$1 label=$2 fs
  mkdir -p "$base/src"
  fs=$(df -T "$base" | awk 'NR==2 {print $2}')
  gen "$base/src/node_modules"
  local cp=() ref=() yo=() reflinked=
  for r in $(seq "$runs"); do
    cp+=("$(timeit cp -r "$base/src/node_modules" "$base/cp$r")"); rm -rf "$base/cp$r"
    if cp -r --reflink=always "$base/src/node_modules" "$base/probe" 2>/dev/null; then
      rm -rf "$base/probe"
      ref+=("$(timeit cp -r --reflink=always "$base/src/node_modules" "$base/ref$r")"); rm -rf "$base/ref$r"
    else
      rm -rf "$base/probe"
    fi
    mkdir -p "$base/yolop"
    local t out
    t=$(date +%s%N)
    out=$(YOLOP_BENCH_SHARE_SRC="$base/src/node_modules" YOLOP_BENCH_SHARE_DST="$base/yolop" \
      "$work/worktree.test" -test.run '^$' -test.bench '^BenchmarkShareCopy$' -test.benchtime 1x)
    reflinked=$(echo "$out" | grep -o '[0-9.]* reflinked' | head -1)
    yo+=("$(echo "$out" | awk '/^BenchmarkShareCopy/ {printf "%d", $3 / 1e6}')")
    rm -rf "$base/yolop"
  done
  local refms=n/a
  [ ${#ref[@]} -eq 0 ] || refms="$(echo "${ref[*]}" | median) ms"
  echo "$label ($fs): cp -r $(echo "${cp[*]}" | median) ms; cp -r --reflink=always $refms; yolop's copy $(echo "${yo[*]}" | median) ms ($reflinked)"
  rm -rf "$base/src"
}
bench "${TMPDIR:-/tmp}/yolop-bench-share.$$" "temporary directory"
rm -rf "${TMPDIR:-/tmp}/yolop-bench-share.$$"
if [ -n "$xfs" ]; then
  bench "$xfs/yolop-bench-share" "XFS image, reflink=1"
  rm -rf "$xfs/yolop-bench-share"
fi
