package snapshot

import (
	"context"
	"errors"
	"sync"

	"github.com/yolop-dev/yolop/internal/fault"
)

// Lazy is an engine opened when it is first needed. Opening a session's
// engine costs git processes (the check that its directory is still the
// session's worktree, then a few of the engine's own), which a session
// opened to list its checkpoints never needs; a turn, a capture, a diff,
// a restore or a landing opens it. A Lazy is what a checkpoint controller
// is given as its snapshots: every call opens the engine, then forwards.
type Lazy struct {
	open func(ctx context.Context) (*Engine, error)

	once sync.Once
	mu   sync.Mutex // guards the results below
	eng  *Engine
	// why is the reason the session has no engine (an *UnavailableError),
	// err a failure that must stop every turn.
	why *UnavailableError
	err error
	// unopened releases what open would have handed to the engine
	// (Unopened), when Close comes first.
	unopened func()
}

// errClosedUnopened is what a Lazy closed before its first use gives.
var errClosedUnopened = fault.Plain("snapshot: the session's engine was closed before it was opened")

// UnavailableError is what a Lazy's opener returns when the session can
// go on without workspace snapshots (conversation only): the engine could
// not be opened for Err.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string {
	return "workspace snapshots unavailable: " + e.Err.Error()
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// errNoEngine is the error under a capture refused because the engine
// is unavailable (the CaptureError's Reason says why).
var errNoEngine = fault.Plain("snapshot: no engine")

// A nil *Lazy is a session without an engine: Get returns nil, and it
// says nothing is unavailable.

// NewLazy returns an engine that open opens on first use, once. open
// returns an *UnavailableError when the session runs without workspace
// snapshots, and any other error when nothing may run in its directory
// (it is not the session's worktree any more).
func NewLazy(open func(ctx context.Context) (*Engine, error)) *Lazy {
	return &Lazy{open: open}
}

// Unopened sets what Close releases when the engine was never opened:
// what the opener would have handed to it (a Prewatch). It returns l.
func (l *Lazy) Unopened(release func()) *Lazy {
	l.unopened = release
	return l
}

// Get opens the engine on first use and returns it: nil without an
// error when it is unavailable (see Unavailable), and the error that
// forbids turns.
func (l *Lazy) Get(ctx context.Context) (*Engine, error) {
	if l == nil {
		return nil, nil
	}
	l.once.Do(func() { l.openOnce(ctx) })
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.eng, l.err
}

// OpenSoon starts opening the engine in the background, for a caller
// about to use it; the next Get waits for that open and returns what it
// returned, errors included.
func (l *Lazy) OpenSoon() {
	if l == nil {
		return
	}
	go l.once.Do(func() { l.openOnce(context.Background()) })
}

func (l *Lazy) openOnce(ctx context.Context) {
	// Whatever call comes first must not leave a half-opened engine
	// behind because it was cancelled.
	eng, err := l.open(context.WithoutCancel(ctx))
	l.mu.Lock()
	defer l.mu.Unlock()
	var why *UnavailableError
	switch {
	case err == nil:
		l.eng = eng
	case errors.As(err, &why):
		l.why = why
	default:
		l.err = err
	}
}

// Opened returns the engine if it was opened, without opening it.
func (l *Lazy) Opened() *Engine {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.eng
}

// Unavailable says why the engine, once asked for, could not be opened
// ("" when it was, or was not asked for yet).
func (l *Lazy) Unavailable() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.err != nil:
		return l.err.Error()
	case l.why != nil:
		return l.why.Error()
	}
	return ""
}

// Cause is the error that left the session without an engine (nil when
// it has one or was not asked for it yet): the landing commands report
// some causes as themselves (a worktree whose git configuration changed).
func (l *Lazy) Cause() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.why != nil {
		return l.why.Err
	}
	return nil
}

// Close closes the engine if it was opened: it stops its watcher and
// waits for its background index update.
func (l *Lazy) Close() error {
	if l == nil {
		return nil
	}
	l.once.Do(func() {
		// Never opened: it never will be now.
		l.mu.Lock()
		l.err = errClosedUnopened
		l.mu.Unlock()
		if l.unopened != nil {
			l.unopened()
		}
	})
	if eng := l.Opened(); eng != nil {
		return eng.Close()
	}
	return nil
}

func (l *Lazy) engine(ctx context.Context) (*Engine, error) {
	eng, err := l.Get(ctx)
	if err != nil {
		return nil, &CaptureError{Reason: err.Error(), Err: err}
	}
	if eng == nil {
		return nil, &CaptureError{Reason: l.Unavailable(), Err: errNoEngine}
	}
	return eng, nil
}

func (l *Lazy) Capture(ctx context.Context, name string) (Snapshot, error) {
	eng, err := l.engine(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	return eng.Capture(ctx, name)
}

func (l *Lazy) Diff(ctx context.Context, from, to string) ([]Change, error) {
	eng, err := l.engine(ctx)
	if err != nil {
		return nil, err
	}
	return eng.Diff(ctx, from, to)
}

func (l *Lazy) Restore(ctx context.Context, from Snapshot, target string) (RestoreResult, error) {
	eng, err := l.engine(ctx)
	if err != nil {
		return RestoreResult{}, err
	}
	return eng.Restore(ctx, from, target)
}

func (l *Lazy) CheckRestore(ctx context.Context, from, target string) (RestoreCheck, error) {
	eng, err := l.engine(ctx)
	if err != nil {
		return RestoreCheck{}, err
	}
	return eng.CheckRestore(ctx, from, target)
}

func (l *Lazy) Excluded(ctx context.Context) ([]string, error) {
	eng, err := l.engine(ctx)
	if err != nil {
		return nil, err
	}
	return eng.Excluded(ctx)
}

func (l *Lazy) LeftAlone(ch []Change) ([]Change, []string) {
	eng, err := l.engine(context.Background())
	if err != nil {
		return ch, nil
	}
	return eng.LeftAlone(ch)
}

func (l *Lazy) PatchPath(ctx context.Context, from, to, path string) (PathPatch, error) {
	eng, err := l.engine(ctx)
	if err != nil {
		return PathPatch{}, err
	}
	return eng.PatchPath(ctx, from, to, path)
}

// LinkRepairs are those of an engine already opened: one not opened has
// repaired nothing.
func (l *Lazy) LinkRepairs() []string {
	if eng := l.Opened(); eng != nil {
		return eng.LinkRepairs()
	}
	return nil
}

func (l *Lazy) DeleteRef(ctx context.Context, name string) error {
	eng, err := l.engine(ctx)
	if err != nil {
		return err
	}
	return eng.DeleteRef(ctx, name)
}

func (l *Lazy) SessionRefs(ctx context.Context) ([]string, error) {
	eng, err := l.engine(ctx)
	if err != nil {
		return nil, err
	}
	return eng.SessionRefs(ctx)
}

func (l *Lazy) Revert(ctx context.Context, current string, steps []Step, o RevertOptions) (string, []PathOutcome, error) {
	eng, err := l.engine(ctx)
	if err != nil {
		return "", nil, err
	}
	return eng.Revert(ctx, current, steps, o)
}
