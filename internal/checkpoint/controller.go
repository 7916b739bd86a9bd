// Package checkpoint is the one place where checkpoints are made and
// restores happen. Every host (print, ACP, TUI) and the model-facing
// checkpoint tool call the Controller; none re-implements any of it.
//
// A turn is bracketed: before it, the workspace is captured and a durable
// checkpoint.created record is fsynced; after it, turn.completed records its
// final event sequence, status and end-of-turn snapshot. A restore is a
// small transaction: preview (recovery capture, exact description, token),
// then confirm (writer check, token check, restore.started intent,
// materialize, verify, head.moved). A crash at any step leaves a state that
// Repair turns into a consistent (conversation head, workspace) pair.
package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/failpoint"
	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/snapshot"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// Snapshots is what the controller needs from the snapshot engine.
type Snapshots interface {
	Capture(ctx context.Context, name string) (snapshot.Snapshot, error)
	Diff(ctx context.Context, fromTree, toTree string) ([]snapshot.Change, error)
	Restore(ctx context.Context, from snapshot.Snapshot, target string) (snapshot.RestoreResult, error)
	// CheckRestore validates a restore from a fresh capture to target
	// without changing anything (a *snapshot.BlockedError says what is in
	// the way) and names the paths it would restore as ignored files.
	CheckRestore(ctx context.Context, fromTree, target string) (snapshot.RestoreCheck, error)
	// Excluded lists the paths present in the worktree that a restore
	// leaves alone (ignored, blocklisted, nested repositories).
	Excluded(ctx context.Context) ([]string, error)
	// LeftAlone splits changes into those a restore makes and the nested
	// repositories and submodules it leaves alone.
	LeftAlone(changes []snapshot.Change) ([]snapshot.Change, []string)
	// PatchPath is the exact diff of one path between two trees.
	PatchPath(ctx context.Context, fromTree, toTree, path string) (snapshot.PathPatch, error)
	// LinkRepairs are notes about a worktree .git link the engine had to
	// repair (a command rewrote it).
	LinkRepairs() []string
}

// Runtime is what the controller needs from the agent runtime: run a turn,
// and reseed the live message store after a conversation restore.
type Runtime interface {
	RunTurn(ctx context.Context, turnID, prompt string, onUpdate func(agent.Update)) agent.Outcome
	Reseed(active []session.Event, compactions []timeline.Compaction, isActive func(turn string, seq int64) bool)
	Note(turn string, n agent.NoticeData) error
	// Compact summarizes the active conversation (agent.ErrNothingToCompact
	// when it is already as small as compaction can make it).
	Compact(ctx context.Context) (string, error)
}

// Writers reports processes that can still write the workspace.
type Writers interface {
	Active() []tools.Writer
}

// Store is what the controller needs from the session store.
type Store interface {
	Append(typ, turn string, data any) (session.Event, error)
	Events() []session.Event
	LastSeq() int64
	// SaveDigest records what session listings show (see session.Digest).
	SaveDigest(d session.Digest) error
	// Sync makes every appended event durable; turn.completed names the
	// last seq only after it returned.
	Sync() error
}

// Timeline is the append-only timeline journal and the one materialized
// state of the timeline, which the journal keeps up to date as records are
// appended (timeline.Log).
type Timeline interface {
	Append(r timeline.Record) error
	// Live returns the journal's state, changed in place by Append. The
	// controller is the journal's only writer and reads it under its own
	// lock.
	Live() *timeline.State
}

// Compactions lists the session's compaction checkpoints.
type Compactions interface {
	All() []timeline.Compaction
}

// Config assembles a Controller.
type Config struct {
	SessionID string
	Dir       string // session directory (previews.json lives here)
	Store     Store
	Timeline  Timeline
	// Snapshots is nil when the session has no workspace snapshots;
	// NoWorkspace then says why ("worktrees are off", "not a git
	// repository", ...).
	Snapshots   Snapshots
	NoWorkspace string
	Runtime     Runtime
	Writers     Writers
	Compactions Compactions
	// ReadOnly makes every mutation refuse with this reason (corrupt
	// committed prefix of the event log).
	ReadOnly string
	Now      func() time.Time
	// Failpoint is called at every named failpoint (failpoint.Names) this
	// controller reaches; nil means failpoint.Hit (YOLOP_FAILPOINT).
	Failpoint func(name string)
	// Persist, when set, writes the files derived from the session's state
	// that let the next process open it without replaying its logs. It is
	// called with the state after every turn, restore and repair, while
	// both logs are flushed and nothing else appends; a failure costs the
	// next open its speed, never correctness, and is told to the user once.
	Persist func(st *timeline.State) error
	// Sandbox is the sandbox level commands run under (recorded with each
	// turn) and Caches the declared caches they may write; the preview
	// warns about turns whose commands could have effects outside the
	// workspace.
	Sandbox string
	Caches  []string
	// OtherRefs lists the refs the session keeps outside its snapshot
	// refs (the captures taken before each apply), for Retained; nil
	// when there are none to list.
	OtherRefs func(ctx context.Context) ([]Retained, error)
	// InPlace says the workspace is the user's own checkout or folder:
	// a restore undoes the agent's turns path by path and never the
	// user's edits (Snapshots must then be a Reverter too).
	InPlace bool
	// PreviewWarnings, in place, adds what a preview must say beyond the
	// files: git's own files the undone turns changed, HEAD having moved
	// since the target. nil adds nothing.
	PreviewWarnings func(target string, undone []string) []Warning
}

