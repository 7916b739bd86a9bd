package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/failpoint"
	"github.com/yolop-dev/yolop/internal/provider"
	_ "github.com/yolop-dev/yolop/internal/provider/all" // registers sim, openai and anthropic
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/snapshot"
	"github.com/yolop-dev/yolop/internal/timeline"
	"github.com/yolop-dev/yolop/internal/worktree"
)

func init() { snapshot.Failpoint = failpoint.Hit }

// Worktree modes.
const (
	WorktreeAlways = "always"
	WorktreeOff    = "off"
)

// Options selects or creates a session.
type Options struct {
	DataDir   string
	Dir       string // where yolop was started (-C)
	SessionID string // resume this session
	Continue  bool   // resume the most recent session of Dir's repository
	Worktree  string // always (default) or off
	Provider  provider.Config
	// Create makes the session directory now instead of at the first turn
	// (ACP session/new).
	Create bool
	// Base is the commit a new session worktree starts from instead of the
	// checkout's HEAD (`yolop sessions fork` starts from the old session's
	// branch while the new session still belongs to the user's checkout).
	Base string
}

// ErrNoSession is returned by Open with Continue when there is nothing to
// continue.
var ErrNoSession = errors.New("no session to continue")

// Session is a live session. Before its first turn it may not exist on
// disk yet (TUI, print): it is created by the first prompt.
type Session struct {
	opts Options
	prov provider.Provider

	mu     sync.Mutex // guards the fields below
	sess   *session.Session
	ctl    *checkpoint.Controller
	agent  *agent.Agent
	tools  *tools.Set
	comps  *timeline.CompactionLog
	snap   *snapshot.Engine // nil without workspace snapshots
	tl     *timeline.Log
	repair []string
	noWS   string
	// pending is the description of a session that does not exist yet;
	// expectWS/expectWhy say whether its first prompt will give it a
	// worktree, for status bars.
	pending   *session.Workspace
	expectWS  bool
	expectWhy string
	// closed refuses new calls once Close has begun; turns are the
	// cancel funcs of the turns in progress. Close cancels them and waits
	// on calls (every Prompt and Exec in progress) before it releases
	// anything, so no turn or restore writes after the lock is gone.
	closed bool
	turns  map[*context.CancelFunc]struct{}
	calls  sync.WaitGroup
}

// errClosed is returned by calls made after Close.
var errClosed = errors.New("app: the session is closed")

// begin registers a call; a turn's context is cancelled by Close. The
// returned func ends the call.
func (s *Session) begin(ctx context.Context, turn bool) (context.Context, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, errClosed
	}
	s.calls.Add(1)
	if !turn {
		return ctx, s.calls.Done, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	if s.turns == nil {
		s.turns = map[*context.CancelFunc]struct{}{}
	}
	s.turns[&cancel] = struct{}{}
	return ctx, func() {
		cancel()
		s.mu.Lock()
		delete(s.turns, &cancel)
		s.mu.Unlock()
		s.calls.Done()
	}, nil
}

