package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/agent/system"
	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/failpoint"
	"github.com/yolop-dev/yolop/internal/gitstate"
	"github.com/yolop-dev/yolop/internal/land"
	"github.com/yolop-dev/yolop/internal/mcp"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/resume"
	"github.com/yolop-dev/yolop/internal/sandbox"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/snapshot"
	"github.com/yolop-dev/yolop/internal/spawn"
	"github.com/yolop-dev/yolop/internal/timeline"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// Hooks are seams for tests and fault injection. The product leaves them
// zero; tests pass them through Env so they exercise the very assembly
// the product runs, never a copy of it.
type Hooks struct {
	// Runtime, when set, replaces the agent as the controller's runtime
	// (the agent is still built and owns the tools).
	Runtime func(*agent.Agent) checkpoint.Runtime
	// Journal, when set, wraps the timeline the controller appends to.
	Journal func(checkpoint.Timeline) checkpoint.Timeline
	// Failpoint is called at every named failpoint of the controller and
	// the snapshot engine. nil means failpoint.Hit (YOLOP_FAILPOINT).
	Failpoint func(name string)
	// System replaces the system prompt.
	System string
}

// failpoint is the Failpoint hook, failpoint.Hit when it is not set.
func (h Hooks) failpoint() func(string) {
	if h.Failpoint == nil {
		return failpoint.Hit
	}
	return h.Failpoint
}

// Parts are the opened parts of a session that exists on disk. They are
// assembled by one constructor (assemble) and released by Close, which
// runs the cleanup stack in reverse order.
type Parts struct {
	Session     *session.Session
	Timeline    *timeline.Log
	Compactions *timeline.CompactionLog
	// git opens the worktree check and the snapshot engine on first use
	// (nil for a session without workspace snapshots).
	git        *snapshot.Lazy
	Tasks      *tools.Tasks
	Tools      *tools.Set
	Agent      *agent.Agent
	Controller *checkpoint.Controller
	// NoWorkspace says why the session has no workspace snapshots ("" when
	// it has them).
	NoWorkspace string
	// Notes are the repairs made when the session was opened.
	Notes []string
	// Warnings are what opening found and could not repair (a damaged
	// timeline); hosts show them once, like the sandbox's.
	Warnings []string
	// Notices are setup problems the user should see once (an MCP server
	// that did not start).
	Notices []string
	// MCP are the session's MCP connections (nil without servers).
	MCP *mcp.Manager
	// Sandbox is how the session's commands are confined.
	Sandbox sandbox.Status
	// ContextCached reports that the model context came from the resume
	// file's cache rather than from decoding the events.
	ContextCached bool

	contextWindow int    // the model's context window, 0 when unknown
	setup         string // the settings' [worktree] setup command
	cleanups      []func() error
	// checkout is an in-place session's hold on its checkout's lock (nil
	// for other sessions), gitState the git state of its checkout (nil
	// for a folder outside git).
	checkout *worktree.CheckoutHold
	gitState *gitstate.Checkout
}

// Snapshots returns the session's snapshot engine (opening it: git
// processes), nil when the session has none.
func (p *Parts) Snapshots() *snapshot.Engine {
	eng, _ := p.git.Get(context.Background())
	return eng
}

// onClose pushes a cleanup onto the stack.
func (p *Parts) onClose(f func() error) { p.cleanups = append(p.cleanups, f) }

// Close runs the cleanup stack in reverse order: background tasks are
// stopped, the snapshot engine's background work is waited for, the
// journals are closed and the session lock is released last.
func (p *Parts) Close() error {
	var errs []error
	for i := len(p.cleanups) - 1; i >= 0; i-- {
		errs = append(errs, p.cleanups[i]())
	}
	p.cleanups = nil
	return errors.Join(errs...)
}

