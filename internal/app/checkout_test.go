package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/provider"
)

// TestCheckoutWarningBeforeTurn: the checkout's uncommitted changes are
// told before the first prompt to a host that waits for one (Early:
// StartNotices), and not again by the turn; a host that did not ask gets
// them as a live update before the turn's first event.
func TestCheckoutWarningBeforeTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	gittest.WriteFile(t, repo, "a.txt", "a\n")
	gittest.Commit(t, repo, "base")
	gittest.WriteFile(t, repo, "a.txt", "user wip\n")
	env := app.Env{DataDir: t.TempDir(), Dir: repo, Provider: provider.Config{Provider: provider.NameSim}}

	s, err := app.Open(ctx, env, app.New{Start: app.Early})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	notes := s.StartNotices(ctx)
	if len(notes) != 1 || !strings.Contains(notes[0], "1 uncommitted change (a.txt)") {
		t.Fatalf("start notices: %q", notes)
	}
	if again := s.StartNotices(ctx); len(again) != 0 {
		t.Fatalf("start notices twice: %q", again)
	}
	var warned []string
	res, err := s.Prompt(ctx, "$ cat a.txt", func(u agent.Update) {
		if u.Kind == agent.UpdateWarning {
			warned = append(warned, u.Text)
		}
	})
	if err != nil || res.Status != "completed" {
		t.Fatalf("turn: %+v %v", res, err)
	}
	if len(warned) != 0 || strings.Contains(strings.Join(res.Warnings, "\n"), "uncommitted") {
		t.Fatalf("the turn repeated the warning: updates %q, result %q", warned, res.Warnings)
	}

	// Without StartNotices (print mode): a live update, first.
	s2, err := app.Open(ctx, env, app.New{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	var kinds []agent.UpdateKind
	res, err = s2.Prompt(ctx, "$ cat a.txt", func(u agent.Update) {
		kinds = append(kinds, u.Kind)
		if u.Kind == agent.UpdateWarning && !strings.Contains(u.Text, "1 uncommitted change (a.txt)") {
			t.Errorf("warning %q", u.Text)
		}
	})
	if err != nil || res.Status != "completed" {
		t.Fatalf("turn: %+v %v", res, err)
	}
	if len(kinds) == 0 || kinds[0] != agent.UpdateWarning {
		t.Fatalf("updates %v: want the warning first", kinds)
	}
	if strings.Contains(strings.Join(res.Warnings, "\n"), "uncommitted") {
		t.Fatalf("the warning came again with the result: %q", res.Warnings)
	}
}

// TestSubmoduleNoticeAndPrompt: a repository with a submodule gets the
// notice that the session's worktree does not check it out, before the
// first prompt (once), and the model is told in the system prompt.
func TestSubmoduleNoticeAndPrompt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sub := gittest.NewRepo(t)
	repo := gittest.NewRepo(t)
	gittest.Git(t, repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "mods/sub")
	gittest.Commit(t, repo, "add a submodule")
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	env := app.Env{DataDir: t.TempDir(), Dir: repo, Provider: provider.Config{Provider: provider.NameSim, TracePath: trace}}
	s, err := app.Open(ctx, env, app.New{Start: app.Early})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	notes := s.StartNotices(ctx)
	if len(notes) != 1 || !strings.Contains(notes[0], "submodule mods/sub is not checked out in the session's worktree") {
		t.Fatalf("start notices: %q", notes)
	}
	var warned []string
	res, err := s.Prompt(ctx, "hello", func(u agent.Update) {
		if u.Kind == agent.UpdateWarning {
			warned = append(warned, u.Text)
		}
	})
	if err != nil || res.Status != "completed" {
		t.Fatalf("turn: %+v %v", res, err)
	}
	if len(warned) != 0 || strings.Contains(strings.Join(res.Warnings, "\n"), "submodule") {
		t.Fatalf("the turn repeated the notice: updates %q, result %q", warned, res.Warnings)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "Submodules (mods/sub) are not checked out in this worktree") {
		t.Errorf("the system prompt does not name the submodule")
	}
}

// TestInPlaceDraftStartsNoWorktree: a host that waits for the first prompt
// (Early: the TUI, ACP's session/new) starts the worktree of a new worktree
// session while it waits; a new in-place session works in the checkout as
// it is, so it starts none (at 100,000 files that checkout competed with
// the first turn for seconds, for a worktree thrown away at close) and is
// not warned that a worktree would lack the checkout's uncommitted changes.
func TestInPlaceDraftStartsNoWorktree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	gittest.WriteFile(t, repo, "a.txt", "a\n")
	gittest.Commit(t, repo, "base")
	gittest.WriteFile(t, repo, "a.txt", "user wip\n")
	env := app.Env{DataDir: t.TempDir(), Dir: repo, Provider: provider.Config{Provider: provider.NameSim}}

	s, err := app.Open(ctx, env, app.New{Mode: config.WorkspaceInPlace, Explicit: true, Start: app.Early})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if notes := s.StartNotices(ctx); strings.Contains(strings.Join(notes, "\n"), "uncommitted") {
		t.Errorf("an in-place session was warned about its checkout's uncommitted changes: %q", notes)
	}
	res, err := s.Prompt(ctx, "$ cat a.txt", nil)
	if err != nil || res.Status != "completed" {
		t.Fatalf("turn: %+v %v", res, err)
	}
	if list := gittest.Git(t, repo, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("worktrees of the checkout after an in-place session's first turn:\n%s", list)
	}
}
