package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/git"
)

// # Watched captures
//
// A host that lives across turns (the TUI, the ACP agent) keeps an inotify
// watcher over the worktree (Engine.Watch, Linux only) that records the
// paths changed since the last capture. A capture then starts with a flush
// barrier (a marker created in a watched private directory of the state
// dir comes back through the same event queue after every earlier event),
// takes the change set, and looks at those paths only: no status, no walk.
// The changed paths that exist are checked against the ignore rules (one
// check-ignore), the ones in directories removed or moved away are listed
// from the previous tree, and the tree is the previous one edited at those
// paths (fasttree.go) or, for larger or special change sets, the private
// index updated at those paths and written (update-index, write-tree).
// The permissions record and the nested repositories come from the last
// walk, updated at the changed paths.
//
// A process that lives for one turn (print mode) arms its watcher with
// its first capture's own walk instead (WatchOptions.ArmWithWalk; "Armed
// by the walk" in watch_linux.go), so the capture at the end of its turn
// is watched. A claimed spare's first capture walks nothing (it is derived
// from the claim's proof); its watcher is armed before that proof instead
// (NewPrewatch, Options.Prewatch; "Armed before a proof" in
// watch_linux.go), so the capture at the end of its first turn is watched
// too.
//
// The capture walks, as without a watcher, whenever the watcher cannot
// vouch: before it is armed, after a queue overflow (its watches are then
// rebuilt first), when a directory could not be watched (the watch budget,
// a quarter of the user's free max_user_watches, or the kernel's limit),
// when a .gitignore anywhere or a rule from outside the worktree
// (info/exclude, core.excludesFile) changed, when a nested repository
// appeared or went away, on a network or FUSE file system, when more than
// watchMaxDirty paths changed, and after a failed capture or a background
// index update that did not finish. A directory that appears is watched
// and then read, so what was created in it before its watch was in place
// is found. Writes through a shared mmap raise no event: the recovery
// capture of a restore preview and every verification walk (WithWalk,
// Verify, a restore's check), and a periodic walk in the background, off
// any turn's path, catches what else escaped (hard links written from
// outside the worktree).

// errNotWatched means the watched capture declined its change set; the
// capture walks.
var errNotWatched = fault.Plain("snapshot: change set not eligible for a watched capture")

// watchMaxPaths bounds the paths a watched capture updates through the
// index; beyond it, the walk's status costs no more.
const watchMaxPaths = 20000

type walkKey struct{}

// WithWalk marks a capture that must look at the whole worktree even when
// a watcher could tell what changed: inotify never reports writes through
// mmap. Restore previews take their recovery capture this way.
func WithWalk(ctx context.Context) context.Context {
	return context.WithValue(ctx, walkKey{}, true)
}

func mustWalk(ctx context.Context) bool {
	v, _ := ctx.Value(walkKey{}).(bool)
	return v
}

// WatchOptions configure Engine.Watch.
type WatchOptions struct {
	// Resync is the period of the background safety-net walk (0: five
	// minutes; negative: none). It runs only when no capture ran for
	// half the period, and gives way to any capture.
	Resync time.Duration
	// Budget caps the watches (0: a quarter of the user's free
	// max_user_watches; negative: none, every capture walks).
	Budget int
	// ArmWithWalk leaves the watches to the next capture's walk instead
	// of a walk of their own in the background (a process that lives for
	// one turn: print mode): that capture walks as it would anyway, and
	// the next one is watched (watch_linux.go, "Armed by the walk").
	ArmWithWalk bool
	// Once lets the watcher go as soon as it has given a capture its
	// change set (a process that lives for one turn: its end capture is
	// that one): the kernel's teardown of an inotify instance waits for a
	// grace period (10-15 ms here, tens under load, whatever the number
	// of watches), which then overlaps that capture and the turn's last
	// steps instead of following them, and Close hands the instance to a
	// short-lived process whose exit waits for what is left of it
	// (holdInstance). A later capture walks.
	Once bool
}

