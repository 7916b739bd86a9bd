package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/yolop-dev/yolop/internal/git"
)

// DirtyError reports the uncommitted changes that stopped a removal. It
// matches ErrDirty with errors.Is.
type DirtyError struct {
	Path  string   // the worktree
	Paths []string // changed paths, as `git status` names them
	// Reason replaces the path list when the state could not be checked.
	Reason string
}

func (e *DirtyError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("worktree: cannot check %s for uncommitted changes (%s); force the removal to delete it anyway", e.Path, e.Reason)
	}
	const show = 5
	list := e.Paths
	more := ""
	if len(list) > show {
		more = fmt.Sprintf(" and %d more", len(list)-show)
		list = list[:show]
	}
	return fmt.Sprintf("worktree: %s has uncommitted changes (%s%s); commit or discard them, or force the removal to lose them",
		e.Path, strings.Join(list, ", "), more)
}

func (e *DirtyError) Unwrap() error { return ErrDirty }

// PruneOptions controls Prune.
type PruneOptions struct {
	// DryRun reports what would be removed and changes nothing.
	DryRun bool
	// Force removes worktrees with uncommitted changes, and worktrees whose
	// repository cannot be reached (so their state cannot be checked).
	Force bool
	// Referenced reports whether a session still uses its worktree; those
	// are never touched. Required.
	Referenced func(sessionID string) bool
}

// PruneReport says what Prune did. Entries are in List order.
type PruneReport struct {
	Removed     []Entry // removed worktrees
	WouldRemove []Entry // DryRun: worktrees that would be removed
	// KeptDirty are unreferenced worktrees left alone because they have
	// uncommitted changes or could not be checked (Missing); Force removes them.
	KeptDirty []Entry
	// RefsDeleted maps a session id to its checkpoint refs that were
	// deleted (with DryRun: that would be deleted).
	RefsDeleted map[string][]string
	// Errors describe worktrees that could not be removed; the others were
	// still processed.
	Errors []string
}

// Prune removes the worktrees under the data directory that no session
// references, with their refs/yolop/checkpoints/<session-id>/ refs. It keeps
// and reports worktrees with uncommitted changes unless o.Force. It never
// deletes a branch or any ref outside the removed sessions' checkpoint refs.
// A worktree that fails to be removed is reported in Errors; the returned
// error is for failures that stop the whole scan.
func (m *Manager) Prune(ctx context.Context, o PruneOptions) (PruneReport, error) {
	rep := PruneReport{RefsDeleted: map[string][]string{}}
	if o.Referenced == nil {
		return rep, errors.New("worktree: PruneOptions.Referenced is required (without it every worktree would look unused)")
	}
	entries, err := m.List(ctx)
	if err != nil {
		return rep, err
	}
	for _, e := range entries {
		if o.Referenced(e.SessionID) {
			continue
		}
		if (e.Dirty || e.Missing) && !o.Force {
			rep.KeptDirty = append(rep.KeptDirty, e)
			continue
		}
		if o.DryRun {
			refs, err := sessionRefs(ctx, e.CommonDir, e.SessionID)
			if err != nil {
				rep.Errors = append(rep.Errors, fmt.Sprintf("%s: list checkpoint refs: %v", e.Path, err))
			}
			if len(refs) > 0 {
				rep.RefsDeleted[e.SessionID] = refNames(refs)
			}
			rep.WouldRemove = append(rep.WouldRemove, e)
			continue
		}
		refs, err := m.removeEntry(ctx, e, o.Force)
		if len(refs) > 0 {
			rep.RefsDeleted[e.SessionID] = refs
		}
		var de *DirtyError
		switch {
		case errors.As(err, &de):
			// Changed since the scan: the fresh check wins.
			e.Dirty, e.DirtyPaths = true, de.Paths
			rep.KeptDirty = append(rep.KeptDirty, e)
		case err != nil:
			rep.Errors = append(rep.Errors, err.Error())
		default:
			rep.Removed = append(rep.Removed, e)
		}
	}
	return rep, nil
}

// Remove removes the worktree of one session (for `sessions rm`) and its
// checkpoint refs, and returns the refs it deleted. Without force it fails
// with a *DirtyError (ErrDirty) when the worktree has uncommitted changes or
// its state cannot be checked. The session branch is kept. info.Path must be
// <data-dir>/worktrees/<repo-id>/<sessionID>, or Remove fails with
// ErrNotOwned. A worktree directory that is already gone is not an error: its
// refs are still deleted and git's stale record of it is pruned.
func (m *Manager) Remove(ctx context.Context, info Info, sessionID string, force bool) ([]string, error) {
	if err := checkSessionID(sessionID); err != nil {
		return nil, err
	}
	root, err := m.root()
	if err != nil {
		return nil, err
	}
	path, err := filepath.Abs(info.Path)
	if err != nil {
		return nil, fmt.Errorf("worktree: resolve %s: %w", info.Path, err)
	}
	if filepath.Base(path) != sessionID || filepath.Dir(filepath.Dir(path)) != root {
		return nil, errorf(ErrNotOwned, "%s is not the worktree of session %s under %s; refusing to remove it", info.Path, sessionID, root)
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		if info.CommonDir == "" {
			return nil, nil
		}
		if _, err := os.Stat(info.CommonDir); err != nil {
			// The repository is gone, and its refs with it.
			return nil, nil
		}
		refs, err := deleteSessionRefs(ctx, info.CommonDir, sessionID)
		if err != nil {
			return refs, err
		}
		if _, err := git.New(info.CommonDir).Run(ctx, "worktree", "prune"); err != nil {
			return refs, fmt.Errorf("worktree: prune stale worktree records in %s: %w", info.CommonDir, err)
		}
		return refs, nil
	} else if err != nil {
		return nil, fmt.Errorf("worktree: %w", err)
	}
	// A rewritten .git file would make git check another repository's
	// state; put the link back first, and never guess "clean" without it.
	if info.CommonDir != "" {
		if _, err := git.CheckWorktreeLink(path, info.CommonDir); err != nil && !force && !errors.Is(err, git.ErrNoWorktreeRecord) {
			return nil, &DirtyError{Path: path, Reason: err.Error()}
		}
	}
	e := inspect(ctx, path, filepath.Base(filepath.Dir(path)), sessionID)
	if e.Missing && e.CommonDir == "" {
		// The link is broken; the recorded repository may still hold refs.
		if st, err := os.Stat(info.CommonDir); info.CommonDir != "" && err == nil && st.IsDir() {
			e.CommonDir = info.CommonDir
		}
	}
	return m.removeEntry(ctx, e, force)
}