// Open resumes a session (SessionID or Continue) or prepares a new one.
func Open(ctx context.Context, o Options) (*Session, error) {
	if o.Worktree == "" {
		o.Worktree = WorktreeAlways
	}
	if o.Worktree != WorktreeAlways && o.Worktree != WorktreeOff {
		return nil, fmt.Errorf("--worktree must be always or off, not %q", o.Worktree)
	}
	if o.Dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		o.Dir = wd
	}
	abs, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	o.Dir = abs
	prov, err := provider.New(o.Provider)
	if err != nil {
		return nil, err
	}
	s := &Session{opts: o, prov: prov}
	if o.Continue && o.SessionID == "" {
		id, err := latestFor(ctx, o.DataDir, o.Dir)
		if err != nil {
			return nil, err
		}
		o.SessionID = id
		s.opts.SessionID = id
	}
	if o.SessionID != "" {
		sess, err := session.Open(o.DataDir, o.SessionID)
		if err != nil {
			return nil, err
		}
		if err := s.attach(ctx, sess); err != nil {
			sess.Close()
			return nil, err
		}
		return s, nil
	}
	ws := session.Workspace{SessionID: session.NewID(), Kind: session.KindConversation, ActiveRoot: o.Dir, Provider: prov.Name(), Model: prov.Model()}
	s.pending = &ws
	s.expectWS, s.expectWhy = true, ""
	if why := workspaceUnavailable(ctx, o); why != "" {
		s.expectWS, s.expectWhy = false, why
	}
	if o.Create {
		if err := s.materialize(ctx, ""); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// latestFor finds the newest session started from dir's repository (or
// from dir itself outside a repository).
func latestFor(ctx context.Context, dataDir, dir string) (string, error) {
	root := dir
	if repo, err := worktree.Detect(ctx, dir); err == nil {
		root = repo.Root
	}
	list, err := session.List(dataDir)
	if err != nil {
		return "", err
	}
	for _, sm := range list {
		if sm.Problem != "" {
			continue
		}
		w := sm.Workspace
		if w.RepoRoot == root || (w.RepoRoot == "" && w.ActiveRoot == root) {
			return sm.ID, nil
		}
	}
	return "", fmt.Errorf("%w started from %s: run yolop without -c to start one", ErrNoSession, root)
}

// materialize creates the session on disk (and its worktree).
func (s *Session) materialize(ctx context.Context, title string) error {
	ws := *s.pending
	ws.Title = title
	o := s.opts
	if o.Worktree == WorktreeOff {
		ws.NoWorkspaceReason = worktreesOff
	} else if repo, err := worktree.Detect(ctx, o.Dir); err != nil {
		ws.NoWorkspaceReason = noRepoReason(err)
		if repo != nil {
			ws.RepoRoot = repo.Root
		}
	} else {
		if o.Base != "" {
			repo.Head, repo.Branch = o.Base, ""
		}
		m := &worktree.Manager{DataDir: o.DataDir}
		info, err := m.Create(ctx, repo, ws.SessionID, title)
		if err != nil {
			return fmt.Errorf("create session worktree: %w", err)
		}
		ws.Kind = session.KindWorktree
		ws.RepoRoot, ws.CommonDir = repo.Root, repo.CommonDir
		ws.Worktree = &session.Worktree{Path: info.Path, Branch: info.Branch, Base: info.Base}
		// Work in the same subdirectory of the worktree as the user was in.
		ws.ActiveRoot = info.Path
		if rel, err := filepath.Rel(repo.Root, o.Dir); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			if st, err := os.Stat(filepath.Join(info.Path, rel)); err == nil && st.IsDir() {
				ws.ActiveRoot = filepath.Join(info.Path, rel)
			}
		}
	}
	// A session that cannot be opened must not be left behind half made:
	// remove what this call created (the branch stays, like every branch
	// yolop makes).
	undo := func() {
		if ws.Worktree != nil {
			m := &worktree.Manager{DataDir: o.DataDir}
			_, _ = m.Remove(context.WithoutCancel(ctx), worktree.Info{Path: ws.Worktree.Path, Branch: ws.Worktree.Branch, Base: ws.Worktree.Base, RepoRoot: ws.RepoRoot, CommonDir: ws.CommonDir}, ws.SessionID, true)
		}
	}
	sess, err := session.Create(o.DataDir, ws)
	if err != nil {
		undo()
		return err
	}
	if err := s.attach(ctx, sess); err != nil {
		dir := sess.Dir
		sess.Close()
		os.RemoveAll(dir)
		undo()
		return err
	}
	s.pending = nil
	return nil
}

