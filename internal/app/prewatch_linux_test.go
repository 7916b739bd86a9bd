package app_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// TestClaimedSpareEndsItsFirstTurnWatched: a print-mode session that
// claims a ready spare derives its first capture from the claim's proof
// and, with the watcher armed before that proof, looks at the turn's
// changed paths at the turn's end instead of walking; what it captures
// there is what a full capture of the worktree holds.
func TestClaimedSpareEndsItsFirstTurnWatched(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	gittest.WriteFile(t, repo, "a.txt", "a\n")
	gittest.WriteFile(t, repo, "src/b.txt", "b\n")
	gittest.Commit(t, repo, "base")
	data := t.TempDir()
	m := &worktree.Manager{DataDir: data, Spares: 1}
	r, err := worktree.Detect(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.PrepareSpare(ctx, r, ""); err != nil {
		t.Fatal(err)
	}
	// The user's HEAD moves on: the claim writes the difference.
	gittest.WriteFile(t, repo, "src/c.txt", "c\n")
	gittest.Commit(t, repo, "ahead")
	env := app.Env{DataDir: data, Dir: repo, Life: app.OneTurn, Provider: provider.Config{Provider: provider.NameSim}, Spares: config.Spares{Limit: 1}}
	s, err := app.Open(ctx, env, app.New{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Prompt(ctx, "write src/new.txt\nnew\nEOF", nil)
	if err != nil || res.Status != "completed" {
		t.Fatalf("turn: %+v %v", res, err)
	}
	in := s.Info()
	if !in.Recycled {
		t.Fatal("the spare was not claimed")
	}
	eng := s.Parts().Snapshots()
	st := eng.WatchState()
	if st.Watched != 1 || st.Walked != 1 {
		t.Fatalf("captures watched %d, walked %d (last walk: %q): the turn's end capture was not watched", st.Watched, st.Walked, st.LastWalk)
	}
	end := gittest.Git(t, repo, "rev-parse", "refs/yolop/checkpoints/"+s.ID()+"/end-"+res.CheckpointID)
	// The worktree's own index after `git add -A` is a full capture
	// here: nothing in it is ignored or left out.
	gittest.Git(t, in.ActiveRoot, "add", "-A")
	if want := gittest.Git(t, in.ActiveRoot, "write-tree"); end != want {
		t.Fatalf("end capture %s, want %s:\n%s", end, want, gittest.Git(t, in.ActiveRoot, "diff", "--stat", end, want))
	}
	if b, err := os.ReadFile(filepath.Join(in.ActiveRoot, "src/new.txt")); err != nil || string(b) != "new\n" {
		t.Fatalf("the turn's file: %q %v", b, err)
	}
}
