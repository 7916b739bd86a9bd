package app

import (
	"os"
	"path/filepath"
	"testing"
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
		if got := adminDir(top, common); got != want {
			t.Errorf("adminDir(%q) = %q, want %q", link, got, want)
		}
	}
}
