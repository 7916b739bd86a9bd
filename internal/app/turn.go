package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/land"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/setup"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// Prompt runs one turn. The session is created on disk by its first turn.
func (s *Session) Prompt(ctx context.Context, text string, onUpdate func(agent.Update)) (_ TurnResult, err error) {
	if err := agent.CheckPrompt(text); err != nil {
		return TurnResult{}, err
	}
	ctx, end, err := s.begin(ctx, true)
	if err != nil {
		return TurnResult{}, err
	}
	defer end()
	created := !s.Exists()
	p, err := s.partsForTurn(ctx, text, onUpdate)
	if err != nil {
		return TurnResult{}, err
	}
	if created {
		defer func() {
			// A failed first turn still says that its session could not
			// be put on disk (a turn that ran says it with its result).
			if derr := p.Session.Durable(); derr != nil && err != nil && !errors.Is(err, derr) {
				err = errors.Join(err, derr)
			}
		}()
	}
	// In place, one session writes the checkout at a time.
	release, err := p.holdCheckout(ctx, true, !s.opts.oneShot(), onUpdate)
	if err != nil {
		return TurnResult{}, err
	}
	defer release()
	// The session's last-used time (and its title, when it has none) is
	// written beside the turn, not after it: its fsyncs are then off the
	// turn's path. The turn that made the session has both already.
	touched := make(chan error, 1)
	if created {
		touched <- nil
	} else {
		go func() { touched <- p.Session.Touch(text) }()
	}
	touchErr := sync.OnceValue(func() error { return <-touched })
	defer func() {
		// A turn that failed still reports a workspace.json that could
		// not be written.
		if terr := touchErr(); terr != nil && err != nil {
			err = errors.Join(err, fmt.Errorf("the session's description could not be updated either: %w", terr))
		}
	}()
	w := &agent.Warner{OnUpdate: onUpdate}
	// While the turn runs, a background spare preparation of its
	// repository stops its checkout.
	releaseTurn, err := worktree.HoldSessionTurn(ctx, p.Session.Workspace())
	if err != nil {
		w.Warn(fmt.Sprintf("could not hold the repository's turns lock (%v)", err))
		releaseTurn = func() {}
	}
	defer releaseTurn()
	if created {
		s.startWarnings(p, w)
	}
	if err := p.runSetup(ctx, w, onUpdate); err != nil {
		return TurnResult{}, err
	}
	around := p.gitState.Begin()
	res, err := p.runTurn(ctx, text, onUpdate)
	if !s.opts.oneShot() {
		s.start.PrepareSpare()
	}
	if err != nil {
		return TurnResult{}, err
	}
	if note := around.End(res.CheckpointID); note != "" {
		res.Warnings = append(res.Warnings, note)
	}
	res.Warnings = append(res.Warnings, s.afterTurn(p)...)
	res.Warnings = append(res.Warnings, w.Early...)
	if created {
		// The session this turn made is listed, and kept through a
		// crash, once the turn has returned.
		if err := p.Session.Durable(); err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("the turn ran, but %v: a crash may lose it", err))
		}
	}
	if err := touchErr(); err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the turn ran, but the session's description could not be updated (%v); its title and last-used time may be stale", err))
	}
	return res, nil
}

// partsForTurn creates the session on its first prompt and returns its
// parts, refused when it was opened for reading only or its directory is
// no longer the session's worktree (git is asked before the first turn
// of the process).
func (s *Session) partsForTurn(ctx context.Context, text string, onUpdate func(agent.Update)) (*Parts, error) {
	if _, err := s.materialize(ctx, session.Title(text), nil, agent.NoticeSink(onUpdate)); err != nil {
		return nil, err
	}
	p := s.Parts()
	if p == nil {
		return nil, fmt.Errorf("session %s is %s; turns are refused", s.ID(), s.Info().ReadOnlyReason)
	}
	if _, err := p.git.Get(ctx); err != nil {
		return nil, fmt.Errorf("session %s: %w", p.Session.ID, err)
	}
	return p, nil
}

// startWarnings says, on the turn that created the session and before the
// agent starts working, what the user must know of where it works: the
// checkout's uncommitted changes and submodules its new worktree does not
// have (unless StartNotices said the same), and that its files are not
// snapshotted.
func (s *Session) startWarnings(p *Parts, w *agent.Warner) {
	told := s.notices.First()
	if p.Snapshots() == nil {
		why := cmp.Or(p.git.Unavailable(), p.NoWorkspace)
		told = append(told, "conversation only — files are not snapshotted here ("+why+"); rewind restores the conversation, not the files")
	}
	for _, t := range told {
		w.Warn(t)
	}
}