// spillDir picks where command output beyond the tools' caps goes: the
// session directory, unless the active root contains it (a conversation-
// only session started above the data directory), then a private
// directory under the system temp dir.
func spillDir(sess *session.Session, root string) (string, error) {
	inside := func(p string) bool {
		rel, err := filepath.Rel(root, p)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
	}
	dir := sess.Path("spill")
	if inside(dir) {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("yolop-%d", os.Getuid()), sess.ID, "spill")
		if inside(dir) {
			return "", fmt.Errorf("the working directory %s contains both yolop's data directory and the temp directory; start yolop in a project directory, or set --data-dir elsewhere", root)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return dir, os.Chmod(dir, 0o700)
}

// attach opens every part of an existing session and repairs it.
func (s *Session) attach(ctx context.Context, sess *session.Session) error {
	ws := sess.Workspace()
	var snaps checkpoint.Snapshots
	noWS := ws.NoWorkspaceReason
	if ws.Kind == session.KindWorktree && ws.Worktree != nil {
		m := &worktree.Manager{DataDir: s.opts.DataDir}
		info, err := m.Ensure(ctx, worktree.Info{Path: ws.Worktree.Path, Branch: ws.Worktree.Branch, Base: ws.Worktree.Base, RepoRoot: ws.RepoRoot, CommonDir: ws.CommonDir})
		if err != nil {
			return fmt.Errorf("session %s: worktree: %w", sess.ID, err)
		}
		budget, err := captureBudget()
		if err != nil {
			return err
		}
		eng, err := snapshot.Open(ctx, snapshot.Options{Worktree: info.Path, SessionID: sess.ID, StateDir: sess.Path("snapshot"), Budget: budget})
		if err != nil {
			noWS = "workspace snapshots unavailable: " + err.Error()
		} else {
			snaps = eng
		}
	} else if noWS == "" {
		noWS = "the session has no worktree of its own"
	}
	if ws.ActiveRoot == "" {
		return fmt.Errorf("session %s: workspace.json names no active root", sess.ID)
	}
	if st, err := os.Stat(ws.ActiveRoot); err != nil || !st.IsDir() {
		return fmt.Errorf("session %s: its directory %s is gone; start a new session", sess.ID, ws.ActiveRoot)
	}
	tl, records, tlRepair, err := timeline.OpenLog(sess.Path(session.TimelineFile))
	if err != nil {
		return fmt.Errorf("session %s: %w", sess.ID, err)
	}
	comps, _, err := timeline.OpenCompactions(sess.Path(session.CompactionsFile))
	if err != nil {
		tl.Close()
		return fmt.Errorf("session %s: %w", sess.ID, err)
	}
	spill, err := spillDir(sess, ws.ActiveRoot)
	if err != nil {
		tl.Close()
		comps.Close()
		return fmt.Errorf("session %s: %w", sess.ID, err)
	}
	tasks := tools.NewTasks(spill)
	late := &lateCheckpoints{}
	ts, err := tools.New(tools.Env{Root: ws.ActiveRoot, SpillDir: spill, Tasks: tasks, Checkpoints: late})
	if err != nil {
		tl.Close()
		comps.Close()
		return fmt.Errorf("session %s: %w", sess.ID, err)
	}
	ag := agent.New(agent.Config{Log: sess, Provider: s.prov, Tools: ts, System: systemPrompt(ws), Compactions: comps, CompactAt: compactAt()})
	ro := ""
	if bad, why := sess.ReadOnly(); bad {
		ro = why
	}
	ctl := checkpoint.New(checkpoint.Config{
		SessionID: sess.ID, Dir: sess.Dir, Store: sess, Timeline: tl, Records: records,
		Snapshots: snaps, NoWorkspace: noWS, Runtime: ag, Writers: tasks, Compactions: comps, ReadOnly: ro,
	})
	late.ctl = ctl
	notes := append([]string(nil), sess.Repaired()...)
	notes = append(notes, tlRepair.Notes()...)
	more, err := ctl.Repair(ctx)
	if err != nil {
		return fmt.Errorf("session %s: %w", sess.ID, err)
	}
	notes = append(notes, more...)
	ctl.Reseed()
	s.mu.Lock()
	s.sess, s.ctl, s.agent, s.tools, s.comps, s.tl, s.repair, s.noWS = sess, ctl, ag, ts, comps, tl, notes, noWS
	if eng, ok := snaps.(*snapshot.Engine); ok {
		s.snap = eng
	}
	s.mu.Unlock()
	return nil
}

// lateCheckpoints lets the tools be built before the controller exists.
type lateCheckpoints struct{ ctl *checkpoint.Controller }

func (l *lateCheckpoints) ListForModel(ctx context.Context) (string, error) {
	return l.ctl.ListForModel(ctx)
}

func (l *lateCheckpoints) QueuePreview(ctx context.Context, r tools.CheckpointRequest) (string, error) {
	return l.ctl.QueuePreview(ctx, r)
}

func compactAt() int {
	var n int
	if v := os.Getenv("YOLOP_COMPACT_TOKENS"); v != "" {
		fmt.Sscanf(v, "%d", &n)
		return n
	}
	return 120000
}

func systemPrompt(ws session.Workspace) string {
	var b strings.Builder
	b.WriteString("You are yolop, a coding agent working in a terminal. You edit files and run commands with your tools in the working directory " + ws.ActiveRoot + ".\n")
	if ws.Kind == session.KindWorktree {
		b.WriteString("It is a git worktree of its own on branch " + ws.Worktree.Branch + "; the user merges that branch when your work is good.\n")
	}
	b.WriteString("Before every turn yolop records a checkpoint of the conversation and the files; the user can rewind, undo and redo. Use the checkpoint tool when the user asks to undo or rewind: it only queues a preview that the user confirms after your turn.\n")
	b.WriteString("Be concise. Prefer small, verifiable steps.")
	return b.String()
}

// ID returns the session id.
func (s *Session) ID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess != nil {
		return s.sess.ID
	}
	return s.pending.SessionID
}

