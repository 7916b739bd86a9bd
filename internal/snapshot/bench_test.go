package snapshot

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/test/bench/synth"
)

// benchFiles is the generated tree size; SNAPBENCH_FILES overrides it (the
// 10k/100k runs live in scripts/bench-snapshot.sh).
func benchFiles(b *testing.B) int {
	if s := os.Getenv("SNAPBENCH_FILES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatalf("SNAPBENCH_FILES=%q: %v", s, err)
		}
		return n
	}
	return 5000
}

func benchRepo(b *testing.B) (*Engine, string, int) {
	b.Helper()
	n := benchFiles(b)
	dir := filepath.Join(b.TempDir(), "synth")
	if _, err := synth.Generate(context.Background(), dir, n, 42); err != nil {
		b.Fatal(err)
	}
	e := openEngine(b, dir)
	capture(b, e, "seed")
	time.Sleep(1200 * time.Millisecond) // let the seeded index settle
	capture(b, e, "settled")
	return e, dir, n
}

func BenchmarkCapture(b *testing.B) {
	e, dir, n := benchRepo(b)
	ctx := context.Background()
	b.Run("unchanged", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.Capture(ctx, "c"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("one-changed", func(b *testing.B) {
		p := filepath.Join(dir, synth.Path(n/2))
		i := 0
		for b.Loop() {
			b.StopTimer()
			e.Wait() // the previous capture's background index update
			i++
			if err := os.WriteFile(p, []byte(fmt.Sprintf("change %d\n", i)), 0o644); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, err := e.Capture(ctx, "c"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkRestore(b *testing.B) {
	e, dir, n := benchRepo(b)
	ctx := context.Background()
	target := capture(b, e, "target")
	for _, k := range []int{1, 10, 100, 1000} {
		if k > n/2 {
			continue
		}
		b.Run(fmt.Sprintf("paths=%d", k), func(b *testing.B) {
			i := 0
			for b.Loop() {
				b.StopTimer()
				i++
				for j := 0; j < k; j++ {
					p := filepath.Join(dir, synth.Path((j*7919+13)%n))
					if err := os.WriteFile(p, []byte(fmt.Sprintf("bench %d %d\n", i, j)), 0o644); err != nil {
						b.Fatal(err)
					}
				}
				cur := capture(b, e, "")
				e.Wait()
				b.StartTimer()
				if _, err := e.Restore(ctx, cur, target.Tree); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWalk times the capture's own walk (nested repositories,
// narrow permissions) alone; a capture runs it beside git status, which
// stats the same files, so it adds CPU rather than wall time while a core
// is free. Compare with BenchmarkStatusFloor on the same tree.
func BenchmarkWalk(b *testing.B) {
	_, dir, _ := benchRepo(b)
	for _, stats := range []bool{false, true} {
		b.Run(fmt.Sprintf("stats=%v", stats), func(b *testing.B) {
			for b.Loop() {
				walkTree(dir, nil, stats)
			}
		})
	}
}

// BenchmarkStatusFloor is `git status --porcelain --untracked-files=all`
// on the tree BenchmarkWalk uses.
func BenchmarkStatusFloor(b *testing.B) {
	_, dir, _ := benchRepo(b)
	for b.Loop() {
		cmd := exec.Command("git", "status", "--porcelain", "--untracked-files=all")
		cmd.Dir = dir
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPreviewCheck compares what a preview pays to list a restore's
// changes: the diff alone (before restores were checked up front) and
// CheckRestore (diff, the restore's plan against the disk, and the ignore
// check of the written paths).
func BenchmarkPreviewCheck(b *testing.B) {
	e, dir, n := benchRepo(b)
	ctx := context.Background()
	target := capture(b, e, "target")
	for _, k := range []int{1, 10, 100, 1000} {
		if k > n/2 {
			continue
		}
		for j := 0; j < k; j++ {
			p := filepath.Join(dir, synth.Path((j*7919+13)%n))
			if err := os.WriteFile(p, []byte(fmt.Sprintf("bench %d\n", j)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		cur := capture(b, e, "")
		e.Wait()
		b.Run(fmt.Sprintf("paths=%d/diff", k), func(b *testing.B) {
			for b.Loop() {
				if ch, err := e.Diff(ctx, cur.Tree, target.Tree); err != nil || len(ch) != k {
					b.Fatalf("diff: %d changes, %v", len(ch), err)
				}
			}
		})
		b.Run(fmt.Sprintf("paths=%d/check", k), func(b *testing.B) {
			for b.Loop() {
				if chk, err := e.CheckRestore(ctx, cur.Tree, target.Tree); err != nil || len(chk.Changes) != k {
					b.Fatalf("check: %d changes, %v", len(chk.Changes), err)
				}
			}
		})
		if _, err := e.Restore(ctx, cur, target.Tree); err != nil {
			b.Fatal(err)
		}
	}
}
