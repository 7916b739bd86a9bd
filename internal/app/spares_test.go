package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/session"
)

// TestEarlyWorktree: a session that opens with Early gets its worktree while
// the user types (claimed from a spare here), gets its branch from the first
// prompt, and records that the worktree was recycled; a session closed
// unused leaves no session, no branch and gives its worktree back as the
// spare. A spare is prepared after the first turn.
func TestEarlyWorktree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	gittest.WriteFile(t, repo, "a.txt", "a\n")
	gittest.Commit(t, repo, "base")
	data := t.TempDir()
	var prepared []string
	env := app.Env{DataDir: data, Dir: repo, Provider: provider.Config{Provider: provider.NameSim},
		Spares: config.Spares{Limit: 1}, PrepareSpare: func(root string) { prepared = append(prepared, root) }}
	early := app.New{Start: app.Early}

	// Opened and closed unused: nothing is left but a spare.
	s, err := app.Open(ctx, env, early)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if list, err := session.List(data); err != nil || len(list) != 0 {
		t.Fatalf("an unused session is listed: %v %v", list, err)
	}
	spares, _ := filepath.Glob(filepath.Join(data, "worktrees", "*", ".spare-1"))
	if len(spares) != 1 {
		t.Fatalf("the unused session's worktree was not parked: %v", spares)
	}
	if out := gittest.Git(t, repo, "for-each-ref", "refs/heads/yolop/"); out != "" {
		t.Fatalf("an unused session left a branch: %s", out)
	}

	// Opened again: the spare is claimed early; the prompt names the branch.
	s, err = app.Open(ctx, env, early)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Prompt(ctx, "fix the parser", nil)
	if err != nil || res.Status != "completed" {
		t.Fatalf("turn: %+v %v", res, err)
	}
	in := s.Info()
	if !in.Recycled || !strings.HasPrefix(in.Branch, "yolop/fix-the-parser-") {
		t.Fatalf("info: recycled %v, branch %q", in.Recycled, in.Branch)
	}
	if got := gittest.Git(t, in.ActiveRoot, "symbolic-ref", "--short", "HEAD"); got != in.Branch {
		t.Fatalf("worktree on %q, want %q", got, in.Branch)
	}
	if _, err := os.Stat(spares[0]); err == nil {
		t.Fatal("the spare was not claimed")
	}
	if len(prepared) != 1 || prepared[0] != in.RepoRoot {
		t.Fatalf("spare preparation after the first turn: %v", prepared)
	}
}

// TestUnusedSessionIsNotListed: a session created at open (ACP
// session/new) and never used appears in no listing and is not "the most
// recent session"; its first prompt makes it both.
func TestUnusedSessionIsNotListed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	gittest.WriteFile(t, repo, "a.txt", "a\n")
	gittest.Commit(t, repo, "base")
	data := t.TempDir()
	env := app.Env{DataDir: data, Dir: repo, Provider: provider.Config{Provider: provider.NameSim}}
	s, err := app.Open(ctx, env, app.New{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(ctx, "first", nil); err != nil {
		t.Fatal(err)
	}
	usedID := s.ID()
	s.Close()

	s, err = app.Open(ctx, env, app.New{Start: app.Now})
	if err != nil {
		t.Fatal(err)
	}
	unusedID := s.ID()
	s.Close()
	rows, err := catalog.ListSessions(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].SessionID != usedID {
		t.Fatalf("listed %+v, want only %s", rows, usedID)
	}
	s, err = app.Open(ctx, env, app.Continue{})
	if err != nil {
		t.Fatal(err)
	}
	if s.ID() != usedID {
		t.Fatalf("-c continued %s, want the used session %s (not the unused %s)", s.ID(), usedID, unusedID)
	}
	s.Close()
	// It can still be opened by id, and using it lists it.
	s, err = app.Open(ctx, env, app.Resume{ID: unusedID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(ctx, "now used", nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if rows, _ := catalog.ListSessions(data); len(rows) != 2 {
		t.Fatalf("after its first prompt the session is not listed: %+v", rows)
	}
}

// TestOneTurnProcessAsksForASpareAsItEnds: a print-mode session asks for
// the next session's spare when it is closed, not when its turn ends: the
// checkout would slow the process's last steps.
func TestOneTurnProcessAsksForASpareAsItEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	gittest.WriteFile(t, repo, "a.txt", "a\n")
	gittest.Commit(t, repo, "base")
	var prepared []string
	env := app.Env{DataDir: t.TempDir(), Dir: repo, Life: app.OneTurn, Provider: provider.Config{Provider: provider.NameSim},
		Spares: config.Spares{Limit: 1}, PrepareSpare: func(root string) { prepared = append(prepared, root) }}
	s, err := app.Open(ctx, env, app.New{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(ctx, "hello", nil); err != nil {
		t.Fatal(err)
	}
	if len(prepared) != 0 {
		t.Fatalf("a spare was asked for before the process ended: %v", prepared)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(prepared) != 1 || prepared[0] != s.Info().RepoRoot {
		t.Fatalf("spare preparations asked for at close: %v", prepared)
	}
}