// Exists reports whether the session is on disk.
func (s *Session) Exists() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sess != nil
}

// Info describes the session.
func (s *Session) Info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := Info{Provider: s.prov.Name(), Model: s.prov.Model()}
	if s.sess == nil {
		in.SessionID, in.ActiveRoot = s.pending.SessionID, s.opts.Dir
		in.Workspace, in.WorkspaceReason = s.expectWS, s.expectWhy
		return in
	}
	ws := s.sess.Workspace()
	in.SessionID, in.Title, in.RepoRoot, in.ActiveRoot = s.sess.ID, ws.Title, ws.RepoRoot, ws.ActiveRoot
	if ws.Worktree != nil {
		in.Branch = ws.Worktree.Branch
	}
	in.Workspace, in.WorkspaceReason = s.ctl.WorkspaceAvailable()
	if in.Workspace {
		in.WorkspaceReason = ""
	}
	if r := s.ctl.ReadOnly(); r != "" {
		in.ReadOnly, in.ReadOnlyReason = true, r
	}
	in.Checkpoints = s.ctl.ActiveCount()
	in.RedoAvailable = s.ctl.RedoAvailable()
	in.Repairs = s.repair
	return in
}

func (s *Session) parts() (*checkpoint.Controller, *agent.Agent, *tools.Set) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctl, s.agent, s.tools
}

// Prompt runs one turn. The session is created on disk by its first turn.
func (s *Session) Prompt(ctx context.Context, text string, onUpdate func(agent.Update)) (TurnResult, error) {
	if strings.TrimSpace(text) == "" {
		return TurnResult{}, errors.New("empty prompt: type what the agent should do")
	}
	ctx, end, err := s.begin(ctx, true)
	if err != nil {
		return TurnResult{}, err
	}
	defer end()
	if !s.Exists() {
		if err := s.materialize(ctx, titleOf(text)); err != nil {
			return TurnResult{}, err
		}
	}
	ctl, _, _ := s.parts()
	out, err := ctl.RunTurn(ctx, text, onUpdate)
	if err != nil {
		return TurnResult{}, err
	}
	s.touch(text)
	res := TurnResult{CheckpointID: out.ID, Status: out.Status, Text: out.Text, Pending: out.Pending}
	if out.Err != nil {
		res.Error = out.Err.Error()
	}
	if out.PendingErr != nil {
		res.Text = strings.TrimSpace(res.Text + "\n\nThe requested checkpoint preview could not be built: " + out.PendingErr.Error())
	}
	return res, nil
}

func (s *Session) touch(prompt string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ws := s.sess.Workspace()
	ws.Updated = time.Now().UTC()
	if ws.Title == "" {
		ws.Title = titleOf(prompt)
	}
	_ = s.sess.SaveWorkspace(ws)
}

func titleOf(p string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(p), "\n")
	if r := []rune(first); len(r) > 60 {
		first = string(r[:59]) + "…"
	}
	return first
}

