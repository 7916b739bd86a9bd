package worktree

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/yolop-dev/yolop/internal/fault"
)

// ErrHoldClosed is returned by CheckoutHold.Take when the hold was closed
// (its session closes) while it took the lock; the lock was given back.
var ErrHoldClosed = fault.Plain("worktree: the session is closed")

// CheckoutHold is an in-place session's hold on its checkout's lock
// (CheckoutLock): taken before a turn's first capture and for a restore,
// given back when the turn ends, or when the last background task it left
// running does. An idle session holds nothing.
type CheckoutHold struct {
	lock func() (*CheckoutLock, error) // LockCheckout or LockFolder

	mu       sync.Mutex // guards the fields below
	held     *CheckoutLock
	watching bool // a goroutine gives the lock back when the tasks end
	closed   bool
}

// NewCheckoutHold returns the hold of session id on the checkout whose
// top level is top and whose repository's common git dir is common; for a
// folder outside git (folder), the folder's lock.
func NewCheckoutHold(common, top, id string, folder bool) *CheckoutHold {
	h := &CheckoutHold{lock: func() (*CheckoutLock, error) { return LockCheckout(common, top, id) }}
	if folder {
		h.lock = func() (*CheckoutLock, error) { return LockFolder(top, id) }
	}
	return h
}

// holdWait is how often a turn that waits for the checkout looks again.
const holdWait = 250 * time.Millisecond

// Take takes the checkout's lock unless the hold has it already. While
// another session holds it, Take returns its *CheckoutInUseError, or, with
// wait (a turn of a host that lives across turns), looks again until ctx
// ends, calling onWait (when not nil) once with that error.
func (h *CheckoutHold) Take(ctx context.Context, wait bool, onWait func(inUse error)) error {
	h.mu.Lock()
	held := h.held != nil
	h.mu.Unlock()
	if held {
		return nil
	}
	told := false
	for {
		l, err := h.lock()
		if err == nil {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.closed {
				return errors.Join(ErrHoldClosed, l.Release())
			}
			h.held = l
			return nil
		}
		var ie *CheckoutInUseError
		if !errors.As(err, &ie) || !wait {
			return err
		}
		if !told && onWait != nil {
			told = true
			onWait(ie)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(holdWait):
		}
	}
}

// Release gives the lock back or, while running reports that background
// tasks of the session still run, leaves that to a goroutine that gives it
// back once they have ended.
func (h *CheckoutHold) Release(running func() bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held == nil || h.watching {
		return
	}
	if running() {
		h.watching = true
		go func() {
			for running() {
				time.Sleep(holdWait)
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
			if h.held != nil {
				// Nothing to tell: the lock file goes back to unheld.
				_ = h.held.Release()
				h.held = nil
			}
		}()
		return
	}
	// A failed release drops the flock anyway (the descriptor is closed).
	_ = h.held.Release()
	h.held = nil
}

// Close ends the hold when the session closes (its background tasks are
// stopped first).
func (h *CheckoutHold) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	if h.held == nil {
		return nil
	}
	err := h.held.Release()
	h.held = nil
	return err
}