// Controller is the session's checkpoint controller.
type Controller struct {
	cfg Config

	mu sync.Mutex // guards every field below and serializes restores
	// state is the journal's own state (Timeline.Live): every append
	// updates it in place, so it is read under mu and never copied.
	state *timeline.State
	// running is the checkpoint id of the turn in progress, "" when idle.
	running string
	// compacting is set while /compact runs; a turn waits for it.
	compacting bool
	// queued is a preview the model asked for during the running turn; it
	// is built after the turn ends.
	queued     *Request
	queuedHead string
	// broken says why mutations are refused after a failed journal write
	// ("" while healthy).
	broken string
	// filesChanged caches changed-path counts of turns recorded without
	// them (trees are immutable), loaded from and saved to statsFile;
	// statsDirty says it has counts the file lacks.
	filesChanged map[string]int
	statsLoaded  bool
	// pruned are snapshot trees a preview found gone from the repository
	// (kept in statsFile).
	pruned     map[string]bool
	statsDirty bool
	statsErr   error // why the last save of statsFile failed
	// derivedFailed is the last failure to write a derived file that the
	// user was told about ("" after a success), so a lasting failure is
	// said once, not after every turn.
	derivedFailed string
}

// New builds a controller over an opened session. Call Repair next.
func New(cfg Config) *Controller {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Failpoint == nil {
		cfg.Failpoint = failpoint.Hit
	}
	return &Controller{cfg: cfg, state: cfg.Timeline.Live(), filesChanged: map[string]int{}, pruned: map[string]bool{}}
}

// readOnly returns why mutations are refused, or "".
func (c *Controller) readOnly() string {
	if c.cfg.ReadOnly != "" {
		return c.cfg.ReadOnly
	}
	if c.state.ReadOnly {
		return "the timeline is damaged before its last record: " + c.state.ReadOnlyReason
	}
	return ""
}

func (c *Controller) refuseReadOnly() error {
	if c.broken != "" {
		return &Error{Code: CodeReadOnly, Msg: fmt.Sprintf("session %s stopped accepting turns and restores because %s; nothing after that was changed. Reopen it (yolop --session %s) to repair the journal and continue", c.cfg.SessionID, c.broken, c.cfg.SessionID)}
	}
	if r := c.readOnly(); r != "" {
		return &Error{Code: CodeReadOnly, Msg: fmt.Sprintf("session %s is read-only (%s); replay works, but turns and restores are refused. Start a new session from its valid prefix with `yolop sessions fork %s`", c.cfg.SessionID, r, c.cfg.SessionID)}
	}
	return nil
}

// append journals a record (fsynced by the timeline), which applies it to
// the state.
func (c *Controller) append(r timeline.Record) error {
	r.V = 1
	if r.Time.IsZero() {
		r.Time = c.cfg.Now().UTC()
	}
	if err := c.cfg.Timeline.Append(r); err != nil {
		// The journal on disk may now end differently from the state in
		// memory; only reopening (which repairs the tail) can tell which
		// record made it. Refuse further mutations until then.
		if c.broken == "" {
			c.broken = fmt.Sprintf("writing %s to the timeline failed (%v)", r.Type, err)
		}
		return fmt.Errorf("journal %s: %w", r.Type, err)
	}
	return nil
}

// Head returns the active conversation head ("" before the first turn).
func (c *Controller) Head() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state.Head
}

// RedoAvailable reports whether /redo has a target.
func (c *Controller) RedoAvailable() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state.Redo != nil
}

// Running returns the id of the turn in progress, or "".
func (c *Controller) Running() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running
}

// RunningCheckpoint returns the id of the turn in progress once its
// checkpoint is journaled ("" when idle or still capturing). Its redo
// slot is already cleared then.
func (c *Controller) RunningCheckpoint() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running == "" || c.state.Checkpoints[c.running] == nil {
		return ""
	}
	return c.running
}

// ActiveCount returns the number of turns on the active branch.
func (c *Controller) ActiveCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state.ActiveLen()
}

// WorkspaceAvailable reports whether workspace snapshots exist for this
// session, and why not.
func (c *Controller) WorkspaceAvailable() (bool, string) {
	return c.cfg.Snapshots != nil, c.cfg.NoWorkspace
}

// TimelineDamaged says why the timeline's committed prefix cannot be
// trusted ("" when it can).
func (c *Controller) TimelineDamaged() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state.ReadOnly {
		return c.state.ReadOnlyReason
	}
	return ""
}

// ReadOnly returns the read-only reason, or "".
func (c *Controller) ReadOnly() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readOnly()
}

// isActiveLocked reports whether an event (turn, seq) is on the active
// branch. The timeline owns the rule: a turn's events run from its
// seq_before to the seq_before of its active child, so notices written
// while a turn was the head live and die with it.
func (c *Controller) isActiveLocked() func(turn string, seq int64) bool {
	// The state changes in place with every append: the function must
	// only be called while mu is held (Reseed does so).
	return c.state.InActiveRange
}

// ActiveEvents returns the events of the active branch, in order.
func (c *Controller) ActiveEvents() []session.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.activeEventsLocked()
}

