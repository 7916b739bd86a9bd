package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/land"
	"github.com/yolop-dev/yolop/internal/search"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/snapshot"
	"github.com/yolop-dev/yolop/internal/timeline"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// The lifecycle layer is what the command line calls: it opens, creates,
// describes, forks and removes sessions, and keeps worktrees tidy. The
// command line only parses flags, formats results and maps errors to exit
// codes; these names let it do so without importing the layers below.

// Sentinel errors the command line maps to exit codes and JSON codes.
var (
	ErrLocked   = session.ErrLocked
	ErrNotFound = session.ErrNotFound
)

// CheckSessionID reports whether id can name a session (it says why not).
func CheckSessionID(id string) error { return session.CheckID(id) }

// StartsWorktree reports whether a new session started in dir checks out a
// worktree of its own (so a host can say what the wait is for).
func StartsWorktree(ctx context.Context, dir, mode string) bool {
	if mode != "" && mode != config.WorkspaceWorktree {
		return false
	}
	if dir == "" {
		dir = "."
	}
	_, err := worktree.Detect(ctx, dir)
	return err == nil
}

// ChecksOutWorktree is StartsWorktree for a session of o: false too when a
// spare worktree is ready to be claimed, which writes only the files that
// differ and takes no noticeable time.
func ChecksOutWorktree(ctx context.Context, o Options) bool {
	if !StartsWorktree(ctx, o.Dir, o.Workspace) {
		return false
	}
	repo, err := worktree.Detect(ctx, cmp.Or(o.Dir, "."))
	return err == nil && !o.manager().SpareReady(repo)
}

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
	State      string `json:"state"` // ok, read-only: …, problem: …, repository missing: …
	// Problem says why the session cannot be read (State is then
	// "problem: " and it); "" when it can.
	Problem string `json:"-"`
	Dir     string `json:"dir"`
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
	out := SessionRow{SessionID: sm.ID, Title: w.Title, Created: checkpoint.JSONTime(w.Created), Updated: checkpoint.JSONTime(w.Updated), RepoRoot: w.RepoRoot, ActiveRoot: w.ActiveRoot, Workspace: w.Kind == session.KindWorktree || w.Kind == session.KindInPlace, Reason: w.NoWorkspaceReason, State: "ok", Dir: sm.Dir, WorktreeState: WorktreeConversation, WorkspaceMode: session.Mode(w.Kind)}
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
		out.Problem = sm.Problem
		out.State = "problem: " + sm.Problem
		return out
	}
	out.Turns = e.Turns
	if e.ReadOnly != "" {
		out.State = "read-only: " + e.ReadOnly
		out.IsReadOnly = true
	} else if out.WorktreeState == WorktreeRepoMissing {
		out.State = fmt.Sprintf("repository missing: %s is gone; listing and replay work, turns and restores do not (if it moved, run yolop from its new place: the session follows it)", w.RepoRoot)
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

// repoGone reports whether a worktree session's repository is gone.
func repoGone(ws session.Workspace) bool {
	if ws.CommonDir == "" {
		return false
	}
	st, err := os.Stat(ws.CommonDir)
	return err != nil || !st.IsDir()
}

// DirtyError is returned when a worktree has uncommitted changes and
// removal was not forced.
type DirtyError = worktree.DirtyError

// RemoveSession removes a session, its worktree (refused when it has
// uncommitted changes, unless force) and its checkpoint refs. The branch
// is kept. The worktree is parked as a spare for the next session when the
// repository has fewer than [worktree] spares, else removed. A session whose workspace.json is damaged is removed as far as
// it can be described: its directory, and nothing it cannot name.
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
		m, err := settledManager(dataDir)
		if err != nil {
			return rep, errors.Join(err, s.Close())
		}
		refs, parked, err := m.Retire(ctx, worktreeInfo(ws), id, force)
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

// ForkReport says what Fork carried over.
type ForkReport struct {
	SessionID string // the new session
	Events    int    // events of the old active branch carried over
	Turns     int    // turns carried over (listed and rewindable in the fork)
	Files     int    // paths copied over the commit the new worktree starts from
	HasFiles  bool   // the old session's files were copied
	// Note says where the files came from when not from the old
	// session's worktree ("" when they did).
	Note string
}

// ForkPlan is what a fork carries over from the old session, read and
// decided before anything of the new session exists.
type ForkPlan struct {
	// From is the old session's id, Title its title.
	From, Title string
	// Dir is where the fork belongs: the old session's checkout, so -c
	// and `sessions show` find it there.
	Dir string
	// Workspace is the old session's workspace mode, which the fork
	// keeps: in place it works in the same checkout (whose files are the
	// old session's), conversation only stays conversation only.
	Workspace string
	// Base is the commit the fork's worktree starts from, WorkBase the
	// one its work counts from ("" for both without a worktree).
	Base, WorkBase string
	// History is the old session's active branch, turn by turn.
	History checkpoint.ForkHistory
	// Fill gives the new worktree the old session's files before the new
	// session directory exists, and returns the number of paths it
	// changed; nil when the worktree keeps the files of Base.
	Fill func(ctx context.Context, dir, stateDir string) (int, error)
	// Note says where the files came from when not from the old
	// session's worktree ("" when they did).
	Note string
}

// PlanFork reads session id for a fork: its active conversation (up to
// any corruption), its workspace mode and checkout, and where its files
// are. A fork's worktree starts from the old worktree's commit and holds
// exactly the old worktree's files (uncommitted changes included), and it
// keeps the old session's base: the commit its work started from. When
// the old worktree is gone, the files come from the session's newest
// snapshot that is left; when none is, the fork is refused.
func PlanFork(ctx context.Context, dataDir, id string) (ForkPlan, error) {
	old, err := session.OpenReadOnly(dataDir, id)
	if err != nil {
		return ForkPlan{}, err
	}
	defer old.Close()
	ctl, err := readController(old)
	if err != nil {
		return ForkPlan{}, fmt.Errorf("fork %s: %w", id, err)
	}
	ws := old.Workspace()
	plan := ForkPlan{From: id, Title: ws.Title, Dir: ws.ActiveRoot, Workspace: config.WorkspaceWorktree}
	switch ws.Kind {
	case session.KindInPlace:
		plan.Workspace, plan.Dir = config.WorkspaceInPlace, ws.RepoRoot
	case session.KindConversation:
		plan.Workspace = config.WorkspaceNone
	}
	if ws.Worktree != nil && ws.RepoRoot != "" {
		plan.Dir = ws.RepoRoot
		// The fork's work counts from where the old session's did, so its
		// diff, apply and commit carry what the old session had already
		// committed on its branch too.
		plan.Base, plan.WorkBase = ws.Worktree.Base, ws.Worktree.Base
		if _, err := os.Stat(ws.Worktree.Path); err == nil {
			src := ws.Worktree.Path
			// A command may have pointed the worktree's .git elsewhere;
			// reading that repository's commit would fork the wrong base.
			if ws.CommonDir != "" {
				if _, err := git.CheckWorktreeLink(src, ws.CommonDir); err != nil && !errors.Is(err, git.ErrNoWorktreeRecord) {
					return ForkPlan{}, fmt.Errorf("fork %s: %w", id, err)
				}
			}
			out, err := git.New(src).Run(ctx, "rev-parse", "--verify", "HEAD^{commit}")
			if err != nil {
				return ForkPlan{}, fmt.Errorf("fork %s: read the commit of its worktree: %w", id, err)
			}
			plan.Base = git.Trim(out)
			plan.Fill = func(ctx context.Context, dir, stateDir string) (int, error) {
				n, err := copyFiles(ctx, src, dir, stateDir)
				if err != nil {
					return 0, fmt.Errorf("copy the files of %s: %w", src, err)
				}
				return n, nil
			}
		} else if errors.Is(err, fs.ErrNotExist) && !repoGone(ws) {
			// The worktree was deleted: its files are in the session's
			// snapshots, its commits on its branch (if that is left).
			fromBase := false
			r := git.New(ws.CommonDir)
			if out, err := r.Run(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+ws.Worktree.Branch+"^{commit}"); err == nil {
				plan.Base = git.Trim(out)
			} else {
				fromBase = true
			}
			var snap checkpoint.FilesSource
			for _, c := range ctl.FilesLeft() {
				if _, err := r.Run(ctx, "cat-file", "-e", c.Tree+"^{tree}"); err == nil {
					snap = c
					break
				}
			}
			if snap.Tree == "" {
				what := "the files committed on its branch " + ws.Worktree.Branch
				if fromBase {
					what = "the files of the commit its work started from (its branch " + ws.Worktree.Branch + " is gone too)"
				}
				return ForkPlan{}, fmt.Errorf("fork %s: its worktree %s is missing and no snapshot of its files is left in the repository, so a fork would hold only %s, not what the session left; resume it instead (`yolop --session %s` adds the worktree again), or start a new session", id, ws.Worktree.Path, what, id)
			}
			plan.Fill = func(ctx context.Context, dir, stateDir string) (int, error) {
				n, err := restoreFiles(ctx, snap.Tree, dir, stateDir)
				if err != nil {
					return 0, fmt.Errorf("put the files of its snapshot %s in the new worktree: %w", snap.Tree, err)
				}
				return n, nil
			}
			plan.Note = fmt.Sprintf("its worktree %s is missing: the fork has its files from its newest snapshot, %s", ws.Worktree.Path, snap.What)
			if fromBase {
				plan.Note += fmt.Sprintf(", over the commit its work started from (its branch %s is gone too: what it had committed is there as uncommitted changes)", ws.Worktree.Branch)
			}
			if len(snap.Missing) > 0 {
				plan.Note += fmt.Sprintf("; the end of %s was never captured, so anything changed then is not in the fork", strings.Join(snap.Missing, ", "))
			}
		}
	}
	plan.History = ctl.Fork()
	return plan, nil
}

// Fork starts a new session from plan: it carries the old session's
// active conversation as its history, in a fresh worktree that Fill gives
// the old session's files. The files are copied and verified before the
// new session exists, so a crash never leaves a session with half its
// files; the orphaned worktree it may leave is removed by `yolop worktree
// prune`.
func Fork(ctx context.Context, o Options, plan ForkPlan) (ForkReport, error) {
	var rep ForkReport
	o.Dir, o.Base, o.WorkBase, o.Workspace = plan.Dir, plan.Base, plan.WorkBase, plan.Workspace
	o.Create, o.SessionID, o.Continue = false, "", false
	if plan.Workspace == config.WorkspaceInPlace {
		// The old session works in that checkout already: $HOME or /
		// was asked for when it started.
		o.WorkspaceExplicit = true
	}
	s, err := Open(ctx, o)
	if err != nil {
		return rep, err
	}
	defer s.Close()
	n, err := s.materializeWith(ctx, plan.Title, plan.Fill)
	if err != nil {
		return rep, fmt.Errorf("fork %s: %w", plan.From, err)
	}
	rep.SessionID, rep.Files, rep.HasFiles, rep.Note = s.ID(), n, plan.Fill != nil, plan.Note
	p := s.Parts()
	var anchor checkpoint.Anchor
	eng, err := p.engine(ctx)
	if err != nil {
		return rep, fmt.Errorf("fork %s: %w", plan.From, err)
	}
	if eng != nil {
		anchor = func(ctx context.Context, name, tree string) (timeline.SnapshotRef, error) {
			snap, err := eng.Anchor(ctx, name, tree)
			return timeline.SnapshotRef{Tree: snap.Tree, Ref: snap.Ref}, err
		}
	}
	rep.Events, err = p.Controller.ImportFork(ctx, plan.History, plan.From, anchor)
	rep.Turns = len(plan.History.Turns)
	if err != nil {
		return rep, fmt.Errorf("fork %s: copy its conversation: %w", plan.From, err)
	}
	return rep, nil
}

// restoreFiles makes the worktree dst hold exactly the files of the
// snapshot tree (of dst's repository) and verifies the result. It returns
// the number of paths changed.
func restoreFiles(ctx context.Context, tree, dst, stateDir string) (int, error) {
	tmp, err := os.MkdirTemp(stateDir, "fork-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	to, err := snapshot.Open(ctx, snapshot.Options{Worktree: dst, SessionID: "fork", StateDir: tmp + "/dst"})
	if err != nil {
		return 0, err
	}
	defer to.Wait()
	cur, err := to.Capture(ctx, "")
	if err != nil {
		return 0, err
	}
	res, err := to.Restore(ctx, cur, tree)
	if err != nil {
		return 0, err
	}
	return len(res.Changes), nil
}

// copyFiles makes the worktree dst hold exactly the captured files of src
// (another worktree of the same repository: tracked and untracked, ignored
// and blocklisted paths excluded), and verifies the result. It returns the
// number of paths changed.
func copyFiles(ctx context.Context, src, dst, stateDir string) (int, error) {
	tmp, err := os.MkdirTemp(stateDir, "fork-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	from, err := snapshot.Open(ctx, snapshot.Options{Worktree: src, SessionID: "fork", StateDir: tmp + "/src"})
	if err != nil {
		return 0, err
	}
	defer from.Wait()
	want, err := from.Capture(ctx, "")
	if err != nil {
		return 0, err
	}
	return restoreFiles(ctx, want.Tree, dst, tmp)
}

// Worktree housekeeping.

// WorktreeEntry is a worktree under the data directory.
type WorktreeEntry = worktree.Entry

// PruneReport says what PruneWorktrees did.
type PruneReport = worktree.PruneReport

// WorktreeRow is a worktree (a session's or a spare, see Entry.Kind) and
// whether a saved session uses it.
type WorktreeRow struct {
	WorktreeEntry
	InUse bool
}

// ListWorktrees lists the session worktrees under the data directory.
func ListWorktrees(ctx context.Context, dataDir string) ([]WorktreeRow, error) {
	refd, err := referenced(dataDir)
	if err != nil {
		return nil, err
	}
	m, err := settledManager(dataDir)
	if err != nil {
		return nil, err
	}
	entries, err := m.List(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]WorktreeRow, 0, len(entries))
	for _, e := range entries {
		rows = append(rows, WorktreeRow{WorktreeEntry: e, InUse: refd(e.SessionID)})
	}
	// Sessions whose worktree directory was deleted: they have no
	// directory to list, but a resume adds it again.
	list, err := session.List(dataDir)
	if err != nil {
		return nil, err
	}
	for _, sm := range list {
		ws := sm.Workspace
		if ws.Worktree == nil || ws.Worktree.Path == "" {
			continue
		}
		if _, err := os.Lstat(ws.Worktree.Path); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		rows = append(rows, WorktreeRow{InUse: true, WorktreeEntry: worktree.Entry{
			Path: ws.Worktree.Path, RepoID: filepath.Base(filepath.Dir(ws.Worktree.Path)), SessionID: sm.ID,
			Branch: ws.Worktree.Branch, CommonDir: ws.CommonDir, Missing: true, Problem: missingWorktreeFate(ctx, ws),
		}})
	}
	return rows, nil
}

// PruneWorktrees frees worktrees no saved session references (parked as
// spares up to [worktree] spares, else removed) and deletes their
// checkpoint refs; branches are kept. spares also removes the spares, and
// removes freed worktrees instead of parking them.
func PruneWorktrees(ctx context.Context, dataDir string, dryRun, force, spares bool) (PruneReport, error) {
	refd, err := referenced(dataDir)
	if err != nil {
		return PruneReport{}, err
	}
	m, err := settledManager(dataDir)
	if err != nil {
		return PruneReport{}, err
	}
	rep, err := m.Prune(ctx, worktree.PruneOptions{DryRun: dryRun, Force: force, Spares: spares, Referenced: refd})
	if err != nil {
		return rep, err
	}
	err = pruneInPlace(ctx, dataDir, dryRun, &rep)
	return rep, err
}

// pruneInPlace deletes the snapshot refs of in-place sessions whose
// checkout is gone, or that were not used for [workspace] keep_days: their
// conversations stay, their checkpoints become conversation only. A
// session in use (its lock held) is left alone.
func pruneInPlace(ctx context.Context, dataDir string, dryRun bool, rep *worktree.PruneReport) error {
	keep, err := config.KeepDays()
	if err != nil {
		return err
	}
	list, err := search.Catalog(dataDir)
	if err != nil {
		return err
	}
	for _, e := range list {
		w := e.Summary.Workspace
		if w.Kind != session.KindInPlace || w.CommonDir == "" {
			continue
		}
		if info, err := os.Stat(w.CommonDir); err != nil || !info.IsDir() {
			continue // the repository is gone, and its refs with it
		}
		_, topErr := os.Stat(w.RepoRoot)
		last := e.LastUsed
		if last.IsZero() {
			last = w.Updated
		}
		if topErr == nil && time.Since(last) < time.Duration(keep)*24*time.Hour {
			continue
		}
		refs, err := snapshot.ListRefs(ctx, w.CommonDir, e.Summary.ID)
		if err != nil {
			rep.Errors = append(rep.Errors, fmt.Sprintf("in-place session %s: %v", e.Summary.ID, err))
			continue
		}
		if len(refs) == 0 {
			continue
		}
		if !dryRun {
			s, err := session.Open(dataDir, e.Summary.ID)
			if err != nil {
				rep.Errors = append(rep.Errors, fmt.Sprintf("in-place session %s: %v", e.Summary.ID, err))
				continue
			}
			_, derr := snapshot.DeleteSessionRefs(ctx, w.CommonDir, e.Summary.ID)
			if err := errors.Join(derr, s.Close()); err != nil {
				rep.Errors = append(rep.Errors, fmt.Sprintf("in-place session %s: %v", e.Summary.ID, err))
				continue
			}
		}
		if rep.RefsDeleted == nil {
			rep.RefsDeleted = map[string][]string{}
		}
		rep.RefsDeleted[e.Summary.ID] = refs
	}
	return nil
}

// referenced reports whether a saved session refers to a worktree. A
// session list that cannot be read is an error: guessing "unreferenced"
// would let prune delete worktrees in use.
func referenced(dataDir string) (func(string) bool, error) {
	list, err := session.List(dataDir)
	if err != nil {
		return nil, fmt.Errorf("list sessions (to know which worktrees are in use): %w", err)
	}
	ids := map[string]bool{}
	for _, sm := range list {
		ids[sm.ID] = true
	}
	return func(id string) bool {
		if ids[id] {
			return true
		}
		// A session created since the list was read (a start racing the
		// prune) is in use too: look again now.
		_, err := os.Lstat(filepath.Join(session.SessionsDir(dataDir), id))
		return err == nil || !errors.Is(err, fs.ErrNotExist)
	}, nil
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
