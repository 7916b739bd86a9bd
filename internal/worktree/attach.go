package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/snapshot"
)

// Attached is the workspace of a session being opened, as Attach found
// and repaired it.
type Attached struct {
	// Workspace is the session's, its worktree's git dirs recorded
	// (workspace.json is saved unless the session is read-only).
	Workspace session.Workspace
	// NoWorkspace says why the session has no workspace snapshots ("" when
	// it may have them); Warnings are what the user must be told of it.
	NoWorkspace string
	Warnings    []string
	// Notes are what Attach repaired (the worktree's .git link).
	Notes []string
	// Broken is set when the worktree's files are there but git cannot be
	// trusted with them (its .git was replaced by something yolop must not
	// touch): the session stays readable, turns and restores are refused
	// with this reason, and nothing is lost.
	Broken string
	// Readded is set when the worktree had been deleted and was added
	// again on its branch: it holds the branch's committed files until
	// the session's newest snapshot is put back.
	Readded *Info
	// Hold is an in-place session's hold on its checkout's lock (nil for
	// others); the caller closes it.
	Hold *CheckoutHold

	sess     *session.Session
	engine   bool // there is an engine to open
	info     Info // the worktree as CheckLink or Ensure left it
	verified bool // Ensure verified a re-added worktree already
	dataDir  string
}

// Attach finds the workspace of sess, an existing session of dataDir,
// again: a worktree's .git link is checked (and put back when a command
// rewrote it), a deleted worktree is added again (git worktree add), an
// in-place checkout must still be there (ErrRepoGone: it moved or was
// deleted). Nothing else asks git anything: a session opened to list its
// checkpoints never opens its engine (see Snapshots).
func Attach(ctx context.Context, sess *session.Session, dataDir string) (*Attached, error) {
	ws := sess.Workspace()
	a := &Attached{sess: sess, dataDir: dataDir, NoWorkspace: ws.NoWorkspaceReason}
	switch {
	case ws.Kind == session.KindWorktree && ws.Worktree != nil:
		if err := a.attachWorktree(ctx, &ws); err != nil {
			return nil, err
		}
	case ws.Kind == session.KindInPlace:
		// In place: the engine works over the user's own checkout, its
		// private index and state in the session directory; nothing of
		// the user's git state is touched.
		if st, err := os.Stat(ws.RepoRoot); err != nil || !st.IsDir() {
			// Opened from its new place, the session follows it
			// (catalog.AdoptMoved); elsewhere it opens for reading.
			return nil, fmt.Errorf("%w: the checkout %s of this session is no longer there. If you moved it, run yolop from its new place (cd NEW-PLACE && yolop --session %s, or -c): the session follows it. If it was deleted, the session's snapshots went with it; its conversation can still be listed and replayed", ErrRepoGone, ws.RepoRoot, sess.ID)
		}
		a.Hold = NewCheckoutHold(ws.CommonDir, ws.RepoRoot, sess.ID, ws.Folder)
		a.engine = true
	case a.NoWorkspace == "":
		a.NoWorkspace = "the session has no worktree of its own"
	case a.NoWorkspace == ReasonNoCommits:
		// The reason it was given may be over: the session still has no
		// worktree, and saying "no commits yet" would be false.
		if _, err := Detect(ctx, ws.ActiveRoot); err == nil {
			a.NoWorkspace = "the session started before the repository's first commit"
			a.Warnings = append(a.Warnings, "this session was started before the repository had a commit, so it has no worktree: its turns run in your checkout and rewind restores the conversation, not the files. Start a new session (yolop without -c) to get checkpoints of your files")
		}
	}
	a.Workspace = ws
	return a, nil
}

// attachWorktree is Attach for a session that owns a worktree.
func (a *Attached) attachWorktree(ctx context.Context, ws *session.Workspace) error {
	m := &Manager{DataDir: a.dataDir}
	info, present, err := m.CheckLink(InfoOf(*ws))
	recreated := false
	if err == nil && !present {
		// Deleted: put it back now (git worktree add).
		info, err = m.Ensure(ctx, InfoOf(*ws))
		if recreated = err == nil && info.Recreated; recreated {
			added := info
			a.Readded = &added
		}
	}
	if errors.Is(err, git.ErrLinkBroken) {
		a.NoWorkspace = "workspace snapshots unavailable: " + err.Error()
		a.Broken = err.Error()
		return nil
	} else if err != nil {
		return err // CheckLink's and Ensure's errors say "worktree: …" themselves
	}
	if info.LinkRepaired {
		a.Notes = append(a.Notes, "the worktree's .git file had been changed by a command; yolop pointed it back at the session's repository, and touched nothing else")
	}
	if present || recreated {
		if recreated {
			// git made a new administrative directory for it.
			cp := *ws.Worktree
			cp.GitDir, cp.Seal = "", nil
			ws.Worktree = &cp
		}
		ro, _ := a.sess.ReadOnly()
		changed, err := RecordGitDirs(ws)
		if err != nil && !errors.Is(err, git.ErrNoWorktreeRecord) {
			return err
		}
		if changed && !ro {
			if err := a.sess.SaveWorkspace(*ws); err != nil {
				return err
			}
		}
	}
	a.info, a.verified, a.engine = info, !present, true
	return nil
}

