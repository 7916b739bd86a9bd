package catalog

import (
	"context"
	"fmt"
	"os"

	"github.com/yolop-dev/yolop/internal/land"
)

// Work is where a session's work stands, for `sessions show`.
type Work struct {
	Base       string          `json:"base,omitempty"`
	Changes    *land.Stat      `json:"changes,omitempty"`
	ChangesErr string          `json:"changes_error,omitempty"`
	LastApply  *land.LastApply `json:"last_apply,omitempty"`
	// Notes are the repairs made when the session was opened to look at
	// its files (an interrupted apply rolled back): tell them.
	Notes []string `json:"notes,omitempty"`
}

// WorkSession is an opened session whose files DescribeWork compares
// with their base.
type WorkSession interface {
	Diff(ctx context.Context, o land.DiffOptions) (*land.DiffResult, error)
	// Repairs are what opening the session repaired.
	Repairs() []string
	Close() error
}

// DescribeWork reports the base of session id's worktree, its files
// changed against it and its last apply (nil for a session without a
// worktree). open opens the session to diff its files, as `yolop diff`
// would; it is not called when the worktree or its repository is gone,
// because opening would re-create the worktree.
func DescribeWork(ctx context.Context, dataDir, id string, open func(ctx context.Context, id string) (WorkSession, error)) *Work {
	sm, err := findSession(dataDir, id)
	if err != nil || sm.Workspace.Worktree == nil {
		return nil
	}
	w := &Work{Base: sm.Workspace.Worktree.Base, LastApply: land.Last(dataDir, id)}
	if repoGone(sm.Workspace) {
		w.ChangesErr = fmt.Sprintf("its repository %s is gone, and the checkpoint snapshots with it; the files of its last turn are still in %s", sm.Workspace.RepoRoot, sm.Workspace.Worktree.Path)
		if _, err := os.Lstat(sm.Workspace.Worktree.Path); err != nil {
			w.ChangesErr = missingWorktreeFate(ctx, sm.Workspace)
		}
		return w
	}
	if _, err := os.Lstat(sm.Workspace.Worktree.Path); err != nil {
		// Showing must not re-create it (a resume does, and says so).
		w.ChangesErr = missingWorktreeFate(ctx, sm.Workspace)
		return w
	}
	s, err := open(ctx, id)
	if err != nil {
		w.ChangesErr = err.Error()
		return w
	}
	defer s.Close()
	w.Notes = s.Repairs()
	w.LastApply = land.Last(dataDir, id) // a repair may have settled it
	res, err := s.Diff(ctx, land.DiffOptions{Format: land.FormatNameStatus})
	if err != nil {
		w.ChangesErr = err.Error()
		return w
	}
	w.Changes = &res.Stat
	return w
}