// runSetup runs the settings' [worktree] setup before the session's first
// checkpoint: what it installs is the session's starting point, not a
// change of its first turn.
func (p *Parts) runSetup(ctx context.Context, w *agent.Warner, onUpdate func(agent.Update)) error {
	ws := p.Session.Workspace()
	if ws.Kind != session.KindWorktree || p.Controller.ReadOnly() != "" || len(p.Timeline.State().Order) > 0 {
		return nil // only a worktree of its own is set up, before any turn
	}
	in := setup.Session{Dir: p.Session.Dir, Worktree: ws.Worktree.Path, Tasks: p.Tasks,
		Note: func(n agent.NoticeData) error { return p.Agent.Note(p.Controller.Head(), n) }}
	warning, err := setup.Run(ctx, in, p.setup, onUpdate)
	if warning != "" {
		w.Warn(warning)
	}
	return err
}

// runTurn runs the turn through the controller and reports it, with the
// tool calls it made in the order they ended.
func (p *Parts) runTurn(ctx context.Context, text string, onUpdate func(agent.Update)) (TurnResult, error) {
	var mu sync.Mutex
	calls := []ToolCall{}
	out, err := p.Controller.RunTurn(ctx, text, func(u agent.Update) {
		if u.Kind == agent.UpdateToolEnd && u.Tool != nil {
			mu.Lock()
			calls = append(calls, ToolCall{Name: u.Tool.Name, Status: u.Tool.Status})
			mu.Unlock()
		}
		if onUpdate != nil {
			onUpdate(u)
		}
	})
	if err != nil {
		return TurnResult{}, err
	}
	mu.Lock()
	res := TurnResult{CheckpointID: out.ID, Status: out.Status, Text: out.Text, Pending: out.Pending, Usage: out.Usage, Warnings: out.Warnings, Tools: calls}
	mu.Unlock()
	res.Branch = p.Controller.ActiveBranch()
	if out.Err != nil {
		res.Error = out.Err.Error()
	}
	if out.PendingErr != nil {
		res.Text = strings.TrimSpace(res.Text + "\n\nThe requested checkpoint preview could not be built: " + out.PendingErr.Error())
	}
	return res, nil
}

// afterTurn is what the user must know once a turn ended: once per
// session, why commands do not get the login shell's environment; in a
// process that ends with its turn, which background tasks stop with it.
func (s *Session) afterTurn(p *Parts) []string {
	var out []string
	if why := p.Tasks.LoginNotice(); why != "" {
		out = append(out, why+"; the tools' commands run in yolop's own environment instead")
	}
	if s.opts.oneShot() {
		for _, w := range p.Tasks.Active() {
			if w.Kind == tools.WriterBackground {
				out = append(out, fmt.Sprintf("background task %s (%s) stops when this yolop -p process exits; work that must keep running between turns belongs in the TUI (yolop -c)", w.ID, w.Command))
			}
		}
	}
	return out
}

// holdCheckout takes the checkout lock of an in-place session for a turn
// (wait, when the host lives across turns) or a restore. It refuses while
// a git operation is in progress in the checkout. The returned func ends
// the hold (kept while background tasks run).
func (p *Parts) holdCheckout(ctx context.Context, forTurn, wait bool, onUpdate func(agent.Update)) (func(), error) {
	ws := p.Session.Workspace()
	if ws.Kind != session.KindInPlace || p.checkout == nil {
		return func() {}, nil
	}
	if !ws.Folder { // no git operation of the user's runs in a folder outside git
		var err error
		if eng := p.git.Opened(); eng != nil && eng.GitDir() != "" {
			// The engine asked git for the checkout's git directory.
			err = land.CheckIdleIn(ws.RepoRoot, eng.GitDir())
		} else {
			err = land.CheckIdle(ctx, ws.RepoRoot, false)
		}
		if err != nil {
			return nil, &checkpoint.Error{Code: string(fault.CheckoutBusy), Msg: fmt.Sprintf("%v; the session works in your checkout, so its turns and restores are refused until then (nothing ran)", err), Err: err}
		}
	}
	w := &agent.Warner{OnUpdate: onUpdate}
	if err := p.checkout.Take(ctx, wait && forTurn, func(inUse error) { w.Warn(inUse.Error() + " — this turn waits for it") }); err != nil {
		return nil, refusal(err)
	}
	return func() { p.checkout.Release(p.Tasks.BackgroundRunning) }, nil
}
