package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/search"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// ErrNoSession: no session was started from the directory asked about,
// so there is none to continue.
var ErrNoSession = fault.New(fault.NoSession, "no session to continue")

// LatestFor finds the session of dir's repository (or of dir itself
// outside a repository) used last: where a turn ran or a restore was
// confirmed most recently.
//
// Sessions whose repository was moved to dir's repository are brought up
// to date first (the notes say which), so -c finds them at the new place.
func LatestFor(ctx context.Context, dataDir, dir string) (string, []string, error) {
	root := dir
	var notes []string
	if repo, err := worktree.Detect(ctx, dir); err == nil {
		root = repo.Root
		n, err := AdoptMoved(ctx, dataDir, repo, "")
		notes = n
		if err != nil {
			notes = append(notes, "A session whose repository moved here could not follow it: "+err.Error())
		}
	}
	id, err := search.LatestFor(dataDir, root)
	if err != nil {
		return "", notes, err
	}
	if id == "" {
		return "", notes, fmt.Errorf("%w started from %s: run yolop without -c to start one", ErrNoSession, root)
	}
	return id, notes, nil
}

// SessionOfWorktree returns the session whose worktree holds dir (dir
// under <data-dir>/worktrees/<repo-id>/<session-id>), "" when none does.
func SessionOfWorktree(dataDir, dir string) string {
	root, err := filepath.Abs(filepath.Join(dataDir, "worktrees"))
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return ""
	}
	parts := strings.Split(rel, string(filepath.Separator))
	if len(parts) < 2 || session.CheckID(parts[1]) != nil {
		return ""
	}
	if _, err := os.Stat(filepath.Join(session.SessionsDir(dataDir), parts[1])); err != nil {
		return ""
	}
	return parts[1]
}

// WorktreeOwner is SessionOfWorktree as land asks it: which session a
// worktree belongs to.
func WorktreeOwner(dataDir string) func(dir string) string {
	return func(dir string) string { return SessionOfWorktree(dataDir, dir) }
}

// MissingWorktree says why session id's worktree cannot be read ("" when
// it is there, or the session has none or cannot be read: opening will
// tell).
func MissingWorktree(ctx context.Context, dataDir, id string) string {
	if session.CheckID(id) != nil {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(session.SessionsDir(dataDir), id, session.WorkspaceFile))
	if err != nil {
		return ""
	}
	var ws session.Workspace
	if json.Unmarshal(b, &ws) != nil || ws.Worktree == nil {
		return ""
	}
	if _, err := os.Lstat(ws.Worktree.Path); errors.Is(err, fs.ErrNotExist) {
		return missingWorktreeFate(ctx, ws)
	}
	return ""
}
