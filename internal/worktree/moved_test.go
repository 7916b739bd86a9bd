package worktree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// After the repository moves, FindMoved repairs the links of yolop's
// worktrees (sessions and spares) from the repository's records and says
// where they pointed; the user's own linked worktree elsewhere, whose link
// is broken the same way, is not touched.
func TestFindMovedRepairsOnlyYolopWorktrees(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	repoDir := gittest.NewRepoIn(t, parent)
	gittest.WriteFile(t, repoDir, "a.txt", "a\n")
	gittest.Git(t, repoDir, "add", "-A")
	gittest.Git(t, repoDir, "commit", "-q", "-m", "a")
	data := t.TempDir()
	m := &Manager{DataDir: data}
	repo := detect(t, repoDir)
	info := create(t, m, repo, "s_01moved000000000000000000", "moved")
	mine := filepath.Join(parent, "mine")
	gittest.Git(t, repoDir, "worktree", "add", "-q", "--detach", mine)
	mineLink, err := os.ReadFile(filepath.Join(mine, ".git"))
	if err != nil {
		t.Fatal(err)
	}

	// Nothing moved: the worktree is reported as intact, nothing is written.
	got, err := FindMoved(repo, data)
	if err != nil || len(got) != 1 || got[0].Path != info.Path || got[0].OldCommonDir != "" || got[0].Repaired {
		t.Fatalf("FindMoved before the move = %+v, %v; want %s intact", got, err, info.Path)
	}

	moved := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Rename(repoDir, moved); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(info.CommonDir); err == nil {
		t.Fatal("the old common dir still exists")
	}
	newRepo := detect(t, moved)
	got, err = FindMoved(newRepo, data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Path != info.Path || got[0].OldCommonDir != info.CommonDir || !got[0].Repaired {
		t.Fatalf("FindMoved after the move = %+v; want %s repaired from %s", got, info.Path, info.CommonDir)
	}
	link, err := os.ReadFile(filepath.Join(info.Path, ".git"))
	if err != nil || !strings.Contains(string(link), newRepo.CommonDir) {
		t.Fatalf("the session worktree's .git = %q (%v), want it in %s", link, err, newRepo.CommonDir)
	}
	if out := gittest.Git(t, info.Path, "rev-parse", "--git-common-dir"); out != newRepo.CommonDir {
		t.Fatalf("git in the worktree finds %s, want %s", out, newRepo.CommonDir)
	}
	if now, _ := os.ReadFile(filepath.Join(mine, ".git")); string(now) != string(mineLink) {
		t.Fatalf("the user's own worktree link changed: %q -> %q", mineLink, now)
	}
	// A second call finds it intact.
	if got, err = FindMoved(newRepo, data); err != nil || len(got) != 1 || got[0].OldCommonDir != "" {
		t.Fatalf("FindMoved again = %+v, %v", got, err)
	}
}