// assemble opens every part of an existing, locked session and repairs
// it. On error everything it opened is closed again, the session
// included.
func assemble(ctx context.Context, sess *session.Session, prov provider.Provider, o options, kept *resume.File) (_ *Parts, err error) {
	dataDir, h := o.DataDir, o.Hooks
	p := &Parts{Session: sess}
	p.onClose(sess.Close)
	defer func() {
		if err != nil {
			err = errors.Join(err, p.Close())
			err = fmt.Errorf("session %s: %w", sess.ID, err)
		}
	}()
	// Before anything else: nothing left by an earlier process may write
	// while this one repairs, lists or restores.
	reaped, survivors, err := spawn.ReapSession(sess.Path(spawn.LedgerFile), sess.ID)
	if err != nil {
		return nil, err
	}
	// Last before the lock goes: nothing of this process's commands and
	// MCP servers outlives the session, not even when a helper was killed.
	p.onClose(func() error { return spawn.SweepSession(sess.Path(spawn.LedgerFile), sess.ID) })
	settings, err := config.Settings()
	if err != nil {
		return nil, err
	}
	if p.setup = strings.TrimSpace(settings.Worktree.Setup); p.setup != "" {
		// The setup command writes the worktree before the first
		// capture: a claim's proof that it is clean no longer holds.
		o.knownClean, o.knownWalk = false, nil
	}
	hit := h.failpoint()
	ws := sess.Workspace()
	if ws.ActiveRoot == "" {
		return nil, errors.New("workspace.json names no active root")
	}
	if ws.Kind == session.KindInPlace {
		// Its commands get read-only paths (the checkout's .git): the
		// check that they can is made while the logs open.
		sandbox.ProbeEarly(dataDir)
	}
	// onDisk is the resume file both logs were resumed from (nil when
	// they were replayed).
	tl, tlRepair, onDisk, err := resume.OpenTimeline(sess, kept)
	if err != nil {
		return nil, err
	}
	p.Timeline = tl
	p.onClose(tl.Close)
	live := tl.Live()
	lastEnd := live.LastEndTree()
	// Crash repair of an interrupted turn or restore captures and restores
	// files, and MCP servers start in the worktree: those need git now.
	// Otherwise git is not asked anything until a turn, capture, diff,
	// restore or landing needs it (see snapshot.Lazy).
	gitNow := live.OpenTurn != nil || live.PendingRestore != nil || len(o.servers()) > 0

	att, err := worktree.Attach(ctx, sess, dataDir)
	if err != nil {
		return nil, err
	}
	ws = att.Workspace
	p.NoWorkspace, p.Warnings = att.NoWorkspace, att.Warnings
	if p.checkout = att.Hold; p.checkout != nil {
		p.onClose(p.checkout.Close)
	}
	var snaps checkpoint.Snapshots
	if att.HasEngine() {
		eo, err := config.Engine(o.watch(), o.oneShot())
		if err != nil {
			return nil, err
		}
		eo.Failpoint, eo.KnownClean, eo.KnownWalk, eo.KnownWatch, eo.Look = hit, o.knownClean, o.knownWalk, o.knownWatch, o.look
		if eo.Watch != nil && !gitNow {
			// The engine opens at the session's first capture, which
			// walks: that walk arms the watcher. An arm of its own in
			// the background, walking the tree beside it, could not be
			// done first, and the end of the first turn would walk
			// again (at 100,000 files, a second second).
			eo.Watch.ArmWithWalk = true
		}
		// The engine may still be bringing its private index up to date
		// in the background: it must finish before the session lock
		// goes, so the next process never meets a live index.lock.
		p.git = att.Snapshots(eo)
		p.onClose(p.git.Close)
		snaps = p.git
		if !gitNow && (o.turnNext || o.oneShot()) {
			// A turn comes next: its git processes run while the rest
			// of the session is assembled.
			p.git.OpenSoon()
		}
		if gitNow {
			eng, err := p.git.Get(ctx)
			if err != nil {
				return nil, err
			}
			if eng == nil {
				p.NoWorkspace, p.git, snaps = p.git.Unavailable(), nil, nil
			}
		}
	}
	if st, err := os.Stat(ws.ActiveRoot); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("its directory %s is gone; start a new session", ws.ActiveRoot)
	}
	comps, _, err := timeline.OpenCompactions(sess.Path(session.CompactionsFile))
	if err != nil {
		return nil, err
	}
	p.Compactions = comps
	p.onClose(comps.Close)
	spill, err := tools.SessionSpillDir(sess.Dir, sess.ID, ws.ActiveRoot)
	if err != nil {
		return nil, err
	}
	p.Sandbox, err = config.Sandbox(o.Sandbox, settings, worktree.SandboxLayout(ws, sess.Path(tools.SessionTmpDir)))
	if err != nil {
		return nil, err
	}
	p.Tasks = tools.ForSession(sess.Dir, sess.ID, spill, tools.TaskOptions{PassEnv: settings.Tools.PassEnv, Env: settings.Tools.Env, Sandbox: p.Sandbox})
	p.Tasks.AddSurvivors(survivors)
	p.onClose(func() error {
		// Background tasks do not outlive the process that started them:
		// the model learns at its next turn that they were stopped.
		var err error
		if p.Agent != nil && p.Controller != nil {
			err = p.Agent.NoteStopped(p.Controller.Head(), p.Tasks.Active())
		}
		p.Tasks.StopAll()
		return err
	})
	late := &checkpoint.Late{}
	var external []tools.Tool
	if len(o.servers()) > 0 {
		servers, err := config.SessionMCP(o.servers(), settings)
		if err != nil {
			return nil, err
		}
		// MCP servers see the session's worktree as their root, never the
		// user's checkout.
		root := ws.ActiveRoot
		if ws.Worktree != nil {
			root = ws.Worktree.Path
		}
		p.MCP = mcp.Start(ctx, servers, root, mcp.Confine(sess.ID, sess.Path(spawn.LedgerFile), p.Sandbox))
		p.onClose(p.MCP.Close)
		p.Notices = append(p.Notices, p.MCP.Problems()...)
		if len(o.EditorMCP) > 0 && ws.Worktree != nil {
			p.Notices = append(p.Notices, mcp.WorktreeNote)
		}
		external = p.MCP.Tools()
	}
	p.Tools, err = tools.New(tools.Env{Root: ws.ActiveRoot, SpillDir: spill, Tasks: p.Tasks, Checkpoints: late, External: external})
	if err != nil {
		return nil, err
	}
	var systemFunc func() (string, error)
	if h.System == "" {
		systemFunc = system.Deferred(ws, p.Snapshots, lastEnd, p.NoWorkspace, p.Sandbox.InForce, p.Tasks.EnvPlan().Describe())
	}
	compact, err := config.CompactAt()
	if err != nil {
		return nil, err
	}
	p.Agent = agent.New(agent.Config{Log: sess, Provider: prov, Tools: p.Tools, System: h.System, SystemFunc: systemFunc, Compactions: comps, CompactAt: compact, Failpoint: hit, Instructions: system.Instructions(ws)})
	var rt checkpoint.Runtime = p.Agent
	if h.Runtime != nil {
		rt = h.Runtime(p.Agent)
	}
	var journal checkpoint.Timeline = tl
	if h.Journal != nil {
		journal = h.Journal(tl)
	}
	p.gitState = gitstate.For(sess.Dir, ws)
	_, ro := sess.ReadOnly()
	ro = cmp.Or(ro, att.Broken)
	p.Controller = checkpoint.New(checkpoint.Config{
		SessionID: sess.ID, Dir: sess.Dir, Store: sess, Timeline: journal,
		Snapshots: snaps, NoWorkspace: p.NoWorkspace, Runtime: rt, Writers: p.Tasks, Compactions: comps, ReadOnly: ro,
		Failpoint: hit, Sandbox: string(p.Sandbox.InForce), Caches: p.Sandbox.Caches,
		Persist:   resume.NewWriter(sess.Dir, sess, tl, p.Agent, onDisk).Save,
		OtherRefs: catalog.ApplyRefs(dataDir, ws),
		InPlace:   ws.Kind == session.KindInPlace, PreviewWarnings: p.gitState.PreviewWarnings(),
	})
	late.Set(p.Controller)
	p.Notes = append(append(append(reaped, sess.Repaired()...), att.Notes...), tlRepair.Notes()...)
	// The session's usage so far, before Repair saves the derived files
	// that record it.
	p.Agent.AddUsage(resume.Usage(sess, kept))
	if d := tlRepair.Damage(); d != "" {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s; nothing was repaired and the session is read-only: replay and listing work, turns and restores do not (yolop sessions fork %s continues from the part before it)", d, sess.ID))
	}
	more, err := p.Controller.Repair(ctx)
	if err != nil {
		return nil, err
	}
	p.Notes = append(p.Notes, more...)
	if att.Readded != nil {
		wt := ws.Worktree
		p.Notes = append(p.Notes, p.Controller.Refill(ctx, checkpoint.Readded{Path: wt.Path, Branch: wt.Branch, Base: wt.Base, CommonDir: ws.CommonDir,
			BranchRecreated: att.Readded.BranchRecreated, Engine: p.Snapshots(), NoWorkspace: p.NoWorkspace, ReadOnly: ro}))
	}
	if ws.Worktree != nil {
		p.Notes = append(p.Notes, land.RepairAtOpen(ctx, dataDir, ws.SessionID, ws.RepoRoot)...)
	}
	p.ContextCached = p.Controller.ReseedOpen(onDisk.ContextFor(tl.Live()))
	return p, nil
}
