package worktree

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestCheckoutHold: one session's hold keeps another's out (refused, or
// waited for with one notice) until it is released; a release while
// background tasks run waits for them; a hold closed while taking gives
// the lock back.
func TestCheckoutHold(t *testing.T) {
	t.Parallel()
	common, top := t.TempDir(), t.TempDir()
	a := NewCheckoutHold(common, top, "s_a", false)
	b := NewCheckoutHold(common, top, "s_b", false)
	if err := a.Take(context.Background(), false, nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Take(context.Background(), false, nil); err != nil {
		t.Fatalf("taking a held hold again: %v", err)
	}
	var ie *CheckoutInUseError
	if err := b.Take(context.Background(), false, nil); !errors.As(err, &ie) || ie.Session != "s_a" {
		t.Fatalf("second session: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*holdWait)
	defer cancel()
	told := 0
	if err := b.Take(ctx, true, func(error) { told++ }); !errors.Is(err, context.DeadlineExceeded) || told != 1 {
		t.Fatalf("waiting second session: %v, told %d times", err, told)
	}

	// Released while a background task runs: kept until it ends.
	var running atomic.Bool
	running.Store(true)
	a.Release(running.Load)
	if err := b.Take(context.Background(), false, nil); !errors.As(err, &ie) {
		t.Fatalf("taken while the first session's task runs: %v", err)
	}
	running.Store(false)
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := b.Take(context.Background(), false, nil)
		if err == nil {
			break
		}
		if !errors.As(err, &ie) || time.Now().After(deadline) {
			t.Fatalf("the lock was not given back after the task ended: %v", err)
		}
		time.Sleep(holdWait / 5)
	}
	b.Release(func() bool { return false })

	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Take(context.Background(), false, nil); !errors.Is(err, ErrHoldClosed) {
		t.Fatalf("taking a closed hold: %v", err)
	}
	if err := b.Take(context.Background(), false, nil); err != nil {
		t.Fatalf("the closed hold kept the lock: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}
