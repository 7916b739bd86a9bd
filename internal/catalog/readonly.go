package catalog

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/land"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/snapshot"
	"github.com/yolop-dev/yolop/internal/timeline"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// Peeked is a session another process holds open (its lock is taken),
// opened for the landing commands that only read its worktree: diff,
// apply and undo work, through a throwaway snapshot state (a first
// capture hashes every file once); commit is refused.
type Peeked struct {
	ls      land.Session
	done    func()
	lockErr error
}

// Peek opens session id of dataDir as a Peeked; lockErr is the error
// that said another process holds it (commit refuses with it). Close
// the Peeked when done.
func Peek(ctx context.Context, dataDir, id string, lockErr error) (*Peeked, error) {
	sess, err := session.OpenReadOnly(dataDir, id)
	if err != nil {
		return nil, err
	}
	ws := sess.Workspace()
	ls := land.Session{ID: id, Title: ws.Title, DataDir: dataDir, Checkout: ws.RepoRoot, WorktreeOwner: WorktreeOwner(dataDir)}
	if recs, err := timeline.ReadRecords(sess.Path(session.TimelineFile)); err == nil {
		for _, cp := range timeline.Build(recs).ActiveChain() {
			ls.Prompts = append(ls.Prompts, cp.Prompt)
		}
	}
	sess.Close()
	if ws.Worktree == nil {
		return &Peeked{ls: ls, done: func() {}, lockErr: lockErr}, nil
	}
	// Pinned to the session's records like every other git process of
	// the session: the agent may be rewriting the worktree's .git link
	// (or its git configuration) while its turn runs.
	if _, err := worktree.RecordGitDirs(&ws); err != nil {
		return nil, fmt.Errorf("read the files of session %s: %w", id, err)
	}
	state, err := os.MkdirTemp("", "yolop-peek-")
	if err != nil {
		return nil, err
	}
	eng, err := snapshot.Open(ctx, snapshot.Options{Worktree: ws.Worktree.Path, SessionID: id, StateDir: state, CommonDir: ws.CommonDir, GitDir: ws.Worktree.GitDir, Seal: worktree.SealOf(ws.Worktree)})
	if err != nil {
		os.RemoveAll(state)
		return nil, fmt.Errorf("read the files of session %s: %w", id, err)
	}
	ls.Worktree, ls.Branch, ls.Base, ls.Engine = eng.Root(), ws.Worktree.Branch, ws.Worktree.Base, eng
	return &Peeked{ls: ls, done: func() { eng.Wait(); os.RemoveAll(state) }, lockErr: lockErr}, nil
}

// PeekHeld is Peek for the session an open failed on with openErr
// because another process holds it (session.ErrLocked): session id, or
// without one the latest of the repository holding dir (the open that
// failed brought moved sessions up to date and said so already). Any
// other error is returned as it is.
func PeekHeld(ctx context.Context, dataDir, dir, id string, openErr error) (*Peeked, error) {
	if !errors.Is(openErr, session.ErrLocked) {
		return nil, openErr
	}
	if id == "" {
		if w, err := config.WorkDir(dir); err == nil {
			dir = w
		}
		latest, _, err := LatestFor(ctx, dataDir, dir)
		if err != nil {
			return nil, err
		}
		id = latest
	}
	return Peek(ctx, dataDir, id, openErr)
}

func (p *Peeked) ID() string { return p.ls.ID }

func (p *Peeked) Diff(ctx context.Context, o land.DiffOptions) (*land.DiffResult, error) {
	return land.Diff(ctx, p.ls, o)
}

func (p *Peeked) Apply(ctx context.Context, o land.ApplyOptions) (*land.ApplyResult, error) {
	return land.Apply(ctx, p.ls, o)
}

func (p *Peeked) UndoApply(ctx context.Context, o land.UndoOptions) (*land.UndoResult, error) {
	return land.Undo(ctx, p.ls, o)
}

func (p *Peeked) Commit(context.Context, land.CommitOptions) (*land.CommitResult, error) {
	return nil, fmt.Errorf("%w; commit from there with /commit, or after it exits", p.lockErr)
}

// Close removes the throwaway snapshot state.
func (p *Peeked) Close() error { p.done(); return nil }

// Repairs is empty: the process holding the session repairs it.
func (p *Peeked) Repairs() []string { return nil }

// ApplyRefs lists, for `checkpoints --all`, the captures of the user's
// checkout that the applies of ws's session keep in its repository; nil
// for a session without one.
func ApplyRefs(dataDir string, ws session.Workspace) func(context.Context) ([]checkpoint.Retained, error) {
	repo := ws.CommonDir // the refs live in the repository, shared by its worktrees
	if repo == "" {
		repo = ws.RepoRoot
	}
	if repo == "" {
		return nil
	}
	return func(ctx context.Context) ([]checkpoint.Retained, error) {
		if _, err := os.Stat(repo); err != nil {
			return nil, nil // the repository is gone: nothing of it to list
		}
		kept, err := land.KeptRefs(ctx, dataDir, repo, ws.SessionID)
		if err != nil {
			// Said in the listing rather than failing it.
			return []checkpoint.Retained{{Name: land.ApplyRefPrefix + ws.SessionID + "/", Why: "cannot be listed: " + err.Error(), Kind: checkpoint.RetainedApply}}, nil
		}
		out := make([]checkpoint.Retained, 0, len(kept))
		for _, k := range kept {
			out = append(out, checkpoint.Retained{Name: k.Name, Tree: k.Tree, Why: k.Why, Kind: checkpoint.RetainedApply})
		}
		return out, nil
	}
}

// OpenView opens session id of dataDir for reading only, without its
// lock; why says why it could not be opened for writing. Its controller
// answers every listing over the records as they are, with the files
// changed read straight from git's objects, and refuses every turn and
// restore with the reason; nothing is repaired or written. The caller
// closes the session.
func OpenView(dataDir, id, why string) (*session.Session, *checkpoint.Controller, error) {
	sess, err := session.OpenReadOnly(dataDir, id)
	if err != nil {
		return nil, nil, err
	}
	recs, err := timeline.ReadRecords(sess.Path(session.TimelineFile))
	if err != nil {
		sess.Close()
		return nil, nil, fmt.Errorf("session %s: read its timeline: %w", sess.ID, err)
	}
	ws := sess.Workspace()
	var snaps checkpoint.Snapshots
	noWS := ws.NoWorkspaceReason
	if ws.Kind == session.KindWorktree && ws.Worktree != nil {
		if st, err := os.Stat(ws.Worktree.Path); err == nil && st.IsDir() {
			snaps = snapshot.NewReadOnly(ws.Worktree.Path, sess.Path("snapshot"))
		} else {
			noWS = fmt.Sprintf("the session worktree %s is missing", ws.Worktree.Path)
		}
	} else if noWS == "" {
		noWS = "the session has no worktree of its own"
	}
	ro := "opened for reading only: " + why
	if sess.Corruption() != nil {
		_, ro = sess.ReadOnly()
	}
	ctl := checkpoint.New(checkpoint.Config{SessionID: sess.ID, Dir: sess.Dir, Store: sess, Timeline: timeline.Freeze(recs), Snapshots: snaps, NoWorkspace: noWS, ReadOnly: ro, OtherRefs: ApplyRefs(dataDir, ws)})
	return sess, ctl, nil
}
