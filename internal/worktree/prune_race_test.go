package worktree

import (
	"context"
	"os"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// A prune that runs while a session starts (its worktree made, its session
// directory not yet) leaves the worktree and its refs alone; once the start
// is over and no session claims it, the worktree is free again.
func TestPruneLeavesAStartInProgress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repoDir := gittest.NewRepo(t)
	m := &Manager{DataDir: t.TempDir()}
	st, err := m.Start(ctx, detect(t, repoDir), "s_01starting0000000000000000", "starting")
	if err != nil {
		t.Fatal(err)
	}
	ref := addCheckpointRef(t, repoDir, "s_01starting0000000000000000", "cp1")
	nobody := func(string) bool { return false }
	rep, err := m.Prune(ctx, PruneOptions{Referenced: nobody, Spares: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Removed) != 0 || len(rep.Parked) != 0 {
		t.Fatalf("prune took a starting session's worktree: %+v", rep)
	}
	if _, err := os.Stat(st.Path); err != nil {
		t.Fatalf("the worktree is gone: %v", err)
	}
	if out := gittest.Git(t, repoDir, "for-each-ref", ref); out == "" {
		t.Fatal("the checkpoint ref is gone")
	}
	st.Done()
	rep, err = m.Prune(ctx, PruneOptions{Referenced: nobody, Spares: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Removed) != 1 {
		t.Fatalf("after the start, the unclaimed worktree was not freed: %+v", rep)
	}
}