// DefaultResync is the period of the background safety-net walk.
const DefaultResync = 5 * time.Minute

// Watch starts a watcher over the worktree, so later captures look at the
// changed paths only. It arms in the background (or with the next walk,
// WatchOptions.ArmWithWalk): captures walk until it is. Where there can be no watcher (another system, a network file
// system, no watches left), captures keep walking, which is always
// correct, and WatchState says why.
func (e *Engine) Watch(o WatchOptions) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.watch != nil {
		return
	}
	var w *watcher
	var err error
	if pre := e.prewatch; pre != nil {
		// Armed before the proof the first capture is derived from:
		// that capture takes nothing from it (capture).
		e.prewatch = nil
		if w = pre.take(); w != nil && pre.root == e.root && o.Budget >= 0 {
			if err := w.adopt(filepath.Join(e.stateDir, "watch"), o.ArmWithWalk); err != nil {
				w.close()
				w = nil
			} else {
				e.prewatched = true
			}
		} else if w != nil {
			w.close()
			w = nil
		}
	}
	if w == nil {
		w, err = startWatcher(e.root, filepath.Join(e.stateDir, "watch"), o.Budget, o.ArmWithWalk, e.countWatches, e.provisionalWatches)
	}
	if err != nil {
		e.noWatch = fmt.Sprintf("no file watcher for %s: %v", e.root, err)
		return
	}
	e.watch, e.watchOnce = w, o.Once
	period := o.Resync
	if period == 0 {
		period = DefaultResync
	}
	if period > 0 {
		e.resyncStop, e.resyncDone = make(chan struct{}), make(chan struct{})
		go e.resyncLoop(w, period, e.resyncStop, e.resyncDone)
	}
}

// Prewatch is a file watcher armed over a worktree before something
// proves the worktree clean: a claimed spare's status, which must begin
// after NewPrewatch returns ("Armed before a proof" in watch_linux.go).
// The engine opened with it (Options.Prewatch) takes it over when its
// Watch is called; until then, and when none does, Close releases it.
type Prewatch struct {
	mu   sync.Mutex
	root string
	w    *watcher
}

// NewPrewatch arms a watcher over the worktree at root now. budget caps
// its watches as WatchOptions.Budget does (0: a quarter of the user's
// free max_user_watches). The error says why there can be none (another
// system, a network file system, the budget): captures then walk.
func NewPrewatch(root string, budget int) (*Prewatch, error) {
	if budget < 0 {
		return nil, errors.New("file watching is off")
	}
	r, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	w, err := newPrewatch(r, budget)
	if err != nil {
		return nil, err
	}
	return &Prewatch{root: r, w: w}, nil
}

// NewPrewatchByWalk is NewPrewatch armed by a walk of the tree, which
// need not come before the proof: it watches the top directory, calls
// began (the proof may begin now, and runs beside the rest), then walks,
// watching each directory before reading it and recording as changed
// every file changed since began (less the inode clock's slack), as a
// capture's arming walk does. The walk is returned for the first capture
// (Options.KnownWalk), Watched when the watcher was armed; the Prewatch is
// nil when there can be none (the walk is then a plain one). began is
// called in every case, once.
func NewPrewatchByWalk(root string, budget int, began func()) (*Prewatch, Walk) {
	at := time.Now()
	r, err := filepath.EvalSymlinks(root)
	if err != nil || budget < 0 {
		began()
		return nil, WalkTree(root)
	}
	w, res := newPrewatchByWalk(r, budget, began)
	walk := Walk{At: at, Nested: res.nested, Modes: res.modes, Watched: w != nil}
	if w == nil {
		return nil, walk
	}
	return &Prewatch{root: r, w: w}, walk
}

// Close releases the watcher unless an engine took it. A nil Prewatch
// does nothing.
func (p *Prewatch) Close() {
	if p == nil {
		return
	}
	if w := p.take(); w != nil {
		w.close()
	}
}