func (c *Controller) activeEventsLocked() []session.Event {
	in := c.isActiveLocked()
	var out []session.Event
	for _, ev := range c.cfg.Store.Events() {
		if in(ev.Turn, ev.Seq) {
			out = append(out, ev)
		}
	}
	return out
}

// Reseed loads the active branch into the runtime's message store.
func (c *Controller) Reseed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reseedLocked()
}

func (c *Controller) reseedLocked() {
	var comps []timeline.Compaction
	if c.cfg.Compactions != nil {
		comps = c.cfg.Compactions.All()
	}
	c.cfg.Runtime.Reseed(c.activeEventsLocked(), comps, c.isActiveLocked())
}

// lazyRuntime is a Runtime that loads a long branch lazily (agent.Agent):
// the events its model context needs now, the rest when asked.
type lazyRuntime interface {
	ReseedLazy(after func(seq int64) []session.Event, earlier func() []session.Event, compactions []timeline.Compaction, isActive func(turn string, seq int64) bool)
}

// tailStore is a Store that can hand out the end of a long log without
// loading all of it (session.Session).
type tailStore interface {
	EventsAfter(seq int64) []session.Event
}

// eventsAfterLocked returns the events (of every branch) with a seq above
// seq, reading no more of the log than that when the store can.
func (c *Controller) eventsAfterLocked(seq int64) []session.Event {
	if ts, ok := c.cfg.Store.(tailStore); ok {
		return ts.EventsAfter(seq)
	}
	var out []session.Event
	for _, ev := range c.cfg.Store.Events() {
		if ev.Seq > seq {
			out = append(out, ev)
		}
	}
	return out
}

// ReseedOpen is Reseed for a session just opened: when the runtime and the
// store allow it, only the events the model context needs (those after
// the compaction the runtime installs) are loaded now, and the rest of the
// active branch when a transcript first asks for it, so opening a long
// session does not decode its whole history. With cache (the context as
// a previous process left it, nil when there is none or it no longer
// fits the journal), only the last turns are loaded: enough for a
// transcript's first screen and to fold what the cache does not hold.
//
// It reports whether the cache was used.
func (c *Controller) ReseedOpen(cache *agent.ContextCache) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	lr, ok := c.cfg.Runtime.(lazyRuntime)
	if !ok {
		c.reseedLocked()
		return false
	}
	var comps []timeline.Compaction
	if c.cfg.Compactions != nil {
		comps = c.cfg.Compactions.All()
	}
	in := c.isActiveLocked()
	after := func(seq int64) []session.Event {
		// Called by the runtime while mu is held (below).
		var out []session.Event
		for _, ev := range c.eventsAfterLocked(seq) {
			if in(ev.Turn, ev.Seq) {
				out = append(out, ev)
			}
		}
		return out
	}
	earlier := func() []session.Event {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.activeEventsLocked()
	}
	if cr, ok := c.cfg.Runtime.(cachedRuntime); ok && cache != nil {
		from := c.windowStartLocked(cache.Through)
		if cr.ReseedCached(*cache, after(from), from, earlier, comps, in) {
			return true
		}
	}
	lr.ReseedLazy(after, earlier, comps, in)
	return false
}

// cachedRuntime is a Runtime that can resume from a context cache
// (agent.Agent).
type cachedRuntime interface {
	ReseedCached(c agent.ContextCache, window []session.Event, from int64, earlier func() []session.Event, compactions []timeline.Compaction, isActive func(turn string, seq int64) bool) bool
}

// openWindow is how many of the newest turns of the active branch opening
// a session loads with a context cache: more than a first screen shows.
const openWindow = 20

// windowStartLocked is the seq after which the events of the newest
// openWindow turns of the active branch begin, and at or before through:
// the start of a turn (0: the whole branch).
func (c *Controller) windowStartLocked(through int64) int64 {
	cp := c.state.Checkpoints[c.state.Head]
	for n := 1; cp != nil; n++ {
		if n >= openWindow && cp.SeqBefore <= through {
			return cp.SeqBefore
		}
		cp = c.state.Checkpoints[cp.Parent]
	}
	return 0
}

// TurnOutcome is the result of RunTurn.
type TurnOutcome struct {
	ID      string
	Status  string
	Text    string
	Err     error
	Usage   provider.Usage // tokens the turn's model steps used
	Pending *Preview       // a preview queued by the model's checkpoint tool
	// PendingErr says why a queued preview could not be built.
	PendingErr error
	// Warnings are what the user must be told after the turn: a start or
	// end capture that failed, so the workspace is not (fully) recorded.
	Warnings []string
}