// Exec runs a slash command.
func (s *Session) Exec(ctx context.Context, cmd command.Command) (Result, error) {
	if cmd.Name == "help" {
		var b strings.Builder
		for _, d := range command.Registry {
			fmt.Fprintf(&b, "/%s %s\n    %s\n", d.Name, d.Hint, d.Description)
		}
		return Result{Kind: ResultHelp, Text: b.String()}, nil
	}
	ctx, end, err := s.begin(ctx, false)
	if err != nil {
		return Result{}, err
	}
	defer end()
	ctl, ag, ts := s.parts()
	if ctl == nil {
		switch cmd.Name {
		case "rewind":
			if cmd.Target == "" {
				return Result{Kind: ResultList, Rows: []checkpoint.Row{}}, nil
			}
			return Result{}, &checkpoint.Error{Code: checkpoint.CodeUnknownCheckpt, Msg: fmt.Sprintf("unknown checkpoint %s: this session has no turns yet", cmd.Target)}
		case "undo":
			return Result{}, &checkpoint.Error{Code: checkpoint.CodeNothingToUndo, Msg: "nothing to undo: this session has no turns yet"}
		case "redo":
			return Result{}, &checkpoint.Error{Code: checkpoint.CodeNothingToRedo, Msg: "nothing to redo: this session has no turns yet"}
		case "compact":
			return Result{Kind: ResultCompacted, Text: "nothing to compact yet"}, nil
		case "tasks":
			return Result{Kind: ResultTasks, Text: "no background tasks"}, nil
		}
		return Result{}, &command.UsageError{Msg: "/" + cmd.Name + " is not available here"}
	}
	switch cmd.Name {
	case "rewind", "undo", "redo":
		if cmd.Name == "rewind" && cmd.Target == "" {
			rows, err := ctl.List(ctx, cmd.All)
			return Result{Kind: ResultList, Rows: rows}, err
		}
		req := cmd.Request()
		if cmd.Confirm {
			r, err := ctl.Confirm(ctx, req, cmd.Token)
			if err != nil {
				return Result{}, err
			}
			return Result{Kind: ResultRestored, Restored: r}, nil
		}
		p, err := ctl.Preview(ctx, req)
		if err != nil {
			return Result{}, err
		}
		return Result{Kind: ResultPreview, Preview: p}, nil
	case "compact":
		if r := ctl.ReadOnly(); r != "" {
			return Result{}, &checkpoint.Error{Code: checkpoint.CodeReadOnly, Msg: "session is read-only: " + r}
		}
		if id := ctl.Running(); id != "" {
			// A compaction boundary inside a running turn would cut a tool
			// call from its result.
			return Result{}, &checkpoint.Error{Code: checkpoint.CodeTurnRunning, Msg: fmt.Sprintf("turn %s is still running; /compact after it ends", id)}
		}
		msg, err := ag.Compact(ctx)
		if errors.Is(err, agent.ErrNothingToCompact) {
			return Result{Kind: ResultCompacted, Text: "nothing to compact yet: the context is already as small as compaction can make it"}, nil
		}
		if err != nil {
			return Result{}, err
		}
		return Result{Kind: ResultCompacted, Text: msg}, nil
	case "tasks":
		tasks := ts.Tasks()
		if cmd.Verb == "stop" {
			if err := tasks.Stop(cmd.TaskID); err != nil {
				return Result{}, err
			}
			return Result{Kind: ResultTasks, Text: "stopped task " + cmd.TaskID}, nil
		}
		act := tasks.Active()
		if len(act) == 0 {
			return Result{Kind: ResultTasks, Text: "no running tasks"}, nil
		}
		var b strings.Builder
		for _, w := range act {
			fmt.Fprintf(&b, "%s  %s  %q  running for %s\n", w.ID, w.Kind, w.Command, time.Since(w.Started).Round(time.Second))
		}
		return Result{Kind: ResultTasks, Text: b.String()}, nil
	}
	return Result{}, &command.UsageError{Msg: "/" + cmd.Name + " is not available here"}
}

// Transcript returns the active branch's transcript.
func (s *Session) Transcript() []agent.Item {
	_, ag, _ := s.parts()
	if ag == nil {
		return nil
	}
	return ag.Transcript()
}

