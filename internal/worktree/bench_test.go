package worktree

import (
	"context"
	"fmt"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// BenchmarkCreate measures adding one session worktree to a small repository
// (one git process to check the blocking branch, one per candidate branch
// name, one `git worktree add`).
func BenchmarkCreate(b *testing.B) {
	r, err := Detect(context.Background(), gittest.NewRepo(b))
	if err != nil {
		b.Fatal(err)
	}
	m := &Manager{DataDir: b.TempDir()}
	for i := 0; b.Loop(); i++ {
		if _, err := m.Create(context.Background(), r, fmt.Sprintf("s_bench%06d", i), "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkList measures scanning 20 clean worktrees: one `git status` each.
func BenchmarkList(b *testing.B) {
	r, err := Detect(context.Background(), gittest.NewRepo(b))
	if err != nil {
		b.Fatal(err)
	}
	m := &Manager{DataDir: b.TempDir()}
	for i := range 20 {
		if _, err := m.Create(context.Background(), r, fmt.Sprintf("s_list%02d", i), ""); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if es, err := m.List(context.Background()); err != nil || len(es) != 20 {
			b.Fatal(len(es), err)
		}
	}
}