// RunTurn brackets one turn: capture, checkpoint.created (fsynced) before
// it, turn.completed with the end snapshot after it.
func (c *Controller) RunTurn(ctx context.Context, prompt string, onUpdate func(agent.Update)) (TurnOutcome, error) {
	c.mu.Lock()
	if err := c.refuseReadOnly(); err != nil {
		c.mu.Unlock()
		return TurnOutcome{}, err
	}
	if c.running != "" {
		c.mu.Unlock()
		return TurnOutcome{}, &Error{Code: CodeTurnRunning, Msg: fmt.Sprintf("turn %s is still running; wait for it to end or cancel it", c.running)}
	}
	if c.compacting {
		c.mu.Unlock()
		return TurnOutcome{}, &Error{Code: CodeTurnRunning, Msg: "/compact is still summarizing the conversation; send the prompt when it ends"}
	}
	if err := c.seqBehindLocked(); err != nil {
		c.mu.Unlock()
		return TurnOutcome{}, err
	}
	id := fmt.Sprintf("cp%d", c.state.NextCheckpoint)
	parent := c.state.Head
	hadRedo := c.state.Redo != nil
	c.running = id
	c.queued = nil
	c.expireAtTurnLocked(ctx)
	c.mu.Unlock()

	release := func() {
		c.mu.Lock()
		c.running = ""
		c.mu.Unlock()
	}

	// The timeline keeps the start of a long prompt; the event log has it
	// whole (the turn's user.message, which wholePromptLocked reads). Until
	// that event is on disk, a file beside the journal keeps it, so a turn
	// that dies first (a full disk, a crash) loses none of what was typed.
	kept, whole := timeline.ShortPrompt(prompt)
	if whole != 0 {
		if err := keepPrompt(c.cfg.Dir, id, prompt); err != nil {
			release()
			return TurnOutcome{}, fmt.Errorf("keep the prompt of turn %s before it runs: %w (nothing was recorded)", id, err)
		}
	}
	rec := timeline.Record{Type: timeline.TypeCheckpointCreated, Checkpoint: id, Parent: parent, Prompt: kept, PromptBytes: whole, Sandbox: c.cfg.Sandbox}
	if c.cfg.Snapshots != nil {
		snap, err := c.cfg.Snapshots.Capture(ctx, id)
		if errors.Is(err, snapshot.ErrNotOnDisk) {
			// A session that may not survive a crash gets no turn: its
			// work could never be undone.
			release()
			return TurnOutcome{}, fmt.Errorf("turn %s not run (nothing was recorded): %w", id, err)
		}
		if err != nil {
			rec.CaptureError = captureReason(err)
		} else {
			rec.Snapshot = &timeline.SnapshotRef{Tree: snap.Tree, Ref: snap.Ref}
			rec.LeftOut = snap.LeftOut
		}
	} else {
		rec.CaptureError = c.cfg.NoWorkspace
	}
	c.cfg.Failpoint("turn.after_capture")

	c.mu.Lock()
	rec.SeqBefore = c.cfg.Store.LastSeq()
	err := c.append(rec)
	if err == nil && hadRedo {
		err = c.append(timeline.Record{Type: timeline.TypeRedoCleared, Reason: "a new turn started (" + id + ")"})
	}
	c.mu.Unlock()
	if err != nil {
		release()
		return TurnOutcome{}, err
	}
	c.cfg.Failpoint("turn.after_checkpoint")

	// What the checkpoint lacks is said before any tool runs, to a host
	// that shows updates; the others get it with the outcome.
	var before []string
	if rec.CaptureError != "" && c.cfg.Snapshots != nil {
		before = append(before, fmt.Sprintf("The workspace could not be captured before turn %s (%s): %s is conversation only.", id, rec.CaptureError, id))
	}
	if len(rec.LeftOut) > 0 {
		what := "them"
		if len(rec.LeftOut) == 1 {
			what = "it"
		}
		before = append(before, PartialText(id, rec.LeftOut)+": a restore to it does not touch "+what+".")
	}
	if onUpdate != nil {
		for _, w := range before {
			onUpdate(agent.Update{Kind: agent.UpdateWarning, Text: w})
		}
		before = nil
	}

	out := c.cfg.Runtime.RunTurn(ctx, id, prompt, onUpdate)
	c.cfg.Failpoint("turn.before_complete")

	// The end-of-turn snapshot defines files_changed and lets a later
	// preview warn about edits made outside agent turns. It must be taken
	// even when the turn was cancelled, so use a fresh context.
	done := timeline.Record{Type: timeline.TypeTurnCompleted, Checkpoint: id, Status: out.Status}
	if c.cfg.Snapshots != nil && rec.Snapshot != nil {
		c.captureEnd(context.WithoutCancel(ctx), &done, rec.Snapshot.Tree)
	}
	c.mu.Lock()
	done.FinalSeq = c.cfg.Store.LastSeq()
	// turn.completed must never name an event that is not on disk yet.
	if err = c.cfg.Store.Sync(); err != nil {
		// The turn stays open on disk; reopening closes it as interrupted
		// at its last durable event. Until then nothing may follow it.
		if c.broken == "" {
			c.broken = fmt.Sprintf("flushing events.jsonl before closing turn %s failed (%v)", id, err)
		}
		err = fmt.Errorf("flush events before closing turn %s: %w", id, err)
	} else {
		err = c.append(done)
	}
	if err == nil && whole != 0 && done.FinalSeq > rec.SeqBefore {
		// The turn's first event, its prompt, is on disk.
		dropPrompt(c.cfg.Dir, id)
	}
	var derivedWarn string
	if err == nil {
		derivedWarn = c.saveDigestLocked()
	}
	c.running = ""
	queued, qhead := c.queued, c.queuedHead
	c.queued = nil
	c.mu.Unlock()
	if err != nil {
		return TurnOutcome{}, err
	}
	res := TurnOutcome{ID: id, Status: out.Status, Text: out.Text, Err: out.Err, Usage: out.Usage}
	res.Warnings = append(res.Warnings, before...)
	if done.EndError != "" {
		res.Warnings = append(res.Warnings, endWarning(id, done.EndError))
	}
	res.Warnings = append(res.Warnings, c.linkRepairs()...)
	if derivedWarn != "" {
		res.Warnings = append(res.Warnings, derivedWarn)
	}
	if queued != nil {
		req := *queued
		if req.Action == ActionUndo {
			// "Undo the last turn" asked during turn N means the turn that
			// was last when it asked; confirming removes it and turn N.
			req = Request{Action: ActionRewind, Target: qhead}
			if qhead == "" {
				req.Target = id
			}
			req.Action = ActionUndo
		}
		res.Pending, res.PendingErr = c.Preview(context.WithoutCancel(ctx), req)
	}
	return res, nil
}

