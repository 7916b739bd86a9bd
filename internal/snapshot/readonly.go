package snapshot

import (
	"context"

	"github.com/yolop-dev/yolop/internal/fault"
)

// ReadOnly is the snapshots of a session opened for reading only: it
// compares snapshot trees (a Differ) and refuses to capture or restore,
// since such a session never writes.
type ReadOnly struct{ d *Differ }

// NewReadOnly returns the read-only snapshots of worktree (see NewDiffer).
func NewReadOnly(worktree, stateDir string) ReadOnly {
	return ReadOnly{NewDiffer(worktree, stateDir)}
}

var errReadOnly = fault.Plain("snapshot: the session was opened for reading only")

func (r ReadOnly) Diff(ctx context.Context, from, to string) ([]Change, error) {
	return r.d.Diff(ctx, from, to)
}

func (ReadOnly) Capture(context.Context, string) (Snapshot, error) { return Snapshot{}, errReadOnly }
func (ReadOnly) Excluded(context.Context) ([]string, error)        { return nil, errReadOnly }
func (ReadOnly) Restore(context.Context, Snapshot, string) (RestoreResult, error) {
	return RestoreResult{}, errReadOnly
}
func (ReadOnly) CheckRestore(context.Context, string, string) (RestoreCheck, error) {
	return RestoreCheck{}, errReadOnly
}
func (ReadOnly) LeftAlone(ch []Change) ([]Change, []string) { return ch, nil }
func (ReadOnly) PatchPath(context.Context, string, string, string) (PathPatch, error) {
	return PathPatch{}, errReadOnly
}
func (ReadOnly) LinkRepairs() []string { return nil }
