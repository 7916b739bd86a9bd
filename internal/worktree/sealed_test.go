package worktree

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/session"
)

// TestRecordGitDirs: a session made before its worktree's admin directory
// and seal were recorded gets them from the repository's records, once; a
// worktree the repository does not know is refused with
// git.ErrNoWorktreeRecord.
func TestRecordGitDirs(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t)
	wt := filepath.Join(t.TempDir(), "wt")
	gittest.Git(t, repo, "worktree", "add", "-q", "-b", "yolop/x", wt)
	common := filepath.Join(repo, ".git")
	if err := os.WriteFile(filepath.Join(common, "worktrees", "wt", "config.worktree"), []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := session.Workspace{Kind: session.KindWorktree, CommonDir: common, Worktree: &session.Worktree{Path: wt, Branch: "yolop/x"}}
	old := ws.Worktree
	changed, err := RecordGitDirs(&ws)
	if err != nil || !changed {
		t.Fatalf("RecordGitDirs: %v %v", changed, err)
	}
	if old.GitDir != "" || old.Seal != nil {
		t.Fatal("the caller's worktree record was changed in place")
	}
	if ws.Worktree.GitDir != filepath.Join(common, "worktrees", "wt") || ws.Worktree.Seal == nil || ws.Worktree.Seal.ConfigWorktree == "" {
		t.Fatalf("recorded %+v %+v", ws.Worktree, ws.Worktree.Seal)
	}
	if s := SealOf(ws.Worktree); s == nil || *s != git.Seal(*ws.Worktree.Seal) {
		t.Fatalf("SealOf: %+v", s)
	}
	if changed, err := RecordGitDirs(&ws); err != nil || changed {
		t.Fatalf("recorded twice: %v %v", changed, err)
	}
	if changed, err := RecordGitDirs(&session.Workspace{Kind: session.KindInPlace, CommonDir: common}); err != nil || changed {
		t.Fatalf("in place: %v %v", changed, err)
	}
	stranger := session.Workspace{CommonDir: common, Worktree: &session.Worktree{Path: t.TempDir()}}
	if _, err := RecordGitDirs(&stranger); !errors.Is(err, git.ErrNoWorktreeRecord) {
		t.Fatalf("a worktree the repository does not know: %v", err)
	}

	var rec session.Worktree
	RecordSeal(&rec, Info{GitDir: "/admin", Seal: &git.Seal{SparseCheckout: "/a\n"}})
	if rec.GitDir != "/admin" || rec.Seal == nil || rec.Seal.SparseCheckout != "/a\n" || SealOf(&session.Worktree{}) != nil {
		t.Fatalf("RecordSeal: %+v", rec)
	}
}