// captureEnd takes the end-of-turn snapshot into done, or records why it
// could not be taken: a turn that changed files must never be listed as
// having changed none.
func (c *Controller) captureEnd(ctx context.Context, done *timeline.Record, startTree string) {
	snap, err := c.cfg.Snapshots.Capture(ctx, "end-"+done.Checkpoint)
	if err != nil {
		done.EndError = captureReason(err)
		return
	}
	done.End = &timeline.SnapshotRef{Tree: snap.Tree, Ref: snap.Ref}
	n := 0
	if startTree != snap.Tree {
		// One diff gives the count and the paths. A failed one records
		// neither: the trees stay in the journal and a listing compares
		// them later.
		changes, err := c.cfg.Snapshots.Diff(ctx, startTree, snap.Tree)
		if err != nil {
			return
		}
		n = len(changes)
		done.Paths, done.PathsMore = turnPaths(changes)
	}
	done.FilesChanged = &n
}

// linkRepairs returns the snapshot engine's notes about a worktree `.git`
// link it had to repair (a command rewrote it).
func (c *Controller) linkRepairs() []string {
	if c.cfg.Snapshots == nil {
		return nil
	}
	return c.cfg.Snapshots.LinkRepairs()
}

// endWarning tells the user that a turn's end capture failed.
func endWarning(id, reason string) string {
	return fmt.Sprintf("The workspace could not be captured at the end of turn %s (%s): the files it changed are not recorded and are unknown in the listing; they are still on disk and the next capture records them. Checkpoint %s itself (before the turn) is intact.", id, reason, id)
}

// endReason is the listing's reason for a turn whose end capture failed.
func endReason(reason string) string {
	return "end-of-turn capture failed (" + reason + "): files changed unknown"
}

// turnPaths lists the paths a turn changed, whoever changed them (edit
// tools or shell commands), for search and listings: at most
// timeline.MaxPaths, and how many more there were.
func turnPaths(changes []snapshot.Change) ([]string, int) {
	paths := make([]string, 0, min(len(changes), timeline.MaxPaths))
	for _, ch := range changes {
		if len(paths) == timeline.MaxPaths {
			break
		}
		paths = append(paths, ch.Path)
	}
	sort.Strings(paths)
	return paths, len(changes) - len(paths)
}

func captureReason(err error) string {
	var ce *snapshot.CaptureError
	if errors.As(err, &ce) && ce.Reason != "" {
		return ce.Reason
	}
	return err.Error()
}

