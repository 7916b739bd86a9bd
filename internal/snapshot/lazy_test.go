package snapshot

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// TestLazy: the opener runs once, on first use; an unavailable engine
// leaves the session conversation only with its reason and cause, and
// any other failure stops every call.
func TestLazy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cause := errors.New("config.worktree changed")
	calls := 0
	l := NewLazy(func(context.Context) (*Engine, error) {
		calls++
		return nil, &UnavailableError{Err: cause}
	})
	if l.Unavailable() != "" || l.Cause() != nil || l.Opened() != nil {
		t.Fatal("a Lazy not asked yet says it is unavailable")
	}
	if eng, err := l.Get(ctx); eng != nil || err != nil {
		t.Fatalf("unavailable: %v %v", eng, err)
	}
	if _, err := l.Capture(ctx, "cp1"); !strings.Contains(err.Error(), "workspace snapshots unavailable: config.worktree changed") {
		t.Fatalf("capture: %v", err)
	}
	if l.Unavailable() != "workspace snapshots unavailable: config.worktree changed" || l.Cause() != cause || calls != 1 {
		t.Fatalf("reason %q, cause %v, opened %d times", l.Unavailable(), l.Cause(), calls)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	fatal := errors.New("worktree: not the session's worktree")
	l = NewLazy(func(context.Context) (*Engine, error) { return nil, fatal })
	if _, err := l.Get(ctx); err != fatal {
		t.Fatalf("fatal: %v", err)
	}
	var ce *CaptureError
	if _, err := l.Diff(ctx, "a", "b"); !errors.As(err, &ce) || !errors.Is(err, fatal) {
		t.Fatalf("diff after a fatal open: %v", err)
	}
	if l.Unavailable() != fatal.Error() || l.Cause() != nil {
		t.Fatalf("reason %q, cause %v", l.Unavailable(), l.Cause())
	}
}

// OpenSoon opens in the background: once, with a context no caller can
// cancel; Get then returns what that open returned, its error included,
// and Opened returns it.
func TestLazyOpenSoon(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	state := filepath.Join(t.TempDir(), "state")
	calls := make(chan context.Context, 2)
	l := NewLazy(func(ctx context.Context) (*Engine, error) {
		calls <- ctx
		return Open(ctx, Options{Worktree: wt, SessionID: "s_soon", StateDir: state})
	})
	l.OpenSoon()
	opened := <-calls
	if opened.Done() != nil {
		t.Fatal("the background open can be cancelled")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	eng, err := l.Get(ctx)
	if err != nil || eng == nil {
		t.Fatalf("Get after OpenSoon: %v, %v", eng, err)
	}
	l.OpenSoon()
	if eng2, _ := l.Get(context.Background()); eng2 != eng || len(calls) != 0 {
		t.Fatalf("opened again (%d more calls)", len(calls))
	}
	if l.Opened() != eng {
		t.Fatal("Opened does not return the engine OpenSoon opened")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	fatal := errors.New("worktree: not the session's worktree")
	l = NewLazy(func(context.Context) (*Engine, error) { return nil, fatal })
	l.OpenSoon()
	if _, err := l.Get(context.Background()); err != fatal {
		t.Fatalf("Get after a failed OpenSoon: %v", err)
	}
}
