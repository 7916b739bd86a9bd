package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/git"
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

// TestLongLivedFirstTurnArmsTheWatcherWithItsWalk: in a long-lived host
// (the TUI, ACP) a session's engine opens when its first capture needs it,
// and that capture walks: the walk arms the watcher, so the capture at the
// end of the turn is watched and captures what a full capture holds. The
// watcher arms nothing of its own in the background, beside that walk: on
// a big tree that arm was not done by the end of the first turn, whose
// capture then walked again.
func TestLongLivedFirstTurnArmsTheWatcherWithItsWalk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	gittest.WriteFile(t, repo, "a.txt", "a\n")
	gittest.WriteFile(t, repo, "src/b.txt", "b\n")
	gittest.Commit(t, repo, "base")
	env := app.Env{DataDir: t.TempDir(), Dir: repo, Life: app.OneTurn, Provider: provider.Config{Provider: provider.NameSim}}
	s, err := app.Open(ctx, env, app.New{Mode: config.WorkspaceInPlace, Explicit: true})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := s.Prompt(ctx, "hello", nil); err != nil || res.Status != "completed" {
		t.Fatalf("turn: %+v %v", res, err)
	}
	id := s.ID()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A directory changed within 100 ms before a capture began counts as
	// changed by the walk that arms the watcher (its clock's slack).
	time.Sleep(150 * time.Millisecond)

	env.Life = app.LongLived
	s, err = app.Open(ctx, env, app.Resume{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	eng := s.Parts().Snapshots() // opens the engine, before any capture
	time.Sleep(200 * time.Millisecond)
	if st := eng.WatchState(); st.Watches != 0 || st.Watching {
		t.Fatalf("the watcher armed itself before a capture walked (%d watches)", st.Watches)
	}
	res, err := s.Prompt(ctx, "write src/new.txt\nnew\nEOF", nil)
	if err != nil || res.Status != "completed" {
		t.Fatalf("turn: %+v %v", res, err)
	}
	st := eng.WatchState()
	if st.Watched != 1 || st.Walked != 1 || !st.Watching {
		t.Fatalf("captures watched %d, walked %d (last walk: %q): the first capture's walk did not arm the watcher", st.Watched, st.Walked, st.LastWalk)
	}
	end := gittest.Git(t, repo, "rev-parse", "refs/yolop/checkpoints/"+id+"/end-"+res.CheckpointID)
	// A full capture: `add -A` into an index of its own.
	r := git.New(repo).With("GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index"))
	if _, err := r.Run(ctx, "add", "-A"); err != nil {
		t.Fatal(err)
	}
	out, err := r.Run(ctx, "write-tree")
	if err != nil {
		t.Fatal(err)
	}
	if want := git.Trim(out); strings.TrimSpace(end) != want {
		t.Fatalf("end capture %s, want %s", end, want)
	}
}