// take hands the watcher over, once.
func (p *Prewatch) take() *watcher {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.w
	p.w = nil
	return w
}

// letWatchGo lets the watcher of a WatchOptions.Once engine go, once it
// has given a capture its change set: its watches are removed now, so
// the kernel frees them beside the capture and what follows it, and Close
// closes the instance, handed to a holder process first. The caller holds
// e.mu.
func (e *Engine) letWatchGo() {
	w := e.watch
	e.watch = nil
	e.noWatch = "the watcher served its one watched capture"
	w.release()
	e.watchLetGo = w
}

// Close stops the watcher and the background walk. The engine keeps
// working, walking at every capture.
func (e *Engine) Close() error {
	e.resyncMu.Lock()
	stop, done := e.resyncStop, e.resyncDone
	e.resyncStop = nil
	if e.resyncCancel != nil {
		e.resyncCancel()
	}
	e.resyncMu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.waitIndexUpdate()
	if e.watch != nil {
		e.watch.close()
		e.watch = nil
	}
	if e.watchLetGo != nil {
		e.watchLetGo.closeHandedOff()
		e.watchLetGo = nil
	}
	e.prewatch.Close()
	e.prewatch = nil
	return nil
}

// WatchState describes the engine's watcher.
type WatchState struct {
	Watching bool   // a watcher is armed and vouching
	Stopped  string // why the watcher stopped for good ("" when it did not)
	Watches  int    // inotify watches held
	// Watched and Walked count the captures that looked at the changed
	// paths only and those that walked; LastWalk says why the last walk
	// was needed.
	Watched, Walked int
	LastWalk        string
}

// WatchState reports what the watcher does.
func (e *Engine) WatchState() WatchState {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := WatchState{Watched: e.watchedCaptures, Walked: e.walkedCaptures, LastWalk: e.lastWalkReason, Stopped: e.noWatch}
	if e.watch != nil {
		s.Watching, s.Stopped, s.Watches = e.watch.state()
	}
	return s
}

// WaitWatching waits until the watcher is armed (benchmarks, tests).
func (e *Engine) WaitWatching(ctx context.Context) error {
	e.mu.Lock()
	w := e.watch
	e.mu.Unlock()
	if w == nil {
		return errors.New("snapshot: no watcher")
	}
	return w.waitArmed(ctx)
}

// ForceOverflow makes the watcher treat its next events as a queue
// overflow (tests: the kernel's queue size is system-wide).
func (e *Engine) ForceOverflow() {
	e.mu.Lock()
	w := e.watch
	e.mu.Unlock()
	if w != nil {
		w.forceOverflow()
	}
}

// Resync walks the worktree now (the safety net), as a capture without a
// ref, and brings the private index and the watcher's baseline up to date.
func (e *Engine) Resync(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.guardLink(); err != nil {
		return err
	}
	_, err := e.capture(ctx, true)
	return err
}

