package land

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// benchRig is a repository of n files with 10 edited by the session and 10
// (other files) by the user.
func benchRig(b *testing.B, n int) *rig {
	files := map[string]string{}
	for i := 0; i < n; i++ {
		files[fmt.Sprintf("d%02d/f%05d.txt", i%50, i)] = fmt.Sprintf("file %d\nline two\nline three\n", i)
	}
	r := newRig(b, files)
	for i := 0; i < 10; i++ {
		write(b, r.sess.Worktree, fmt.Sprintf("d%02d/f%05d.txt", i%50, i), fmt.Sprintf("file %d\nsession\nline three\n", i))
		write(b, r.checkout, fmt.Sprintf("d%02d/f%05d.txt", (i+20)%50, i+20), "user\n")
	}
	return r
}

func benchN(b *testing.B) int {
	if v, err := strconv.Atoi(os.Getenv("LAND_BENCH_FILES")); err == nil && v > 0 {
		return v
	}
	return 5000
}

// BenchmarkApplyDryRun measures the whole preview: both captures, the
// merge and the outcome comparisons (warm private indexes).
func BenchmarkApplyDryRun(b *testing.B) {
	r := benchRig(b, benchN(b))
	if _, err := Apply(ctx, r.sess, ApplyOptions{DryRun: true}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Apply(ctx, r.sess, ApplyOptions{DryRun: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyAndUndo measures a real apply followed by its undo.
func BenchmarkApplyAndUndo(b *testing.B) {
	r := benchRig(b, benchN(b))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Apply(ctx, r.sess, ApplyOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := Undo(ctx, r.sess, UndoOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGitStatusFloor is the floor both captures stand on: one
// `git status` of the checkout and one of the session worktree.
func BenchmarkGitStatusFloor(b *testing.B) {
	r := benchRig(b, benchN(b))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, dir := range []string{r.checkout, r.sess.Worktree} {
			cmd := exec.Command("git", "status", "--porcelain", "--untracked-files=all")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
	}
}
