package app

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/land"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/snapshot"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// Codes of the refusals of a session in place.
const (
	CodeCheckoutInUse = "checkout_in_use"
	CodeCheckoutBusy  = "checkout_busy"
)

// checkoutHold is an in-place session's hold on its checkout's lock
// (worktree.CheckoutLock): taken before a turn's first capture and for a
// restore, given back when the turn ends, or when the last background task
// it left running does. An idle session holds nothing.
type checkoutHold struct {
	mu       sync.Mutex // guards the fields below
	lock     *worktree.CheckoutLock
	watching bool // a goroutine gives the lock back when the tasks end
	closed   bool
}

// checkoutWait is how often a turn that waits for the checkout looks
// again.
const checkoutWait = 250 * time.Millisecond

// holdCheckout takes the checkout lock of an in-place session for a turn
// (wait, when the host lives across turns) or a restore. It refuses while
// a git operation is in progress in the checkout. The returned func ends
// the hold (kept while background tasks run).
func (p *Parts) holdCheckout(ctx context.Context, forTurn, wait bool, onUpdate func(agent.Update)) (func(), error) {
	ws := p.Session.Workspace()
	if ws.Kind != session.KindInPlace || p.checkout == nil {
		return func() {}, nil
	}
	if ws.Folder {
		// No git operation of the user's runs in a folder outside git.
	} else if err := land.CheckIdle(ctx, ws.RepoRoot, false); err != nil {
		return nil, &checkpoint.Error{Code: CodeCheckoutBusy, Msg: fmt.Sprintf("%v; the session works in your checkout, so its turns and restores are refused until then (nothing ran)", err), Err: err}
	}
	h := p.checkout
	h.mu.Lock()
	held := h.lock != nil
	h.mu.Unlock()
	if !held {
		told := false
		for {
			var l *worktree.CheckoutLock
			var err error
			if ws.Folder {
				l, err = worktree.LockFolder(ws.RepoRoot, p.Session.ID)
			} else {
				l, err = worktree.LockCheckout(ws.CommonDir, ws.RepoRoot, p.Session.ID)
			}
			if err == nil {
				h.mu.Lock()
				if h.closed {
					h.mu.Unlock()
					return nil, errors.Join(errClosed, l.Release())
				}
				h.lock = l
				h.mu.Unlock()
				break
			}
			var ie *worktree.CheckoutInUseError
			if !errors.As(err, &ie) {
				return nil, err
			}
			if !wait || !forTurn {
				return nil, &checkpoint.Error{Code: CodeCheckoutInUse, Msg: ie.Error(), Err: err}
			}
			if !told && onUpdate != nil {
				told = true
				onUpdate(agent.Update{Kind: agent.UpdateWarning, Text: ie.Error() + " — this turn waits for it"})
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(checkoutWait):
			}
		}
	}
	return func() { p.releaseCheckout() }, nil
}

// releaseCheckout gives the checkout lock back, or leaves it to a watcher
// while background tasks of the session still run.
func (p *Parts) releaseCheckout() {
	h := p.checkout
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lock == nil || h.watching {
		return
	}
	if backgroundRunning(p.Tasks) {
		h.watching = true
		go func() {
			for backgroundRunning(p.Tasks) {
				time.Sleep(checkoutWait)
				h.mu.Lock()
				closed := h.closed
				h.mu.Unlock()
				if closed {
					return
				}
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			h.watching = false
			if h.lock != nil {
				// Nothing to tell: the lock file goes back to unheld.
				_ = h.lock.Release()
				h.lock = nil
			}
		}()
		return
	}
	// A failed release drops the flock anyway (the descriptor is closed).
	_ = h.lock.Release()
	h.lock = nil
}

func backgroundRunning(t *tools.Tasks) bool {
	for _, w := range t.Active() {
		if w.Kind == tools.WriterBackground {
			return true
		}
	}
	return false
}

// closeCheckout ends the hold when the session closes (its background
// tasks are stopped first).
func (h *checkoutHold) close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	if h.lock == nil {
		return nil
	}
	err := h.lock.Release()
	h.lock = nil
	return err
}

// inPlaceLand describes an in-place session to the land package: its
// checkout, the tree of its first checkpoint, and the paths its turns on
// the active branch changed.
func inPlaceLand(ctx context.Context, p *Parts, ls land.Session, eng *snapshot.Engine) (land.Session, error) {
	ls.InPlace, ls.Worktree, ls.Engine = true, eng.Root(), eng
	// git commit runs confined (the user's hooks may be the agent's), in
	// a scratch git directory the sandbox lets it write.
	ls.Confine, ls.ConfineDir = confineWith(p.Tasks), p.Session.Path("tmp")
	ls.Folder = p.Session.Workspace().Folder
	rows, err := p.Controller.List(ctx, false)
	if err != nil {
		return ls, err
	}
	for i := len(rows) - 1; i >= 0; i-- {
		ls.Prompts = append(ls.Prompts, rows[i].Prompt)
	}
	seen := map[string]bool{}
	for _, t := range p.Controller.TurnTrees() {
		if ls.Base == "" {
			ls.Base = t.Start
		}
		if t.End == "" {
			continue // no end capture: what it changed is in no snapshot
		}
		ch, err := eng.Diff(ctx, t.Start, t.End)
		if err != nil {
			return ls, err
		}
		for _, c := range ch {
			if !seen[c.Path] {
				seen[c.Path] = true
				ls.Paths = append(ls.Paths, c.Path)
			}
		}
	}
	return ls, nil
}
