package worktree

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/yolop-dev/yolop/internal/sandbox"
	"github.com/yolop-dev/yolop/internal/session"
)

// TestAdminDir: only a .git link into the repository's worktrees/ names the
// admin directory the sandbox makes writable; a rewritten link names none.
func TestAdminDir(t *testing.T) {
	top, common := t.TempDir(), "/repo/.git"
	for link, want := range map[string]string{
		"gitdir: /repo/.git/worktrees/s1\n": "/repo/.git/worktrees/s1",
		"gitdir: /repo/.git\n":              "",
		"gitdir: /other/.git/worktrees/s1":  "",
		"gitdir: /repo/.git/worktrees/../":  "",
		"gitdir: /repo/.git/worktrees/a/b":  "",
		"not a link":                        "",
	} {
		if err := os.WriteFile(filepath.Join(top, ".git"), []byte(link), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := adminDirIn(top, common); got != want {
			t.Errorf("adminDirIn(%q) = %q, want %q", link, got, want)
		}
	}
}

// TestSandboxLayout: a worktree session writes its worktree and what git
// needs for its branch; in place, the checkout but not its .git nor the
// common dir; in a folder, not its private repository.
func TestSandboxLayout(t *testing.T) {
	t.Parallel()
	checkout := t.TempDir()
	common := filepath.Join(checkout, ".git")
	if err := os.Mkdir(common, 0o755); err != nil {
		t.Fatal(err)
	}
	wt := t.TempDir()
	admin := filepath.Join(common, "worktrees", "s1")
	if err := os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+admin+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		ws   session.Workspace
		want sandbox.Layout
	}{
		{"worktree", session.Workspace{Kind: session.KindWorktree, ActiveRoot: filepath.Join(wt, "sub"), RepoRoot: checkout, CommonDir: common, Worktree: &session.Worktree{Path: wt}},
			sandbox.Layout{Top: wt, TmpDir: "/tmp/s", CommonDir: common, AdminDir: admin}},
		{"worktree with its admin dir recorded", session.Workspace{Kind: session.KindWorktree, ActiveRoot: wt, CommonDir: common, Worktree: &session.Worktree{Path: wt, GitDir: "/recorded"}},
			sandbox.Layout{Top: wt, TmpDir: "/tmp/s", CommonDir: common, AdminDir: "/recorded"}},
		{"in place", session.Workspace{Kind: session.KindInPlace, ActiveRoot: checkout, RepoRoot: checkout, CommonDir: common},
			sandbox.Layout{Top: checkout, TmpDir: "/tmp/s", ReadOnly: []string{common}}},
		{"folder", session.Workspace{Kind: session.KindInPlace, Folder: true, ActiveRoot: wt, RepoRoot: wt, CommonDir: "/data/folders/k/git"},
			sandbox.Layout{Top: wt, TmpDir: "/tmp/s", ReadOnly: []string{"/data/folders/k/git"}}},
		{"conversation", session.Workspace{Kind: session.KindConversation, ActiveRoot: checkout},
			sandbox.Layout{Top: checkout, TmpDir: "/tmp/s"}},
	} {
		if got := SandboxLayout(c.ws, "/tmp/s"); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
