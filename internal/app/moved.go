package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// adoptMoved brings sessions whose repository was moved up to date with
// repo, the repository at its new place: yolop's worktrees stay in the data
// directory, so after `mv project elsewhere` git's records in the moved
// repository still name them while their .git files and the sessions'
// workspace.json name the old place. The links are repaired from the
// repository's own records, and each such session (only, when not "")
// whose recorded repository no longer exists is pointed at repo. A session
// whose recorded repository still exists is never changed, nor one another
// process holds. The notes say what was done.
func adoptMoved(ctx context.Context, dataDir string, repo *worktree.Repo, only string) ([]string, error) {
	moved, err := worktree.FindMoved(repo, dataDir)
	if err != nil {
		return nil, err
	}
	var notes []string
	for _, m := range moved {
		id := filepath.Base(m.Path)
		if session.CheckID(id) != nil || (only != "" && id != only) {
			continue // a spare, or not the session asked for
		}
		note, err := adoptSession(dataDir, id, m.Path, repo)
		if err != nil {
			return notes, err
		}
		if note != "" {
			notes = append(notes, note)
		}
	}
	return notes, nil
}

func adoptSession(dataDir, id, path string, repo *worktree.Repo) (string, error) {
	sess, err := session.Open(dataDir, id)
	var le *session.LockedError
	if errors.Is(err, session.ErrNotFound) || errors.As(err, &le) {
		return "", nil // not a session of this data dir, or in use elsewhere
	}
	if err != nil {
		return "", err
	}
	defer sess.Close()
	ws := sess.Workspace()
	if ws.Kind != session.KindWorktree || ws.Worktree == nil || ws.CommonDir == repo.CommonDir || !sameDir(ws.Worktree.Path, path) {
		return "", nil
	}
	if _, err := os.Stat(ws.CommonDir); err == nil {
		return "", nil // its repository is still where it was
	}
	oldTop, newTop := worktree.TopOf(ws.CommonDir), worktree.TopOf(repo.CommonDir)
	from, to := ws.RepoRoot, ""
	ws.CommonDir = repo.CommonDir
	ws.RepoRoot = remap(ws.RepoRoot, oldTop, newTop)
	ws.ActiveRoot = remap(ws.ActiveRoot, oldTop, newTop)
	to = ws.RepoRoot
	if err := sess.SaveWorkspace(ws); err != nil {
		return "", fmt.Errorf("session %s: record the repository's new place: %w", id, err)
	}
	return fmt.Sprintf("The repository of session %s moved from %s to %s; the session now uses it there (its worktree's git link was repaired, nothing else changed).", id, from, to), nil
}

// remap moves p from under oldTop to under newTop; p is returned unchanged
// when it is not under oldTop or either top is unknown.
func remap(p, oldTop, newTop string) string {
	if p == "" || oldTop == "" || newTop == "" {
		return p
	}
	if p == oldTop {
		return newTop
	}
	if rest, ok := strings.CutPrefix(p, oldTop+string(filepath.Separator)); ok {
		return filepath.Join(newTop, rest)
	}
	return p
}

// sameDir compares two directory paths after resolving symlinks.
func sameDir(a, b string) bool {
	if a == b {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}