// Compact summarizes the active conversation to free model context (the
// event log keeps everything). It is refused while the session is
// read-only or a turn runs: a compaction boundary inside a turn would cut a
// tool call from its result. A session with nothing to compact gets
// agent.ErrNothingToCompact.
func (c *Controller) Compact(ctx context.Context) (string, error) {
	c.mu.Lock()
	if err := c.refuseReadOnly(); err != nil {
		c.mu.Unlock()
		return "", err
	}
	if c.running != "" {
		c.mu.Unlock()
		return "", &Error{Code: CodeTurnRunning, Msg: fmt.Sprintf("turn %s is still running; /compact after it ends", c.running)}
	}
	if c.compacting || c.cfg.Runtime == nil {
		c.mu.Unlock()
		if c.cfg.Runtime == nil {
			return "", agent.ErrNothingToCompact
		}
		return "", &Error{Code: CodeTurnRunning, Msg: "/compact is already running"}
	}
	c.compacting = true
	c.mu.Unlock()
	msg, err := c.cfg.Runtime.Compact(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.compacting = false
	if err == nil {
		// The next process resumes from the new boundary, not the old
		// one (the resume file keeps the model context).
		if warn := c.saveDigestLocked(); warn != "" {
			msg += "; " + warn
		}
	}
	return msg, err
}

// List returns one row per turn on the active branch, newest first; with
// all, abandoned turns too (marked). It is a pass over the timeline state:
// every field of a row was recorded when its turn ended. Only turns whose
// turn.completed predates files_changed need a diff, once: the count is
// then kept in checkpoint-stats.json (snapshot trees never change).
func (c *Controller) List(ctx context.Context, all bool) ([]Row, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	chain := c.state.ActiveChain()
	var ids []string
	if all {
		ids = c.state.Order
	} else {
		ids = make([]string, len(chain))
		for i, cp := range chain {
			ids[i] = cp.ID
		}
	}
	rows := make([]Row, 0, len(ids))
	pruned := c.prunedTreesLocked()
	for i := len(ids) - 1; i >= 0; i-- {
		cp := c.state.Checkpoints[ids[i]]
		if cp == nil {
			continue
		}
		row := Row{ID: cp.ID, Title: label(cp.Prompt), Prompt: cp.Prompt, PromptBytes: cp.PromptBytes, CreatedAt: JSONTime(cp.Created), Status: cp.Status, Workspace: cp.Snapshot != nil && c.cfg.Snapshots != nil}
		if cp.Open {
			row.Status = "running"
			if c.state.ReadOnly {
				// Its end may be in the damaged part of the timeline:
				// nothing runs it, and how it ended cannot be read.
				row.Status = "unknown"
			}
		}
		if all && !c.state.Active(cp.ID) {
			row.Abandoned = true
		}
		if row.Workspace && cp.EndError != "" {
			row.Reason = endReason(cp.EndError)
		}
		if row.Workspace && pruned[cp.Snapshot.Tree] {
			row.Workspace = false
		}
		if !row.Workspace {
			row.Reason = cp.CaptureError
			if cp.Snapshot != nil && pruned[cp.Snapshot.Tree] {
				row.Reason = PrunedReason
			}
			if row.Reason == "" {
				row.Reason = c.cfg.NoWorkspace
			}
			if row.Reason == "" {
				row.Reason = "no workspace snapshot"
			}
		}
		if row.Workspace {
			row.LeftOut = cp.LeftOut
		}
		row.FilesChanged = c.filesChangedLocked(ctx, cp)
		rows = append(rows, row)
	}
	c.saveStatsLocked()
	return rows, nil
}

// PrunedReason is a listing's reason for a checkpoint whose snapshot
// tree is gone from the repository.
const PrunedReason = "snapshot pruned from the repository"

// prunedTreesLocked returns the snapshot trees known to be gone from the
// repository: those a preview found pruned (statsFile). A listing runs no
// git process, so a tree pruned since is found by the next preview of it.
func (c *Controller) prunedTreesLocked() map[string]bool {
	c.loadStatsLocked()
	return c.pruned
}

// countChanged is the number of paths that differ between two snapshot
// trees, nil when the diff fails (a listing computes it again later).
func (c *Controller) countChanged(ctx context.Context, from, to string) *int {
	n := 0
	if from != to {
		ch, err := c.cfg.Snapshots.Diff(ctx, from, to)
		if err != nil {
			return nil
		}
		n = len(ch)
	}
	return &n
}

func (c *Controller) filesChangedLocked(ctx context.Context, cp *timeline.Checkpoint) int {
	if cp.FilesChanged != nil {
		return *cp.FilesChanged
	}
	if cp.Snapshot == nil || cp.End == nil || c.cfg.Snapshots == nil {
		return 0
	}
	c.loadStatsLocked()
	if n, ok := c.filesChanged[cp.ID]; ok {
		return n
	}
	if len(cp.Paths) > 0 {
		return len(cp.Paths) + cp.PathsMore
	}
	if cp.Snapshot.Tree == cp.End.Tree {
		c.filesChanged[cp.ID] = 0
		return 0
	}
	p := c.countChanged(ctx, cp.Snapshot.Tree, cp.End.Tree)
	if p == nil {
		// The diff failed: show 0 now and try again at the next listing.
		return 0
	}
	c.filesChanged[cp.ID] = *p
	c.statsDirty = true
	return *p
}

// label shortens a prompt to its first line for listings.
func label(p string) string {
	first, rest, more := strings.Cut(strings.TrimSpace(p), "\n")
	// A NUL, an escape sequence or a carriage return in a prompt must not
	// reach the terminal as it is.
	first = git.DisplayText(first)
	if len([]rune(first)) > 72 {
		first = string([]rune(first)[:71]) + "…"
	} else if more && strings.TrimSpace(rest) != "" {
		first += " …"
	}
	return first
}

// ListForModel implements the checkpoint tool's list action: the same
// table every host shows.
func (c *Controller) ListForModel(ctx context.Context) (string, error) {
	rows, err := c.List(ctx, false)
	if err != nil {
		return "", err
	}
	return ListText(rows, func(t time.Time) string { return t.UTC().Format(time.RFC3339) }), nil
}

// QueuePreview implements the checkpoint tool's rewind/undo/redo actions:
// it validates the request and queues a preview that is built after the
// current turn ends. It never mutates anything.
func (c *Controller) QueuePreview(ctx context.Context, tr tools.CheckpointRequest) (string, error) {
	mode, err := ParseMode(tr.Mode)
	if err != nil {
		return err.Error(), nil
	}
	req := Request{Action: Action(tr.Action), Target: normalizeID(tr.Target), Mode: mode}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running == "" {
		return "", errors.New("checkpoint: the checkpoint tool can only be used during a turn")
	}
	switch req.Action {
	case ActionRewind:
		if _, _, err := c.resolveRewindLocked(req); err != nil {
			return err.Error(), nil
		}
	case ActionUndo:
		// The preview is built after the turn, where a mode is refused;
		// tell the model now, while it can still correct the call.
		if req.Mode != "" {
			return "undo takes no mode: it rewinds to before the last turn, the conversation and, when the checkpoint has a workspace snapshot, the files. To restore only one of them, call rewind with a checkpoint id and a mode; nothing was queued.", nil
		}
	case ActionBranch:
		if _, err := c.planBranchLocked(req); err != nil {
			return err.Error(), nil
		}
	case ActionRedo:
		if c.state.Redo == nil {
			return "Nothing to redo: no restore happened since the last turn started.", nil
		}
		// A redo target is cleared by this very turn's start; it can only
		// be queued if the slot survives, which it does not.
	default:
		return fmt.Sprintf("unknown checkpoint action %q: use list, branches, rewind, undo, redo or branch", tr.Action), nil
	}
	c.queued = &req
	c.queuedHead = c.state.Head
	return fmt.Sprintf("Queued a %s preview. It will be shown to the user after this turn ends; only the user can confirm it. Nothing has changed yet.", req.Action), nil
}

func normalizeID(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return s
	}
	if _, err := strconv.Atoi(s); err == nil {
		return "cp" + s
	}
	return s
}

