package checkpoint_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/test/bench/synth"
)

// benchFiles is the size of the generated repository: YOLOP_BENCH_FILES, or
// a small default so `go test -bench` stays quick. scripts/bench-controller.sh
// runs it at 100000.
func benchFiles(b *testing.B) int {
	n := 2000
	if v := os.Getenv("YOLOP_BENCH_FILES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1000 {
			b.Fatalf("YOLOP_BENCH_FILES=%q: want a number >= 1000", v)
		}
	}
	return n
}

// benchRig generates a committed repository of n files, opens a session
// over it and runs two turns (so cp2 is the clean tree, settled past git's
// racy-timestamp window). It returns the rig and the median of
// `git status --porcelain --untracked-files=all` in the worktree.
func benchRig(b *testing.B, n int) (*rig, time.Duration) {
	b.Helper()
	repo := filepath.Join(b.TempDir(), "repo")
	gittest.WriteFile(b, repo, ".gitignore", "*.log\n")
	for i := range n {
		write(b, repo, synth.Path(i), fmt.Sprintf("file %d\nalpha beta gamma %d\n", i, i*7919))
	}
	gittest.Git(b, repo, "init", "-q", "-b", "main")
	gittest.Git(b, repo, "config", "gc.auto", "0")
	time.Sleep(1100 * time.Millisecond)
	gittest.Commit(b, repo, "base")
	r := newRig(b, rigOpts{repo: repo})
	time.Sleep(1100 * time.Millisecond)
	r.turn("first")
	time.Sleep(1100 * time.Millisecond)
	r.turn("second")
	var ds []time.Duration
	for range 7 {
		t := time.Now()
		gittest.Git(b, r.root, "status", "--porcelain", "--untracked-files=all")
		ds = append(ds, time.Since(t))
	}
	slices.Sort(ds)
	return r, ds[len(ds)/2]
}

// touch changes k tracked files (a different content every round).
func touch(b *testing.B, r *rig, n, k, round int) {
	for j := range k {
		write(b, r.root, synth.Path((j*7919+13)%n), fmt.Sprintf("bench round %d file %d\n", round, j))
	}
}

func reportRatio(b *testing.B, elapsed time.Duration, floor time.Duration) {
	b.ReportMetric(float64(elapsed)/float64(b.N)/float64(floor), "x-git-status")
}

// BenchmarkPreview: a workspace rewind preview (recovery capture, diff,
// outside-turn warnings, token) with k changed paths.
func BenchmarkPreview(b *testing.B) {
	n := benchFiles(b)
	r, floor := benchRig(b, n)
	ctx := context.Background()
	round := 0
	for _, k := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("files=%d/k=%d", n, k), func(b *testing.B) {
			round++
			touch(b, r, n, k, round)
			var spent time.Duration
			for b.Loop() {
				t := time.Now()
				pv, err := r.ctl.Preview(ctx, rewind("cp2", checkpoint.ModeWorkspace))
				spent += time.Since(t)
				if err != nil {
					b.Fatal(err)
				}
				if len(pv.Paths) != k {
					b.Fatalf("preview shows %d paths, want %d", len(pv.Paths), k)
				}
			}
			reportRatio(b, spent, floor)
		})
	}
}

// BenchmarkConfirm: confirming a workspace rewind of k changed paths
// (writer and token checks, staleness capture, intent, restore, verify,
// head.moved). The preview before each confirm is not timed.
func BenchmarkConfirm(b *testing.B) {
	n := benchFiles(b)
	r, floor := benchRig(b, n)
	ctx := context.Background()
	round := 0
	for _, k := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("files=%d/k=%d", n, k), func(b *testing.B) {
			var spent time.Duration
			for b.Loop() {
				b.StopTimer()
				round++
				touch(b, r, n, k, round)
				pv, err := r.ctl.Preview(ctx, rewind("cp2", checkpoint.ModeWorkspace))
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				t := time.Now()
				res, err := r.ctl.Confirm(ctx, rewind("cp2", checkpoint.ModeWorkspace), pv.Token)
				spent += time.Since(t)
				if err != nil {
					b.Fatal(err)
				}
				if res.PathsChanged != k {
					b.Fatalf("restored %d paths, want %d", res.PathsChanged, k)
				}
			}
			reportRatio(b, spent, floor)
		})
	}
}