// HasEngine reports whether the session has a snapshot engine to open:
// not one without a workspace of its own, nor a Broken worktree.
func (a *Attached) HasEngine() bool { return a.engine }

// EngineOptions are what a session's snapshot engine is opened with
// beyond its workspace.
type EngineOptions struct {
	Budget    time.Duration // a capture's time budget (0: the engine's default)
	Failpoint func(name string)
	// KnownClean and KnownWalk: a new worktree was just proved clean by
	// its claim, with the walk made when it was parked (Started).
	KnownClean bool
	KnownWalk  *snapshot.Walk
	// KnownWatch is the watcher armed over a claimed spare before its
	// proof (Started.Watch): the engine takes it over, or Close of the
	// engine never opened releases it.
	KnownWatch *snapshot.Prewatch
	// Watch, when set, keeps a file watcher over the session's files.
	Watch *snapshot.WatchOptions
	// MaxFileSize reads a folder's [workspace] max_file_size when its
	// engine opens; its error stops the turn.
	MaxFileSize func() (int64, error)
	// Look is git's answer about the checkout of an in-place session,
	// asked ahead (snapshot.LookAhead): its engine takes it when opened.
	Look *snapshot.Look
}

// Snapshots returns the session's snapshot engine, opened when first
// needed (nil when HasEngine is false). Opening checks first that a
// worktree's directory is still a worktree of its repository (nothing may
// run there otherwise), and puts back a folder's private repository in
// the data directory when it was deleted; an engine that cannot be opened
// leaves the session conversation only (snapshot.UnavailableError).
func (a *Attached) Snapshots(o EngineOptions) *snapshot.Lazy {
	if !a.engine {
		return nil
	}
	ws, sess := a.Workspace, a.sess
	so := snapshot.Options{SessionID: sess.ID, StateDir: sess.Path("snapshot"), Budget: o.Budget, Failpoint: o.Failpoint, BeforeRef: sess.Durable}
	return snapshot.NewLazy(func(ctx context.Context) (*snapshot.Engine, error) {
		handed := false // the prewatch, to Open, which closes it if it fails
		defer func() {
			if !handed {
				o.KnownWatch.Close()
			}
		}()
		switch {
		case ws.Kind == session.KindWorktree:
			if !a.verified {
				m := &Manager{DataDir: a.dataDir}
				if err := m.Verify(ctx, a.info); err != nil {
					return nil, fmt.Errorf("worktree: %w", err)
				}
			}
			so.Worktree, so.CommonDir, so.GitDir, so.Seal = ws.Worktree.Path, ws.CommonDir, ws.Worktree.GitDir, SealOf(ws.Worktree)
			so.SeedSettled, so.KnownClean, so.KnownWalk, so.OwnIndex = ws.Recycled, o.KnownClean, o.KnownWalk, true
			so.Prewatch = o.KnownWatch
		case ws.Folder:
			// A folder outside git: its private repository in the data
			// directory, made again if it was deleted.
			limit, err := o.MaxFileSize()
			if err != nil {
				return nil, err
			}
			if _, err := snapshot.ImportFolder(ctx, snapshot.ImportOptions{GitDir: ws.CommonDir, Folder: ws.RepoRoot, MaxFileSize: limit}); err != nil {
				return nil, &snapshot.UnavailableError{Err: err}
			}
			so.Worktree, so.GitDir, so.CommonDir, so.Folder, so.MaxFileSize = ws.RepoRoot, ws.CommonDir, ws.CommonDir, true, limit
		default:
			so.Worktree, so.Look = ws.RepoRoot, o.Look
		}
		handed = so.Prewatch != nil
		eng, err := snapshot.Open(ctx, so)
		if err != nil {
			return nil, &snapshot.UnavailableError{Err: err}
		}
		if o.Watch != nil {
			eng.Watch(*o.Watch)
		}
		return eng, nil
	}).Unopened(o.KnownWatch.Close)
}
