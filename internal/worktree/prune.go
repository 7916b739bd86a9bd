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
	// Spares also removes parked spares and set-aside stale spares, and
	// removes freed worktrees instead of parking them.
	Spares bool
}

// PruneReport says what Prune did. Entries are in List order.
type PruneReport struct {
	Removed     []Entry // removed worktrees (spares included, see Entry.Spare)
	WouldRemove []Entry // DryRun: worktrees that would be removed
	// Parked are freed worktrees that became spares, ParkedAs their new
	// paths; WouldPark are those a run without DryRun would park.
	Parked    []Entry
	ParkedAs  []string
	WouldPark []Entry
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
	if !o.DryRun {
		// Leftovers of interrupted starts and preparations first.
		if root, err := m.root(); err == nil {
			if dirs, err := os.ReadDir(root); err == nil {
				for _, d := range dirs {
					if d.IsDir() {
						m.sweep(ctx, filepath.Join(root, d.Name()))
					}
				}
			}
		}
	}
	entries, err := m.List(ctx)
	if err != nil {
		return rep, err
	}
	// How many spares each repository has, to predict parking.
	have := map[string]int{}
	if !o.Spares {
		for _, e := range entries {
			if e.Spare || (e.Partial && e.Live) {
				have[e.RepoID]++
			}
		}
	}
	for _, e := range entries {
		if e.Spare || e.Stale || e.Partial {
			if e.Partial && e.Live {
				continue // a running preparation owns it
			}
			// A spare holds nothing of value; one whose repository is
			// gone can never be claimed again, so it goes without
			// --spares.
			if !o.Spares && !e.Partial && !(e.Spare && e.Missing) {
				continue
			}
			if e.Stale && (e.Dirty || e.Missing) && !o.Force {
				rep.KeptDirty = append(rep.KeptDirty, e)
				continue
			}
			if o.DryRun {
				rep.WouldRemove = append(rep.WouldRemove, e)
				continue
			}
			if err := removeWorktreeDir(ctx, e.Path); err != nil {
				rep.Errors = append(rep.Errors, err.Error())
				continue
			}
			_ = os.Remove(filepath.Dir(e.Path))
			rep.Removed = append(rep.Removed, e)
			continue
		}
		if o.Referenced(e.SessionID) || m.starting(e) {
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
			if !o.Spares && !e.Missing && have[e.RepoID] < m.spareLimit() {
				have[e.RepoID]++
				rep.WouldPark = append(rep.WouldPark, e)
			} else {
				rep.WouldRemove = append(rep.WouldRemove, e)
			}
			continue
		}
		refs, parked, err := m.free(ctx, e, o.Force, !o.Spares)
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
		case parked != "":
			rep.Parked = append(rep.Parked, e)
			rep.ParkedAs = append(rep.ParkedAs, parked)
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
	refs, _, err := m.remove(ctx, info, sessionID, force, false)
	return refs, err
}

// Retire is Remove for `sessions rm`: the freed worktree is parked as a
// spare (its files discarded, see park) when the repository has fewer
// spares than m.Spares; parked is then the spare's path.
func (m *Manager) Retire(ctx context.Context, info Info, sessionID string, force bool) (refs []string, parked string, err error) {
	return m.remove(ctx, info, sessionID, force, true)
}

func (m *Manager) remove(ctx context.Context, info Info, sessionID string, force, park bool) ([]string, string, error) {
	if err := checkSessionID(sessionID); err != nil {
		return nil, "", err
	}
	root, err := m.root()
	if err != nil {
		return nil, "", err
	}
	path, err := filepath.Abs(info.Path)
	if err != nil {
		return nil, "", fmt.Errorf("worktree: resolve %s: %w", info.Path, err)
	}
	if filepath.Base(path) != sessionID || filepath.Dir(filepath.Dir(path)) != root {
		return nil, "", errorf(ErrNotOwned, "%s is not the worktree of session %s under %s; refusing to remove it", info.Path, sessionID, root)
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		if info.CommonDir == "" {
			return nil, "", nil
		}
		if _, err := os.Stat(info.CommonDir); err != nil {
			// The repository is gone, and its refs with it.
			return nil, "", nil
		}
		refs, err := deleteSessionRefs(ctx, info.CommonDir, sessionID)
		if err != nil {
			return refs, "", err
		}
		if err := pruneWorktrees(ctx, info.CommonDir); err != nil {
			return refs, "", fmt.Errorf("worktree: prune stale worktree records in %s: %w", info.CommonDir, err)
		}
		return refs, "", nil
	} else if err != nil {
		return nil, "", fmt.Errorf("worktree: %w", err)
	}
	// A rewritten .git file would make git check another repository's
	// state; put the link back first, and never guess "clean" without it.
	if info.CommonDir != "" {
		if _, err := git.CheckWorktreeLink(path, info.CommonDir); err != nil && !force && !errors.Is(err, git.ErrNoWorktreeRecord) {
			return nil, "", &DirtyError{Path: path, Reason: err.Error()}
		}
	}
	e := inspect(ctx, path, filepath.Base(filepath.Dir(path)), sessionID)
	if e.Missing && e.CommonDir == "" {
		// The link is broken; the recorded repository may still hold refs.
		if st, err := os.Stat(info.CommonDir); info.CommonDir != "" && err == nil && st.IsDir() {
			e.CommonDir = info.CommonDir
		}
	}
	return m.free(ctx, e, force, park)
}

// free removes one worktree: a fresh dirty check unless force, then the
// checkpoint refs, then the worktree. Refs go first so that a crash in
// between leaves a worktree that List still finds, never refs nothing
// finds. With park, the worktree is parked as a spare (see park) instead of
// removed when the repository has fewer spares than its limit; parked is
// then the spare's path.
func (m *Manager) free(ctx context.Context, e Entry, force, park bool) (refs []string, parked string, err error) {
	if !force {
		if e.Missing {
			return nil, "", &DirtyError{Path: e.Path, Reason: e.Problem}
		}
		st, err := status(ctx, e.Path)
		if err != nil {
			return nil, "", &DirtyError{Path: e.Path, Reason: err.Error()}
		}
		if len(st.paths) > 0 {
			return nil, "", &DirtyError{Path: e.Path, Paths: st.paths}
		}
	}
	if e.CommonDir != "" {
		var err error
		if refs, err = deleteSessionRefs(ctx, e.CommonDir, e.SessionID); err != nil {
			return refs, "", fmt.Errorf("%s: %w", e.Path, err)
		}
	}
	if park && !e.Missing && m.spareLimit() > 0 {
		// The user asked to discard the worktree's files; parking does
		// that too and keeps the checkout for the next session.
		parked, err := m.park(ctx, e.Path, e.SessionID)
		if err != nil || parked != "" {
			return refs, parked, err
		}
		if _, err := os.Lstat(e.Path); errors.Is(err, fs.ErrNotExist) {
			return refs, "", nil // a failed recycle already removed it
		}
	}
	if e.Missing {
		// git no longer knows this directory as a worktree; it is only files.
		if err := os.RemoveAll(e.Path); err != nil {
			return refs, "", fmt.Errorf("worktree: remove %s: %w", e.Path, err)
		}
		if e.CommonDir != "" {
			_ = pruneWorktrees(ctx, e.CommonDir)
		}
	} else {
		// --force: the dirty check above (or the caller's explicit force)
		// already decided; git's own check would also refuse untracked files.
		// A worktree the user locked still refuses, which is intended.
		if _, err := git.New(e.CommonDir).Run(ctx, "worktree", "remove", "--force", e.Path); err != nil {
			return refs, "", fmt.Errorf("worktree: remove %s: %w", e.Path, err)
		}
	}
	// Drop the <repo-id> directory once its last worktree is gone; it fails
	// harmlessly while other worktrees (or lock files) remain.
	_ = os.Remove(filepath.Dir(e.Path))
	return refs, "", nil
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

// sessionRefs lists refs/yolop/checkpoints/<sessionID>/ in the repository at
// commonDir and the permission records kept beside them under
// refs/yolop/modes/<sessionID>/. The trailing slash keeps session "s_1"
// from matching "s_10". The captures of the user's checkout taken before
// each apply (refs/yolop/apply/<sessionID>/) are not the session's: they
// hold the user's files, and outlive it.
func sessionRefs(ctx context.Context, commonDir, sessionID string) ([]ref, error) {
	if commonDir == "" {
		return nil, nil
	}
	if err := checkSessionID(sessionID); err != nil {
		return nil, err
	}
	out, err := git.New(commonDir).Run(ctx, "for-each-ref", "--format=%(objectname) %(refname)", RefPrefix+sessionID+"/", ModesRefPrefix+sessionID+"/")
	if err != nil {
		return nil, err
	}
	var refs []ref
	for _, line := range strings.Split(git.Trim(out), "\n") {
		if line == "" {
			continue
		}
		oid, name, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(name, RefPrefix+sessionID+"/") && !strings.HasPrefix(name, ModesRefPrefix+sessionID+"/") {
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

// starting reports whether a session start holds e's pending mark: its
// worktree exists, its session directory does not yet (a prune must not
// take it from under the start).
func (m *Manager) starting(e Entry) bool {
	mark := filepath.Join(filepath.Dir(e.Path), pendingPrefix+e.SessionID+lockSuffix)
	f, ok, err := lockFile(mark, false)
	if err != nil {
		return true // cannot tell: leave it
	}
	if ok {
		f.Close() // a mark nobody holds: the start is over (or died; sweep handles it)
		return false
	}
	return fileExists(mark)
}
