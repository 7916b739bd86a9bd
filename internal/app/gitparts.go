package app

import (
	"context"
	"errors"
	"sync"

	"github.com/yolop-dev/yolop/internal/snapshot"
)

// gitParts are the parts of a worktree session that cost git processes to
// open: the check that its directory is still a worktree of its repository
// (git rev-parse) and the snapshot engine (a few more). A session opened to
// list its checkpoints needs neither, so they are opened when first needed:
// before a turn (Session.Prompt), at the first capture, diff or restore,
// for landing, and at open when crash repair needs them (an interrupted
// turn or restore) or something starts in the worktree (MCP servers).
type gitParts struct {
	// open does the work once. A non-nil error is fatal for turns (the
	// directory is not the session's worktree: nothing may run there);
	// noWS says why there are no workspace snapshots when the engine could
	// not be opened (the session then runs conversation only).
	open func(ctx context.Context) (eng *snapshot.Engine, noWS string, err error)

	// cause is the error behind noWS when the landing commands must
	// report it as such (the worktree's git configuration changed: code
	// worktree_config_changed); set by open, read after it.
	cause error

	once sync.Once
	mu   sync.Mutex // guards the results below
	eng  *snapshot.Engine
	noWS string
	err  error
}

// get opens the parts on first use and returns the engine (nil when
// unavailable), why it is unavailable, and the fatal error.
func (g *gitParts) get(ctx context.Context) (*snapshot.Engine, string, error) {
	g.once.Do(func() {
		// Whatever call comes first must not leave a half-opened engine
		// behind because it was cancelled.
		eng, noWS, err := g.open(context.WithoutCancel(ctx))
		g.mu.Lock()
		g.eng, g.noWS, g.err = eng, noWS, err
		g.mu.Unlock()
	})
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.eng, g.noWS, g.err
}

// opened returns the engine if it was opened, without opening it.
func (g *gitParts) opened() *snapshot.Engine {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.eng
}

var errNoEngine = errors.New("app: no snapshot engine")

// unavailable says why the engine, once asked for, could not be opened
// ("" when it was, or was not asked for yet).
func (g *gitParts) unavailable() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return g.err.Error()
	}
	return g.noWS
}

// lazySnapshots is the controller's view of the snapshot engine of a
// session whose git parts open on first use.
type lazySnapshots struct{ g *gitParts }

func (l lazySnapshots) engine(ctx context.Context) (*snapshot.Engine, error) {
	eng, noWS, err := l.g.get(ctx)
	if err != nil {
		return nil, &snapshot.CaptureError{Reason: err.Error(), Err: err}
	}
	if eng == nil {
		return nil, &snapshot.CaptureError{Reason: noWS, Err: errNoEngine}
	}
	return eng, nil
}

func (l lazySnapshots) Capture(ctx context.Context, name string) (snapshot.Snapshot, error) {
	eng, err := l.engine(ctx)
	if err != nil {
		return snapshot.Snapshot{}, err
	}
	return eng.Capture(ctx, name)
}

func (l lazySnapshots) Diff(ctx context.Context, from, to string) ([]snapshot.Change, error) {
	eng, err := l.engine(ctx)
	if err != nil {
		return nil, err
	}
	return eng.Diff(ctx, from, to)
}

func (l lazySnapshots) Restore(ctx context.Context, from snapshot.Snapshot, target string) (snapshot.RestoreResult, error) {
	eng, err := l.engine(ctx)
	if err != nil {
		return snapshot.RestoreResult{}, err
	}
	return eng.Restore(ctx, from, target)
}

func (l lazySnapshots) CheckRestore(ctx context.Context, from, target string) (snapshot.RestoreCheck, error) {
	eng, err := l.engine(ctx)
	if err != nil {
		return snapshot.RestoreCheck{}, err
	}
	return eng.CheckRestore(ctx, from, target)
}

func (l lazySnapshots) Excluded(ctx context.Context) ([]string, error) {
	eng, err := l.engine(ctx)
	if err != nil {
		return nil, err
	}
	return eng.Excluded(ctx)
}

func (l lazySnapshots) LeftAlone(ch []snapshot.Change) ([]snapshot.Change, []string) {
	eng, err := l.engine(context.Background())
	if err != nil {
		return ch, nil
	}
	return eng.LeftAlone(ch)
}

func (l lazySnapshots) PatchPath(ctx context.Context, from, to, path string) (snapshot.PathPatch, error) {
	eng, err := l.engine(ctx)
	if err != nil {
		return snapshot.PathPatch{}, err
	}
	return eng.PatchPath(ctx, from, to, path)
}

func (l lazySnapshots) LinkRepairs() []string {
	if eng := l.g.opened(); eng != nil {
		return eng.LinkRepairs()
	}
	return nil
}

// DeleteRef and SessionRefs are the engine's ref housekeeping (the
// controller's refManager).
func (l lazySnapshots) DeleteRef(ctx context.Context, name string) error {
	eng, err := l.engine(ctx)
	if err != nil {
		return err
	}
	return eng.DeleteRef(ctx, name)
}

func (l lazySnapshots) SessionRefs(ctx context.Context) ([]string, error) {
	eng, err := l.engine(ctx)
	if err != nil {
		return nil, err
	}
	return eng.SessionRefs(ctx)
}

// Revert is the engine's in-place revert (the controller's Reverter).
func (l lazySnapshots) Revert(ctx context.Context, current string, steps []snapshot.Step, o snapshot.RevertOptions) (string, []snapshot.PathOutcome, error) {
	eng, err := l.engine(ctx)
	if err != nil {
		return "", nil, err
	}
	return eng.Revert(ctx, current, steps, o)
}
