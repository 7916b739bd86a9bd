package catalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/yolop-dev/yolop/internal/land"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/snapshot"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// RemoveReport says what RemoveSession removed.
type RemoveReport struct {
	Worktree string   // "" when the session had none
	Branch   string   // kept
	Refs     []string // checkpoint refs deleted
	// Damaged says why the session's description could not be read; its
	// worktree, if it had one, was left for `yolop worktree prune`.
	Damaged string
	// ParkedAs is the spare the worktree became (its files discarded),
	// "" when it was removed.
	ParkedAs string
	// RepoGone is the session's repository when it no longer exists
	// (its branch and refs went with it); "" normally.
	RepoGone string
	// ApplyRefs are the captures of the user's checkout taken before each
	// apply of the session (and before a forced undo): the user's files,
	// kept when the session goes.
	ApplyRefs []string
}

// ErrRepoMissing: the session's repository no longer exists.
var ErrRepoMissing = errors.New("repository missing")

// RemoveSession removes a session, its worktree (refused when it has
// uncommitted changes, unless force) and its checkpoint refs. The branch
// is kept. The worktree is parked as a spare for the next session when the
// repository has fewer than [worktree] spares, else removed. A session
// whose workspace.json is damaged is removed as far as it can be
// described: its directory, and nothing it cannot name.
func RemoveSession(ctx context.Context, dataDir, id string, force bool) (RemoveReport, error) {
	var rep RemoveReport
	if _, err := findSession(dataDir, id); err != nil {
		return rep, err
	}
	// Taking the lock proves no other process is using the session.
	s, err := session.Open(dataDir, id)
	if s == nil && (errors.Is(err, session.ErrCorrupt) || errors.Is(err, fs.ErrNotExist)) {
		// workspace.json cannot be read, so the worktree cannot be named:
		// remove the session directory only. The worktree (if any) is
		// then unreferenced, and prune removes it, refusing while it holds
		// uncommitted changes.
		dir, unlock, lerr := session.LockForRemoval(dataDir, id)
		if lerr != nil {
			return rep, lerr
		}
		defer unlock()
		rep.Damaged = err.Error()
		return rep, os.RemoveAll(dir)
	}
	if err != nil {
		return rep, err
	}
	ws := s.Workspace()
	if ws.Worktree != nil && repoGone(ws) {
		rep.RepoGone = ws.RepoRoot
		if _, err := os.Lstat(ws.Worktree.Path); err == nil && !force {
			return rep, errors.Join(fmt.Errorf("%w: the repository %s of session %s is gone, so its worktree %s is no longer a git worktree: it holds the only copy of the session's files (copy out what you need). If the repository moved, run yolop from its new place instead (the session follows it); --force deletes the worktree and the session", ErrRepoMissing, ws.RepoRoot, id, ws.Worktree.Path), s.Close())
		}
	}
	if ws.Worktree != nil {
		m, err := manager(dataDir)
		if err != nil {
			return rep, errors.Join(err, s.Close())
		}
		refs, parked, err := m.Retire(ctx, worktree.InfoOf(ws), id, force)
		if err != nil {
			return rep, errors.Join(err, s.Close())
		}
		rep.Worktree, rep.Branch, rep.Refs, rep.ParkedAs = ws.Worktree.Path, ws.Worktree.Branch, refs, parked
		if ws.CommonDir != "" && rep.RepoGone == "" {
			kept, err := land.ListRefs(ctx, ws.CommonDir, id)
			if err != nil {
				return rep, errors.Join(err, s.Close())
			}
			rep.ApplyRefs = kept
		}
	}
	if ws.Kind == session.KindInPlace {
		// Its snapshots are refs in the user's repository; nothing else of
		// the checkout is the session's.
		if st, err := os.Stat(ws.CommonDir); err == nil && st.IsDir() {
			refs, err := snapshot.ListRefs(ctx, ws.CommonDir, id)
			if err == nil {
				_, err = snapshot.DeleteSessionRefs(ctx, ws.CommonDir, id)
			}
			if err != nil {
				return rep, errors.Join(fmt.Errorf("delete the checkpoint refs of session %s in %s: %w", id, ws.RepoRoot, err), s.Close())
			}
			rep.Refs = refs
		}
	}
	dir := s.Dir
	if err := s.Close(); err != nil {
		return rep, err
	}
	return rep, os.RemoveAll(dir)
}
