package catalog

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/land"
	"github.com/yolop-dev/yolop/internal/search"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// SessionRow describes a saved session for listings and `sessions show`.
type SessionRow struct {
	SessionID string `json:"session_id"`
	// Folder: in place in a folder outside git (RepoRoot is the folder).
	Folder  bool      `json:"folder,omitempty"`
	Title   string    `json:"title"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// LastUsed is when a turn last ran or a restore was last confirmed in
	// the session (null when never); listings sort by it and -c picks by
	// it. Opening, listing and forking a session do not use it.
	LastUsed   *time.Time `json:"last_used"`
	Turns      int        `json:"turns"`
	RepoRoot   string     `json:"repo_root"`
	ActiveRoot string     `json:"active_root"`
	Worktree   string     `json:"worktree"`
	Branch     string     `json:"branch"`
	// BranchNote says that the agent moved the worktree off the session's
	// branch: Branch is then the one it is on (the session's when on
	// none), the branch its work is on.
	BranchNote string `json:"branch_note,omitempty"`
	// WorktreeState is the state of the session's workspace.
	WorktreeState WorktreeState `json:"worktree_state"`
	// WorkspaceMode is where the session works: worktree, in-place or
	// none.
	WorkspaceMode string `json:"workspace_mode"`
	Workspace     bool   `json:"workspace"`
	Reason        string `json:"reason"`
	// IsReadOnly says the session refuses turns and restores (State says
	// why).
	IsReadOnly bool   `json:"read_only"`
	State      State  `json:"state"`
	Dir        string `json:"dir"`
	// Recycled: the worktree was a parked spare, not a fresh checkout.
	Recycled bool `json:"recycled"`
	// DigestError says why the session's listing digest (summary.json)
	// could not be saved, so every listing parses its logs ("" normally).
	DigestError string `json:"-"`
}

// WorktreeState is the state of a session's workspace in a listing.
type WorktreeState string

// Workspace states, as listings and JSON show them.
const (
	WorktreeOK WorktreeState = "ok"
	// WorktreeMissing: the worktree directory is gone.
	WorktreeMissing WorktreeState = "missing"
	// WorktreeRepoMissing: the session's repository is gone (listing and
	// replay work, turns and restores do not).
	WorktreeRepoMissing  WorktreeState = "repository missing"
	WorktreeConversation WorktreeState = "conversation only"
	WorktreeInPlace      WorktreeState = "in place"
	// WorktreeCheckoutMissing: an in-place session's checkout is gone.
	WorktreeCheckoutMissing WorktreeState = "checkout missing"
)

// ReadOnly reports whether the row's session refuses turns and restores.
func (r SessionRow) ReadOnly() bool { return r.IsReadOnly }

// ListSessions describes every saved session, the one used last first,
// then those never used, newest first. A session that was opened and
// never used (no event at all) is left out.
func ListSessions(dataDir string) ([]SessionRow, error) {
	list, err := search.Catalog(dataDir)
	if err != nil {
		return nil, err
	}
	rows := make([]SessionRow, 0, len(list))
	for _, e := range list {
		if e.Unused {
			continue
		}
		rows = append(rows, describe(e))
	}
	return rows, nil
}

// DescribeSession describes one saved session.
func DescribeSession(dataDir, id string) (SessionRow, error) {
	sm, err := findSession(dataDir, id)
	if err != nil {
		return SessionRow{}, err
	}
	return describe(search.Describe(sm)), nil
}

func describe(e search.Entry) SessionRow {
	sm := e.Summary
	w := sm.Workspace
	out := SessionRow{SessionID: sm.ID, Title: w.Title, Created: checkpoint.JSONTime(w.Created), Updated: checkpoint.JSONTime(w.Updated), RepoRoot: w.RepoRoot, ActiveRoot: w.ActiveRoot, Workspace: w.Kind == session.KindWorktree || w.Kind == session.KindInPlace, Reason: w.NoWorkspaceReason, Dir: sm.Dir, WorktreeState: WorktreeConversation, WorkspaceMode: session.Mode(w.Kind)}
	if w.Kind == session.KindInPlace {
		out.WorktreeState = WorktreeInPlace
		out.Folder = w.Folder
		if _, err := os.Stat(w.RepoRoot); err != nil {
			out.WorktreeState = WorktreeCheckoutMissing
		}
	}
	if !e.LastUsed.IsZero() {
		t := checkpoint.JSONTime(e.LastUsed)
		out.LastUsed = &t
	}
	if w.Worktree != nil {
		out.Worktree, out.Branch = w.Worktree.Path, w.Worktree.Branch
		out.WorktreeState = WorktreeOK
		if _, err := os.Stat(w.Worktree.Path); err != nil {
			out.WorktreeState = WorktreeMissing
		} else {
			out.Branch, out.BranchNote = land.WorktreeBranch(w.Worktree.Path, w.Worktree.Branch)
		}
		if repoGone(w) {
			out.WorktreeState = WorktreeRepoMissing
		}
	}
	out.Recycled = w.Recycled
	if sm.Problem != "" {
		out.State = State{Kind: StateProblem, Detail: sm.Problem}
		return out
	}
	out.Turns = e.Turns
	if e.ReadOnly != "" {
		out.State = State{Kind: StateReadOnly, Detail: e.ReadOnly}
		out.IsReadOnly = true
	} else if out.WorktreeState == WorktreeRepoMissing {
		out.State = State{Kind: StateRepoMissing, Detail: fmt.Sprintf("%s is gone; listing and replay work, turns and restores do not (if it moved, run yolop from its new place: the session follows it)", w.RepoRoot)}
	}
	out.DigestError = e.DigestError
	return out
}

// readController builds a controller over a session opened for reading:
// it answers questions about the timeline (turns, active events) with the
// same code a live session uses, and refuses every mutation.
func readController(s *session.Session) (*checkpoint.Controller, error) {
	recs, err := timeline.ReadRecords(s.Path(session.TimelineFile))
	if err != nil {
		return nil, fmt.Errorf("read its timeline: %w", err)
	}
	return checkpoint.New(checkpoint.Config{SessionID: s.ID, Store: s, Timeline: timeline.Freeze(recs), ReadOnly: "opened for reading"}), nil
}

func findSession(dataDir, id string) (session.Summary, error) {
	if id == "" {
		return session.Summary{}, fmt.Errorf("no session id given; `yolop sessions` lists them (%w)", session.ErrNotFound)
	}
	list, err := session.List(dataDir)
	if err != nil {
		return session.Summary{}, err
	}
	for _, sm := range list {
		if sm.ID == id {
			return sm, nil
		}
	}
	return session.Summary{}, &session.NotFoundError{ID: id, Dir: session.SessionsDir(dataDir)}
}

// repoGone reports whether a worktree session's repository is gone.
func repoGone(ws session.Workspace) bool {
	if ws.CommonDir == "" {
		return false
	}
	st, err := os.Stat(ws.CommonDir)
	return err != nil || !st.IsDir()
}

// CheckpointIDs lists the checkpoints of a saved session's active branch,
// newest first, with their prompt labels (for shell completion). It reads
// the session without taking its lock and runs no git process.
func CheckpointIDs(ctx context.Context, dataDir, id string) ([]checkpoint.Row, error) {
	s, err := session.OpenReadOnly(dataDir, id)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	ctl, err := readController(s)
	if err != nil {
		return nil, err
	}
	return ctl.List(ctx, false)
}