// resyncLoop runs the background walk every period, when no capture ran
// for half of it, for as long as the watcher w may hold watches.
func (e *Engine) resyncLoop(w *watcher, period time.Duration, stop, done chan struct{}) {
	defer close(done)
	if _, why := w.limit(); why != "" {
		// A budget that allows no watch (counted in the background):
		// every capture walks, and so would this loop, for nothing.
		return
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if !e.mu.TryLock() {
			continue // a capture is running: it is the turn's
		}
		idle := time.Since(e.lastCapture) >= period/2
		e.mu.Unlock()
		if !idle {
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		e.resyncMu.Lock()
		if e.resyncStop == nil {
			e.resyncMu.Unlock()
			cancel()
			return
		}
		e.resyncCancel = cancel
		e.resyncMu.Unlock()
		if e.mu.TryLock() {
			if e.waiting.Load() == 0 && e.guardLink() == nil {
				// A failure (or a capture's cancel) leaves the
				// next capture walking; nobody waits for this one.
				_, _ = e.capture(ctx, true)
			}
			e.mu.Unlock()
		}
		e.resyncMu.Lock()
		e.resyncCancel = nil
		e.resyncMu.Unlock()
		cancel()
	}
}

// lockNow takes e.mu, cancelling a background walk in progress: a
// capture never waits for one.
func (e *Engine) lockNow() {
	e.waiting.Add(1)
	e.resyncMu.Lock()
	if e.resyncCancel != nil {
		e.resyncCancel()
	}
	e.resyncMu.Unlock()
	e.mu.Lock()
	e.waiting.Add(-1)
}

// ignoreStamp identifies the ignore rules from outside the worktree: the
// repository's info/exclude (as last read) and the excludes file.
func (e *Engine) ignoreStamp() string {
	f := e.exclFile
	if f == "" {
		if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
			f = filepath.Join(x, "git", "ignore")
		} else if h, err := os.UserHomeDir(); err == nil {
			f = filepath.Join(h, ".config", "git", "ignore")
		}
	}
	stamp := e.excludes + "\x00" + f
	if st, err := os.Stat(f); err == nil {
		stamp += fmt.Sprintf("\x00%d\x00%d", st.Size(), st.ModTime().UnixNano())
	}
	return stamp
}