// Repair brings a session opened after a crash back to a consistent
// (conversation head, workspace) pair: an interrupted restore is rolled back
// from its recovery snapshot, an interrupted turn is closed as interrupted
// at its last persisted event. It returns notes for the user.
func (c *Controller) Repair(ctx context.Context) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.readOnly() != "" {
		return nil, nil
	}
	var notes []string
	if note, err := c.reconcileSeqLocked(); err != nil {
		return nil, err
	} else if note != "" {
		notes = append(notes, note)
		if c.readOnly() != "" {
			return notes, nil
		}
	}
	if p := c.state.PendingRestore; p != nil {
		note := fmt.Sprintf("A restore (%s) was interrupted before it finished; the conversation stays at its previous head", p.Restore)
		if c.cfg.Snapshots == nil && p.Recovery != nil && Mode(p.Mode).HasWorkspace() {
			// The files may be half restored and only the snapshot engine
			// can put them back. Closing the restore now would make the old
			// head authoritative over those files for good.
			return nil, fmt.Errorf("repair interrupted restore %s: the files may be partly restored, but workspace snapshots are unavailable (%s), so they cannot be put back; fix that and open the session again (the files before the restore are kept at %s)", p.Restore, c.cfg.NoWorkspace, p.Recovery.Ref)
		}
		if c.cfg.Snapshots != nil && p.Recovery != nil && Mode(p.Mode).HasWorkspace() {
			cur, err := c.cfg.Snapshots.Capture(snapshot.WithWalk(ctx), repairPrefix+p.Restore)
			if err != nil {
				return nil, fmt.Errorf("repair interrupted restore %s: capture: %w (the files before it are kept at %s)", p.Restore, err, p.Recovery.Ref)
			}
			if err := c.putBackLocked(ctx, cur, p.Recovery.Tree, p.TargetTree); err != nil {
				return nil, fmt.Errorf("repair interrupted restore %s: %w (the files before it are kept at %s)", p.Restore, err, p.Recovery.Ref)
			}
			note += fmt.Sprintf(" and the files were put back as they were before it (recovery snapshot %s)", p.Recovery.Ref)
			c.dropScratch(ctx, repairPrefix+p.Restore)
		}
		if err := c.append(timeline.Record{Type: timeline.TypeRestoreAborted, Restore: p.Restore, Reason: "interrupted; rolled back on open"}); err != nil {
			return nil, err
		}
		notes = append(notes, note+".")
	}
	if t := c.state.OpenTurn; t != nil {
		final := t.SeqBefore
		for _, ev := range c.eventsAfterLocked(t.SeqBefore) {
			if ev.Turn == t.ID && ev.Seq > final {
				final = ev.Seq
			}
		}
		rec := timeline.Record{Type: timeline.TypeTurnCompleted, Checkpoint: t.ID, Status: agent.StatusInterrupted, FinalSeq: final}
		if c.cfg.Snapshots != nil && t.Snapshot != nil {
			c.captureEnd(ctx, &rec, t.Snapshot.Tree)
		}
		if err := c.append(rec); err != nil {
			return nil, err
		}
		notes = append(notes, fmt.Sprintf("turn %s was interrupted (the process stopped during it); it was closed as interrupted and stays rewindable", t.ID))
		if rec.EndError != "" {
			notes = append(notes, endWarning(t.ID, rec.EndError))
		}
	}
	notes = append(notes, c.linkRepairs()...)
	if len(c.state.Order) == 0 && len(notes) == 0 {
		// A session with no checkpoint yet (a new one): readers find
		// nothing to parse without the derived files, and its first turn
		// writes them.
		return nil, nil
	}
	// Sessions written before the digest existed, or by a process that
	// stopped before saving it, get it now.
	if w := c.saveDigestLocked(); w != "" {
		notes = append(notes, w)
	}
	return notes, nil
}

// saveDigestLocked records the session's listing digest and the other
// files derived from its state (Config.Persist). They are caches that
// readers check against the logs and recompute when stale, so a failed
// write costs only speed: it does not fail the turn or restore, but the
// user is told once (the returned warning, "" when there is nothing new
// to say) why listing or opening the session is slower.
func (c *Controller) saveDigestLocked() string {
	if c.readOnly() != "" || c.broken != "" {
		return ""
	}
	err := c.cfg.Store.SaveDigest(session.Digest{Turns: c.state.ActiveLen(), LastUsed: c.state.LastUsed})
	if c.cfg.Persist != nil {
		err = errors.Join(err, c.cfg.Persist(c.state))
	}
	err = errors.Join(err, c.statsErr)
	if err == nil {
		c.derivedFailed = ""
		return ""
	}
	msg := err.Error()
	if msg == c.derivedFailed {
		return ""
	}
	c.derivedFailed = msg
	return fmt.Sprintf("the session's derived files could not be written (%v); nothing is lost, but listing and opening it parse its whole log until they can be", err)
}