// Agent exposes the agent runtime (tests, request context inspection).
func (s *Session) Agent() *agent.Agent {
	_, ag, _ := s.parts()
	return ag
}

// Close cancels a running turn and waits for every call in progress (the
// turn is journaled as cancelled), then stops background tasks and
// releases the session lock. Later calls fail.
func (s *Session) Close() error {
	s.mu.Lock()
	s.closed = true
	for cancel := range s.turns {
		(*cancel)()
	}
	s.mu.Unlock()
	s.calls.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tools != nil {
		s.tools.Tasks().StopAll()
	}
	if s.snap != nil {
		// The engine may still be bringing its private index up to date
		// in the background; let it finish before the session lock goes,
		// so the next process never meets a live index.lock.
		s.snap.Wait()
	}
	var errs []error
	if s.tl != nil {
		errs = append(errs, s.tl.Close())
	}
	if s.comps != nil {
		errs = append(errs, s.comps.Close())
	}
	if s.sess != nil {
		errs = append(errs, s.sess.Close())
	}
	return errors.Join(errs...)
}

// Import appends an event from another session as history of this one
// (session-level, outside any turn). Used by `yolop sessions fork`.
func (s *Session) Import(ev session.Event) error {
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	if sess == nil {
		return errors.New("import: session not created")
	}
	_, err := sess.Append(ev.Type, "", ev.Data)
	return err
}

// Reseed reloads the live message store from the active branch.
func (s *Session) Reseed() {
	ctl, _, _ := s.parts()
	if ctl != nil {
		ctl.Reseed()
	}
}

// CopyFilesFrom makes this session's worktree hold exactly the captured
// files of another worktree of the same repository (tracked and untracked,
// uncommitted changes included), for `yolop sessions fork`. It returns the
// number of paths changed.
func (s *Session) CopyFilesFrom(ctx context.Context, dir string) (int, error) {
	s.mu.Lock()
	dst, sess := s.snap, s.sess
	s.mu.Unlock()
	if dst == nil || sess == nil {
		return 0, errors.New("this session has no workspace snapshots to copy files into")
	}
	state, err := os.MkdirTemp(sess.Dir, "fork-src-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(state)
	src, err := snapshot.Open(ctx, snapshot.Options{Worktree: dir, SessionID: sess.ID, StateDir: state})
	if err != nil {
		return 0, fmt.Errorf("read the files of %s: %w", dir, err)
	}
	from, err := src.Capture(ctx, "")
	if err != nil {
		return 0, fmt.Errorf("capture %s: %w", dir, err)
	}
	cur, err := dst.Capture(ctx, "")
	if err != nil {
		return 0, err
	}
	res, err := dst.Restore(ctx, cur, from.Tree)
	if err != nil {
		return 0, err
	}
	return len(res.Changes), nil
}

const worktreesOff = "worktrees are off (--worktree off)"

// noRepoReason names why a directory gets conversation-only checkpoints.
func noRepoReason(err error) string {
	switch {
	case errors.Is(err, worktree.ErrNotRepo):
		return "not a git repository"
	case errors.Is(err, worktree.ErrNoCommits):
		return "the repository has no commits yet"
	case errors.Is(err, worktree.ErrBare):
		return "bare repository"
	}
	return err.Error()
}

// workspaceUnavailable predicts why a new session in o.Dir would have no
// workspace snapshots ("" when it will have them).
func workspaceUnavailable(ctx context.Context, o Options) string {
	if o.Worktree == WorktreeOff {
		return worktreesOff
	}
	if _, err := worktree.Detect(ctx, o.Dir); err != nil {
		return noRepoReason(err)
	}
	return ""
}

// captureBudget reads YOLOP_CAPTURE_BUDGET (a Go duration such as "20s"):
// how long a workspace capture may take before the checkpoint is labelled
// conversation only. Unset means the snapshot engine's default.
func captureBudget() (time.Duration, error) {
	v := os.Getenv("YOLOP_CAPTURE_BUDGET")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("YOLOP_CAPTURE_BUDGET=%q is not a positive duration (e.g. 30s or 2m)", v)
	}
	return d, nil
}