// watchedTree captures the worktree from the previous tree (the private
// HEAD, which the private index holds) and the watcher's change set.
// errNotWatched declines: the capture walks.
func (e *Engine) watchedTree(ctx context.Context, ch changes) (string, error) {
	if e.rules == nil {
		// What the repository tracks among the ignored files is not
		// known until a walk reconciles the rules (rules.go).
		return "", errNotWatched
	}
	nested := e.lastWalk.nested
	keep := func(p string) bool {
		return checkPath(p) == nil && !excludedPath(p) && !underAny(p, nested)
	}
	modes := make(map[string]fs.FileMode, len(e.lastWalk.modes))
	for p, m := range e.lastWalk.modes {
		if len(ch.gone) == 0 || !underAny(p, ch.gone) {
			modes[p] = m
		}
	}
	cand := map[string]bool{}
	for _, p := range ch.paths {
		if keep(p) {
			cand[p] = true
		}
	}
	if len(ch.gone) > 0 {
		// What the removed directories held, as the previous tree has it.
		var dirs []string
		for _, d := range ch.gone {
			if keep(d) {
				dirs = append(dirs, d)
			}
		}
		if len(dirs) > 0 {
			out, err := e.runPriv(ctx, nil, append([]string{"--literal-pathspecs", "ls-tree", "-r", "-z", "--name-only", "--full-tree", e.head, "--"}, dirs...)...)
			if err != nil {
				return "", e.captureErr(ctx, "cannot list the previous tree", err)
			}
			for _, p := range git.SplitZ(out) {
				if keep(p) {
					cand[p] = true
				}
			}
		}
	}
	if len(cand) > watchMaxPaths {
		return "", errNotWatched
	}
	// Look at each path: what exists is checked against the ignore
	// rules; what is a directory now (or neither file nor symlink)
	// counts only where the previous tree has an entry.
	var present, other, absent []string
	for p := range cand {
		st, err := os.Lstat(filepath.Join(e.root, filepath.FromSlash(p)))
		switch {
		case err != nil:
			absent = append(absent, p)
			delete(modes, p)
		case st.Mode().IsRegular() && e.maxFileSize > 0 && st.Size() > e.maxFileSize:
			// Left out for its size: the walked capture says so.
			return "", errNotWatched
		case st.Mode().IsRegular() || st.Mode()&fs.ModeSymlink != 0:
			present = append(present, p)
			if st.Mode().IsRegular() && restrictive(st.Mode().Perm()) {
				modes[p] = st.Mode().Perm()
			} else {
				delete(modes, p)
			}
		default:
			other = append(other, p)
			delete(modes, p)
		}
	}
	sort.Strings(present)
	var uncertain, goneIgnored []string
	if len(present)+len(absent) > 0 {
		ign, err := e.ignoredOf(ctx, append(append([]string(nil), present...), absent...))
		if err != nil {
			return "", err
		}
		ignored := map[string]bool{}
		for _, p := range ign {
			ignored[p] = true
		}
		if len(ignored) > 0 {
			kept := present[:0]
			for _, p := range present {
				if ignored[p] {
					uncertain = append(uncertain, p)
				} else {
					kept = append(kept, p)
				}
			}
			present = kept
			for _, p := range absent {
				if _, known := e.rules.tracked[p]; ignored[p] && !known {
					goneIgnored = append(goneIgnored, p)
				}
			}
		}
	}
	uncertain = append(uncertain, other...)
	paths := append(present, absent...)
	var goneTracked []string
	ignoredKept := false
	if len(uncertain)+len(goneIgnored) > 0 {
		// An ignored file is captured when it is tracked, like status
		// reports it; a tracked file replaced by a directory is deleted.
		// A tracked ignored file deleted is recorded: written back, it
		// is tracked still (rules.go).
		out, err := e.runPriv(ctx, nil, append(append([]string{"--literal-pathspecs", "ls-tree", "-z", "--full-tree", e.head, "--"}, uncertain...), goneIgnored...)...)
		if err != nil {
			return "", e.captureErr(ctx, "cannot list the previous tree", err)
		}
		tracked := map[string]bool{}
		for _, rec := range git.SplitZ(out) {
			// "<mode> SP <type> SP <object> TAB <path>": a directory
			// there is not the path's entry (what it held is listed
			// through the watcher's removed directories).
			meta, p, ok := strings.Cut(rec, "\t")
			if ok && !strings.Contains(meta, " tree ") {
				tracked[p] = true
			}
		}
		for _, p := range uncertain {
			if _, known := e.rules.tracked[p]; tracked[p] || known {
				paths = append(paths, p)
				ignoredKept = true
			}
		}
		for _, p := range goneIgnored {
			if tracked[p] {
				goneTracked = append(goneTracked, p)
			}
		}
	}
	sort.Strings(paths)
	headEdit := e.headEdited
	if ignoredKept {
		// Written to the index at once: were the background update
		// lost with the process, status would not list an ignored file
		// again, and the next capture would leave it out.
		headEdit = func(ctx context.Context, paths []string) (string, error) { return e.indexTree(ctx, paths, nil) }
	}
	tree, err := headEdit(ctx, paths)
	if err != nil {
		return "", err
	}
	for _, p := range goneTracked {
		e.rules.tracked[p] = false
	}
	if len(e.rules.tracked) > 0 {
		e.recreatedTracked(e.rules)
		if err := e.saveRules(e.rules); err != nil {
			return "", e.fileErr("cannot write private state", err)
		}
	}
	e.lastWalk = walkResult{nested: nested, modes: modes, gitignores: e.lastWalk.gitignores}
	if e.head != tree {
		// The private HEAD could not be written: what the index and HEAD
		// hold is no longer known.
		e.indexStale = true
	}
	return tree, nil
}

// headEdited returns the private HEAD's tree with the listed paths as
// they are now: the tree edit for a few, the private index for the rest.
func (e *Engine) headEdited(ctx context.Context, paths []string) (string, error) {
	if len(paths) == 0 {
		return e.head, nil
	}
	tree, err := e.fastTree(ctx, e.head, paths, true)
	if err == nil {
		e.treeEdits++
		e.setHead(tree)
		if e.head == tree {
			skipped := map[string]bool{}
			for _, p := range e.fastSkipped {
				skipped[p] = true
			}
			var update []string
			for _, p := range paths {
				if !skipped[p] {
					update = append(update, p)
				}
			}
			if len(update) > 0 {
				e.startIndexUpdate(update, e.fastDeleted)
			}
		}
		return tree, nil
	}
	if !errors.Is(err, errNotFast) {
		return "", err
	}
	return e.indexTree(ctx, paths, nil)
}