// maxLostEvents bounds how many lost events Repair records in place of a
// torn tail. A torn write loses one record, a zeroed block a few; a
// timeline naming far more events than the log holds was not damaged by a
// crash, and guessing at it is unsafe.
const maxLostEvents = 1000

// EventLost is the notice kind that stands in for an event whose record
// was lost from a torn end of events.jsonl.
const EventLost = "event_lost"

// journaledSeq is the highest event seq the timeline has recorded.
func journaledSeq(st *timeline.State) int64 {
	var hi int64
	for _, cp := range st.Checkpoints {
		hi = max(hi, cp.SeqBefore, cp.FinalSeq)
	}
	return hi
}

// seqBehindLocked refuses a turn while events.jsonl ends before a seq the
// timeline has recorded: its events would be numbered into a range that
// already belongs to another turn.
func (c *Controller) seqBehindLocked() error {
	last, hi := c.cfg.Store.LastSeq(), journaledSeq(c.state)
	if last >= hi {
		return nil
	}
	return &Error{Code: CodeReadOnly, Msg: fmt.Sprintf("session %s: events.jsonl ends at event %d but the timeline has recorded events up to %d; reopen the session (yolop --session %s) to repair it, or start a new one from it with `yolop sessions fork %s`", c.cfg.SessionID, last, hi, c.cfg.SessionID, c.cfg.SessionID)}
}

// reconcileSeqLocked makes the event log and the timeline agree after the
// end of events.jsonl was torn away (the session store keeps the torn bytes
// aside and truncates). The timeline may still name the lost seqs (a
// turn.completed whose final_seq was the torn record); new events would
// then be numbered into ranges the timeline already gave to other turns,
// and every new turn would be refused. Each lost seq gets a notice event in
// its place, tagged with the turn that owned it, so the seq stays globally
// monotonic, the log stays gap-free and the transcript says what was lost.
// When that cannot be done, the session becomes read-only with the fork
// advice instead of failing every turn.
func (c *Controller) reconcileSeqLocked() (string, error) {
	last, hi := c.cfg.Store.LastSeq(), journaledSeq(c.state)
	if last >= hi {
		return "", nil
	}
	if hi-last > maxLostEvents {
		c.cfg.ReadOnly = fmt.Sprintf("timeline.jsonl names event %d but events.jsonl ends at event %d; that many events are not lost by a torn write", hi, last)
		return fmt.Sprintf("The session's event log ends at event %d but its timeline names events up to %d. It was opened read-only: replay works; start a new session from it with `yolop sessions fork %s`.", last, hi, c.cfg.SessionID), nil
	}
	for seq := last + 1; seq <= hi; seq++ {
		turn := ownerOfSeq(c.state, seq)
		text := fmt.Sprintf("event %d of this session was lost: the end of events.jsonl was torn (its bytes are kept beside it in events.jsonl.corrupt-*)", seq)
		ev, err := c.cfg.Store.Append(agent.EventNotice, turn, agent.NoticeData{Kind: EventLost, Text: text})
		if err != nil {
			return "", fmt.Errorf("record lost event %d: %w", seq, err)
		}
		if ev.Seq != seq {
			return "", fmt.Errorf("record lost event %d: the log numbered it %d", seq, ev.Seq)
		}
	}
	if err := c.cfg.Store.Sync(); err != nil {
		return "", fmt.Errorf("record lost events: %w", err)
	}
	what := fmt.Sprintf("event %d", hi)
	if hi > last+1 {
		what = fmt.Sprintf("events %d to %d", last+1, hi)
	}
	return fmt.Sprintf("The end of the event log was torn: %s, which the timeline had recorded, could not be read. They are marked as lost in the transcript and the session continues from event %d.", what, hi+1), nil
}

// ownerOfSeq is the checkpoint whose events include seq: the turn whose
// range (seq_before, final_seq] holds it, else the newest turn that ended
// before it (events written between turns belong to the head), else the
// root.
func ownerOfSeq(st *timeline.State, seq int64) string {
	owner, ownerEnd := "", int64(-1)
	for _, id := range st.Order {
		cp := st.Checkpoints[id]
		if cp == nil {
			continue
		}
		if seq > cp.SeqBefore && (cp.Open || seq <= cp.FinalSeq) {
			return cp.ID
		}
		if !cp.Open && cp.FinalSeq < seq && cp.FinalSeq > ownerEnd {
			owner, ownerEnd = cp.ID, cp.FinalSeq
		}
	}
	return owner
}

// sortChanges orders path changes for stable output.
func sortChanges(p []PathChange) {
	sort.Slice(p, func(i, j int) bool { return p[i].Path < p[j].Path })
}

// RefuseWhileRunning refuses what (an apply, a commit) while a turn is
// still changing the files.
func (c *Controller) RefuseWhileRunning(what string) error {
	if id := c.Running(); id != "" {
		return &Error{Code: CodeTurnRunning, Msg: fmt.Sprintf("turn %s is still changing the files; %s after it ends", id, what)}
	}
	return nil
}

// Prompts are the prompts of the active branch's turns, oldest first
// (what a commit's message is made from).
func (c *Controller) Prompts(ctx context.Context) ([]string, error) {
	rows, err := c.List(ctx, false)
	if err != nil {
		return nil, err
	}
	var out []string
	for i := len(rows) - 1; i >= 0; i-- {
		out = append(out, rows[i].Prompt)
	}
	return out, nil
}
