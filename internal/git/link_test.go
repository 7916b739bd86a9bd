package git_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/git/gittest"
)

func linkedWorktree(t *testing.T) (repo, wt string) {
	t.Helper()
	repo = gittest.NewRepo(t)
	wt = filepath.Join(t.TempDir(), "wt")
	gittest.Git(t, repo, "worktree", "add", "-q", "-b", "side", wt)
	return repo, wt
}

func TestCheckWorktreeLinkRepairsRedirectedLink(t *testing.T) {
	t.Parallel()
	repo, wt := linkedWorktree(t)
	other := gittest.NewRepo(t)
	orig, err := os.ReadFile(filepath.Join(wt, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	common := filepath.Join(repo, ".git")
	for name, content := range map[string]*string{
		"another repository": ptr("gitdir: " + filepath.Join(other, ".git") + "\n"),
		"garbage":            ptr("not a link\n"),
		"relative elsewhere": ptr("gitdir: ../nowhere\n"),
		"deleted":            nil,
	} {
		if content == nil {
			os.Remove(filepath.Join(wt, ".git"))
		} else if err := os.WriteFile(filepath.Join(wt, ".git"), []byte(*content), 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := git.CheckWorktreeLink(wt, common)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !rep.Repaired {
			t.Errorf("%s: not repaired", name)
		}
		got, _ := os.ReadFile(filepath.Join(wt, ".git"))
		if string(got) != string(orig) {
			t.Errorf("%s: .git = %q, want %q", name, got, orig)
		}
		if top := gittest.Git(t, wt, "rev-parse", "--abbrev-ref", "HEAD"); top != "side" {
			t.Errorf("%s: worktree is on %q after the repair", name, top)
		}
		// Intact now: nothing to do.
		if rep, err := git.CheckWorktreeLink(wt, common); err != nil || rep.Repaired {
			t.Errorf("%s: second check = %+v, %v", name, rep, err)
		}
	}
}

func ptr(s string) *string { return &s }

func TestCheckWorktreeLinkLeavesDataAlone(t *testing.T) {
	t.Parallel()
	repo, wt := linkedWorktree(t)
	common := filepath.Join(repo, ".git")
	// A repository created at the worktree's top level: its .git is data.
	os.Remove(filepath.Join(wt, ".git"))
	gittest.Git(t, wt, "init", "-q")
	marker := filepath.Join(wt, ".git", "HEAD")
	before, _ := os.ReadFile(marker)
	_, err := git.CheckWorktreeLink(wt, common)
	if !errors.Is(err, git.ErrLinkBroken) {
		t.Fatalf("err = %v, want ErrLinkBroken", err)
	}
	if after, _ := os.ReadFile(marker); string(after) != string(before) {
		t.Error("the .git directory was changed")
	}
	if strings.Contains(err.Error(), "remove") || strings.Contains(err.Error(), "delete") {
		t.Errorf("advice may lose data: %v", err)
	}
}

func TestCheckWorktreeLinkWithoutRecord(t *testing.T) {
	t.Parallel()
	repo, wt := linkedWorktree(t)
	common := filepath.Join(repo, ".git")
	if err := os.RemoveAll(filepath.Join(common, "worktrees")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: /elsewhere\n"), 0o644)
	_, err := git.CheckWorktreeLink(wt, common)
	if !errors.Is(err, git.ErrLinkBroken) || !strings.Contains(err.Error(), "git worktree repair") {
		t.Fatalf("err = %v, want ErrLinkBroken advising git worktree repair", err)
	}
	if strings.Contains(err.Error(), "remove") || strings.Contains(err.Error(), "delete") {
		t.Errorf("advice may lose data: %v", err)
	}
}

func TestWorktreeHead(t *testing.T) {
	repo := gittest.NewRepo(t)
	gittest.WriteFile(t, repo, "a.txt", "a\n")
	base := gittest.Commit(t, repo, "base")
	wt := filepath.Join(t.TempDir(), "wt")
	gittest.Git(t, repo, "worktree", "add", "-q", "-b", "yolop/x", wt, base)
	for _, c := range []struct {
		dir, branch string
	}{{wt, "yolop/x"}, {repo, gittest.Git(t, repo, "symbolic-ref", "--short", "HEAD")}} {
		h, err := git.WorktreeHead(c.dir)
		if err != nil || h.Branch != c.branch || h.Detached != "" {
			t.Fatalf("%s: %+v %v", c.dir, h, err)
		}
	}
	gittest.Git(t, wt, "checkout", "-q", "--detach")
	if h, err := git.WorktreeHead(wt); err != nil || h.Branch != "" || h.Detached != base {
		t.Fatalf("detached: %+v %v", h, err)
	}
	if _, err := git.WorktreeHead(t.TempDir()); err == nil {
		t.Fatal("no error outside a work tree")
	}
}