// removeEntry removes one worktree: a fresh dirty check unless force, then
// the checkpoint refs, then the worktree. Refs go first so that a crash in
// between leaves a worktree that List still finds, never refs nothing finds.
func (m *Manager) removeEntry(ctx context.Context, e Entry, force bool) ([]string, error) {
	if !force {
		if e.Missing {
			return nil, &DirtyError{Path: e.Path, Reason: e.Problem}
		}
		st, err := status(ctx, e.Path)
		if err != nil {
			return nil, &DirtyError{Path: e.Path, Reason: err.Error()}
		}
		if len(st.paths) > 0 {
			return nil, &DirtyError{Path: e.Path, Paths: st.paths}
		}
	}
	var refs []string
	if e.CommonDir != "" {
		var err error
		if refs, err = deleteSessionRefs(ctx, e.CommonDir, e.SessionID); err != nil {
			return refs, fmt.Errorf("%s: %w", e.Path, err)
		}
	}
	if e.Missing {
		// git no longer knows this directory as a worktree; it is only files.
		if err := os.RemoveAll(e.Path); err != nil {
			return refs, fmt.Errorf("worktree: remove %s: %w", e.Path, err)
		}
		if e.CommonDir != "" {
			_, _ = git.New(e.CommonDir).Run(ctx, "worktree", "prune")
		}
	} else {
		// --force: the dirty check above (or the caller's explicit force)
		// already decided; git's own check would also refuse untracked files.
		// A worktree the user locked still refuses, which is intended.
		if _, err := git.New(e.CommonDir).Run(ctx, "worktree", "remove", "--force", e.Path); err != nil {
			return refs, fmt.Errorf("worktree: remove %s: %w", e.Path, err)
		}
	}
	// Drop the <repo-id> directory once its last worktree is gone; it fails
	// harmlessly while other worktrees remain.
	_ = os.Remove(filepath.Dir(e.Path))
	return refs, nil
}

// ref is one ref and the object it points at.
type ref struct{ name, oid string }

func refNames(refs []ref) []string {
	names := make([]string, len(refs))
	for i, r := range refs {
		names[i] = r.name
	}
	return names
}

// applyRefPrefix holds the captures of the user's checkout taken before
// each apply (refs/yolop/apply/<session>/<n>); they go with the session.
const applyRefPrefix = "refs/yolop/apply/"

// sessionRefs lists refs/yolop/checkpoints/<sessionID>/ in the repository at
// commonDir, the permission records kept beside them under
// refs/yolop/modes/<sessionID>/, and the captures taken before each apply
// under refs/yolop/apply/<sessionID>/. The trailing slash keeps session "s_1"
// from matching "s_10".
func sessionRefs(ctx context.Context, commonDir, sessionID string) ([]ref, error) {
	if commonDir == "" {
		return nil, nil
	}
	if err := checkSessionID(sessionID); err != nil {
		return nil, err
	}
	out, err := git.New(commonDir).Run(ctx, "for-each-ref", "--format=%(objectname) %(refname)", RefPrefix+sessionID+"/", ModesRefPrefix+sessionID+"/", applyRefPrefix+sessionID+"/")
	if err != nil {
		return nil, err
	}
	var refs []ref
	for _, line := range strings.Split(git.Trim(out), "\n") {
		if line == "" {
			continue
		}
		oid, name, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(name, RefPrefix+sessionID+"/") && !strings.HasPrefix(name, ModesRefPrefix+sessionID+"/") && !strings.HasPrefix(name, applyRefPrefix+sessionID+"/") {
			return nil, fmt.Errorf("unexpected for-each-ref line %q", line)
		}
		refs = append(refs, ref{name: name, oid: oid})
	}
	return refs, nil
}

// deleteSessionRefs deletes every checkpoint ref of sessionID in one
// transaction. Each delete names the value just listed, so a ref moved by a
// concurrent writer fails the transaction and nothing is deleted.
func deleteSessionRefs(ctx context.Context, commonDir, sessionID string) ([]string, error) {
	refs, err := sessionRefs(ctx, commonDir, sessionID)
	if err != nil {
		return nil, fmt.Errorf("worktree: list checkpoint refs of session %s in %s: %w", sessionID, commonDir, err)
	}
	if len(refs) == 0 {
		return nil, nil
	}
	var in strings.Builder
	for _, r := range refs {
		fmt.Fprintf(&in, "delete %s %s\n", r.name, r.oid)
	}
	if _, err := git.New(commonDir).RunInput(ctx, []byte(in.String()), "update-ref", "--stdin"); err != nil {
		return nil, fmt.Errorf("worktree: delete checkpoint refs of session %s in %s: %w", sessionID, commonDir, err)
	}
	return refNames(refs), nil
}
