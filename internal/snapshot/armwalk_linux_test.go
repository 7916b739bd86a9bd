package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/git/gittest"
	"golang.org/x/sys/unix"
)

// openArmed opens an engine on the state dir as a print-mode process
// does: its watcher is armed by its first capture's walk.
func openArmed(t testing.TB, wt, state string, budget int) *Engine {
	t.Helper()
	e, err := Open(context.Background(), Options{Worktree: wt, SessionID: "s_test", StateDir: state})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	e.Watch(WatchOptions{Resync: -1, Budget: budget, ArmWithWalk: true})
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// captureServing runs e's capture in another goroutine while this one
// runs whatever the walk's hooks ask for (the fuzz operations call
// t.Fatal, which only the test's goroutine may).
func captureServing(t *testing.T, e *Engine, ops <-chan func()) Snapshot {
	t.Helper()
	type result struct {
		s   Snapshot
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := e.Capture(context.Background(), "")
		done <- result{s, err}
	}()
	for {
		select {
		case op := <-ops:
			op()
		case r := <-done:
			if r.err != nil {
				t.Fatalf("Capture: %v", r.err)
			}
			return r.s
		}
	}
}

// ageChanges lets the last edits fall out of the arming walk's slack, as
// the time between two print-mode turns does (whether they do changes
// only how much the next end capture looks at, or whether it walks).
func ageChanges() { time.Sleep(armSlack + 20*time.Millisecond) }

// TestArmWithWalkDifferential: print-mode processes one after the other
// on one state dir. Each one's first capture walks and arms the watcher,
// and while that walk runs (after the capture's status is done, in half
// of them: the changes then come after status looked and before their
// directory's watch), random operations change the worktree; more follow
// (the turn's command), then the process's second capture, which must
// equal a fresh engine's walk and should be watched.
func TestArmWithWalkDifferential(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{21, 22, 23} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, seed*0x9e3779b97f4a7c15))
			wt := gittest.NewRepo(t)
			sh(t, wt, `mkdir -p src/lib/deep docs ign new/sub; printf 'a\n' > src/a.go; printf 'bb\n' > src/lib/b.go
printf 'd\n' > src/lib/deep/d.txt; printf 'readme\n' > docs/r.md; printf 'ign/\n*.log\n' > .gitignore; printf 'x\n' > top.txt
printf 'n\n' > new/sub/n; git add -A; git commit -qm base`)
			state := filepath.Join(t.TempDir(), "state")
			twin := openEngine(t, wt)
			f := &fuzzTree{t: t, rng: rng, root: wt}
			var log []string
			what := func() string { return "ops:\n" + strings.Join(log, "\n") + "\nworktree:\n" + f.listing() }
			watched, midWalk := 0, 0
			const processes = 30
			for i := 0; i < processes; i++ {
				e := openArmed(t, wt, state, 0)
				ops := make(chan func())
				statusDone := make(chan struct{})
				// A capture that raced a file turning into a directory
				// looks again (captureOnce runs twice): its second status
				// finds the channel closed already.
				var statusOnce sync.Once
				e.onStatus = func() { statusOnce.Do(func() { close(statusDone) }) }
				afterStatus := i%2 == 0
				var entered atomic.Int32
				e.onWalkDir = func(rel string) {
					if rel == "" {
						if afterStatus {
							<-statusDone
						}
						return
					}
					// One directory in four (the walk's workers share no
					// random source: what the operation is, the test's
					// goroutine draws).
					if entered.Add(1)%4 != 0 {
						return
					}
					ran := make(chan struct{})
					ops <- func() {
						defer close(ran)
						for range 1 + rng.IntN(2) {
							log = append(log, fmt.Sprintf("[process %d, walking %s] %s", i, rel, watchStep(f, e)))
							midWalk++
						}
					}
					<-ran
				}
				captureServing(t, e, ops)
				e.onWalkDir, e.onStatus = nil, nil
				// The turn's own command.
				for range 1 + rng.IntN(3) {
					log = append(log, fmt.Sprintf("[process %d, turn] %s", i, watchStep(f, e)))
				}
				before := e.watchedCaptures
				checkWatched(t, e, twin, wt, what)
				if e.watchedCaptures > before {
					watched++
				} else {
					log = append(log, fmt.Sprintf("[process %d] the end capture walked: %s", i, e.lastWalkReason))
				}
				if err := e.Close(); err != nil {
					t.Fatal(err)
				}
				ageChanges()
			}
			if watched < processes/2 || midWalk == 0 {
				t.Fatalf("%d of %d end captures were watched, %d operations during the arming walks: the test no longer exercises the arming\n%s", watched, processes, midWalk, strings.Join(log, "\n"))
			}
			t.Logf("%d of %d end captures watched, %d operations during arming walks", watched, processes, midWalk)
		})
	}
}

// TestArmWithWalkSeesWhatStatusMissed: the changes made after the first
// capture's status looked and before the walk watched their directory (a
// file edited in place, one deleted, one chmodded, a directory renamed
// in) are the next capture's, which is watched.
func TestArmWithWalkSeesWhatStatusMissed(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	sh(t, wt, `mkdir -p a/b c/d/e; printf 'x\n' > a/b/x; printf 'y\n' > a/y; printf 'z\n' > a/z; printf 'e\n' > c/d/e/f
printf 'top\n' > top; git add -A; git commit -qm base`)
	state := filepath.Join(t.TempDir(), "state")
	// An earlier process made the private index and the rules.
	e := openArmed(t, wt, state, 0)
	capture(t, e, "")
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	ageChanges()
	e = openArmed(t, wt, state, 0)
	statusDone := make(chan struct{})
	e.onStatus = func() { close(statusDone) }
	e.onWalkDir = func(rel string) {
		switch rel {
		case "":
			<-statusDone
		case "a":
			sh(t, wt, `printf 'x, edited\n' > a/b/x; rm a/y; chmod 600 a/z; mv c/d a/d`)
		}
	}
	first := capture(t, e, "").Tree
	e.onWalkDir, e.onStatus = nil, nil
	if s := e.WatchState(); !s.Watching {
		t.Fatalf("the first capture's walk did not arm the watcher: %+v", s)
	}
	base := gittest.Git(t, wt, "rev-parse", "HEAD^{tree}")
	if first != base {
		t.Fatalf("the first capture is %s, not the tree status saw (%s)", first, base)
	}
	twin := openEngine(t, wt)
	checkWatched(t, e, twin, wt, func() string { return "" })
	if e.watchedCaptures != 1 {
		t.Fatalf("the second capture walked: %q", e.lastWalkReason)
	}
}

// TestArmWithWalkFallsBack: what the arming walk cannot vouch for makes
// the next capture walk: the watch budget (for good), an unreadable
// directory, a .gitignore edited during the walk, the top directory
// changed as the capture began.
func TestArmWithWalkFallsBack(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (wt, state string) {
		wt = gittest.NewRepo(t)
		sh(t, wt, `mkdir -p a/b c; printf 'x\n' > a/b/x; printf 'c\n' > c/c; git add -A; git commit -qm base`)
		state = filepath.Join(t.TempDir(), "state")
		e := openArmed(t, wt, state, 0)
		capture(t, e, "")
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		ageChanges()
		return wt, state
	}
	for _, c := range []struct {
		name   string
		budget int
		during func(t *testing.T, wt, rel string)
		reason string
	}{
		{name: "budget", budget: 3, reason: "inotify watches"},
		{name: "gitignore", during: func(t *testing.T, wt, rel string) {
			if rel == "c" {
				gittest.WriteFile(t, wt, "a/.gitignore", "x\n")
			}
		}, reason: "ignore file"},
		{name: "top", during: func(t *testing.T, wt, rel string) {
			if rel == "" {
				gittest.WriteFile(t, wt, "new", "n\n")
			}
		}, reason: "top directory"},
		{name: "unreadable", during: func(t *testing.T, wt, rel string) {
			if rel == "" && os.Geteuid() != 0 {
				if err := os.Chmod(filepath.Join(wt, "c"), 0); err != nil {
					t.Error(err)
				}
			}
		}, reason: `cannot watch "c": permission denied`}, // inotify needs read access
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if c.name == "unreadable" && os.Geteuid() == 0 {
				t.Skip("root reads every directory")
			}
			wt, state := setup(t)
			e := openArmed(t, wt, state, c.budget)
			if c.during != nil {
				e.onWalkDir = func(rel string) { c.during(t, wt, rel) }
			}
			capture(t, e, "")
			e.onWalkDir = nil
			if c.name == "unreadable" {
				if err := os.Chmod(filepath.Join(wt, "c"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			gittest.WriteFile(t, wt, "a/b/x", "changed\n")
			twin := openEngine(t, wt)
			walks := e.walkedCaptures
			checkWatched(t, e, twin, wt, func() string { return "" })
			if e.walkedCaptures != walks+1 || !strings.Contains(e.lastWalkReason, c.reason) {
				t.Fatalf("second capture: %d walks (was %d), last walk %q; want a walk because of %q", e.walkedCaptures, walks, e.lastWalkReason, c.reason)
			}
			if c.name == "budget" {
				if s := e.WatchState(); !strings.Contains(s.Stopped, "inotify watches") {
					t.Fatalf("state %+v: the budget should stop the watcher for good", s)
				}
			}
		})
	}
}

// TestArmWithWalkRearmsAfterOverflow: after a queue overflow the capture
// walks, and its walk arms the watcher again (no walk of its own), so
// the capture after it is watched again.
func TestArmWithWalkRearmsAfterOverflow(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	sh(t, wt, `mkdir -p a/b; printf 'x\n' > a/b/x; git add -A; git commit -qm base`)
	ageChanges()
	e := openArmed(t, wt, filepath.Join(t.TempDir(), "state"), 0)
	twin := openEngine(t, wt)
	capture(t, e, "")
	capture(t, twin, "")
	if s := e.WatchState(); !s.Watching {
		t.Fatalf("the first capture's walk did not arm the watcher: %+v (%q)", s, e.lastWalkReason)
	}
	e.ForceOverflow()
	gittest.WriteFile(t, wt, "a/b/x", "after the overflow\n")
	checkWatched(t, e, twin, wt, func() string { return "" })
	if e.walkedCaptures != 2 || !strings.Contains(e.lastWalkReason, "overflow") {
		t.Fatalf("after an overflow: %d walks, last %q", e.walkedCaptures, e.lastWalkReason)
	}
	if s := e.WatchState(); !s.Watching {
		t.Fatalf("the overflow's walk did not arm the watcher again: %+v", s)
	}
	ageChanges()
	sh(t, wt, `mkdir a/c && printf 'c\n' > a/c/c && mv a/b a/d`)
	checkWatched(t, e, twin, wt, func() string { return "" })
	if e.watchedCaptures != 1 {
		t.Fatalf("the capture after the overflow's walk walked: %q", e.lastWalkReason)
	}
}

// With WatchOptions.Once (print mode) the watcher is let go as soon as it
// has served a watched capture: its watches are removed then (the kernel
// frees them meanwhile), its instance stays open until Close; a later
// capture walks and is still exact.
func TestWatchOnceLetsGoAfterItsCapture(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	sh(t, wt, `mkdir -p src; printf 'a\n' > src/a.go; git add -A; git commit -qm base`)
	e, err := Open(context.Background(), Options{Worktree: wt, SessionID: "s_test", StateDir: filepath.Join(t.TempDir(), "state")})
	if err != nil {
		t.Fatal(err)
	}
	e.Watch(WatchOptions{Resync: -1, ArmWithWalk: true, Once: true})
	ageChanges()
	capture(t, e, "")
	ageChanges()
	if st := e.WatchState(); !st.Watching || st.Walked != 1 {
		t.Fatalf("after the first capture: %+v", st)
	}
	sh(t, wt, `printf 'b\n' >> src/a.go`)
	capture(t, e, "")
	st := e.WatchState()
	if st.Watched != 1 || st.Watching || st.Stopped == "" {
		t.Fatalf("after the watched capture: %+v", st)
	}
	let := e.watchLetGo
	if let == nil {
		t.Fatal("no watcher let go")
	}
	if n := inotifyWatches(t, let.fd); n != 0 {
		t.Fatalf("the watcher let go still holds %d watches", n)
	}
	sh(t, wt, `printf 'c\n' > src/c.go`)
	got := capture(t, e, "").Tree
	if st := e.WatchState(); st.Walked != 2 || st.Watched != 1 {
		t.Fatalf("the capture after the watcher went: %+v", st)
	}
	if want := oracle(t, wt); got != want {
		t.Fatalf("captured %s, a fresh engine %s", got, want)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if e.watchLetGo != nil || !let.closed {
		t.Fatal("Close did not close the watcher it let go")
	}
	select {
	case <-let.done:
	default:
		t.Fatal("the let-go watcher's reader still runs after Close")
	}
}

// inotifyWatches counts the watches the inotify instance fd holds, as
// /proc lists them.
func inotifyWatches(t *testing.T, fd int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", fd))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "inotify wd:")
}

// A let-go watcher's instance is handed to a holder process before it is
// closed (holdInstance): the holder has its input pipe, /dev/null and the
// instance, nothing this process inherited, and the instance outlives
// this process's close, so that close is not the one that waits for the
// kernel; the holder ends when told. The watcher's own descriptor keeps
// its non-blocking mode.
func TestHolderKeepsTheInstance(t *testing.T) {
	if holderPath() == "" {
		t.Skip("no cat to hold the instance")
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	wd, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE)
	if err != nil {
		t.Fatal(err)
	}
	// A descriptor inherited without close-on-exec (a caller's pipe).
	f, err := os.Create(filepath.Join(t.TempDir(), "inherited"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inherited, err := unix.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(inherited)
	pid, done := holdInstance(fd)
	if pid == 0 {
		t.Fatal("no holder started")
	}
	defer done()
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK == 0 {
		t.Fatalf("the instance lost its non-blocking mode (flags %#o, %v)", fl, err)
	}
	if err := unix.Close(fd); err != nil {
		t.Fatal(err)
	}
	if got := holderFDs(t, pid); len(got) != 4 || !strings.HasPrefix(got[0], "pipe:") || got[1] != os.DevNull || got[2] != os.DevNull || got[3] != "anon_inode:inotify" {
		t.Fatalf("the holder's descriptors: %q (want its input pipe, /dev/null twice, the instance; %d not inherited)", got, inherited)
	}
	// Its descriptor 3 is the same instance, alive after this process
	// closed its own: it still lists the watch on dir.
	requireHeld(t, pid, dir, wd)
	done()
	waitGone(t, pid)
}

// A let-go watcher's close hands its instance over first: after the
// watcher's own descriptor is closed, the holder still has the instance
// (with the watch left on it here), and it ends once the close returns.
func TestCloseHandedOff(t *testing.T) {
	if holderPath() == "" {
		t.Skip("no cat to hold the instance")
	}
	dir := t.TempDir()
	w, err := openWatcher(dir, 100, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	wd, err := unix.InotifyAddWatch(w.fd, dir, unix.IN_CREATE)
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	onHeld = func(pid int) {
		held = pid
		if !w.closed {
			t.Error("the holder was told before the watcher's own close")
		}
		// Not told to end yet: it stays, whatever time passes.
		time.Sleep(100 * time.Millisecond)
		requireHeld(t, pid, dir, wd)
	}
	defer func() { onHeld = nil }()
	w.closeHandedOff()
	if held == 0 {
		t.Fatal("no holder held the instance")
	}
	select {
	case <-w.done:
	default:
		t.Fatal("the watcher's reader still runs after the close")
	}
	waitGone(t, held)
	w.closeHandedOff() // closed already: nothing handed over
}

// holderFDs lists the descriptors of process pid, 0 up, by what they
// point at.
func holderFDs(t *testing.T, pid int) []string {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(ents))
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n >= len(ents) {
			t.Fatalf("the holder has descriptor %s (of %d)", e.Name(), len(ents))
		}
		if got[n], err = os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, n)); err != nil {
			t.Fatal(err)
		}
	}
	return got
}

// requireHeld requires process pid's descriptor 3 to be the inotify
// instance holding watch wd on dir.
func requireHeld(t *testing.T, pid int, dir string, wd int) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	info, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/3", pid))
	if err != nil {
		t.Fatalf("the holder has no descriptor 3: %v", err)
	}
	if want := fmt.Sprintf("inotify wd:%x ino:%x ", wd, st.Ino); !strings.Contains(string(info), want) {
		t.Fatalf("the holder's descriptor 3 is not the instance (want %q):\n%s", want, info)
	}
}

// waitGone waits for process pid to end and be reaped.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the holder %d did not end", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Without a holder to start the let-go watcher closes as any other.
func TestCloseHandedOffWithoutHolder(t *testing.T) {
	old := holderPaths
	holderPaths = []string{filepath.Join(t.TempDir(), "cat")}
	defer func() { holderPaths = old }()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	if pid, done := holdInstance(fd); pid != 0 {
		done()
		t.Fatalf("a holder started from %v", holderPaths)
	}
	if err := unix.Close(fd); err != nil {
		t.Fatal(err)
	}
	w, err := openWatcher(t.TempDir(), 100, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.closeHandedOff()
	select {
	case <-w.done:
	default:
		t.Fatal("the watcher's reader still runs after the close")
	}
}

// BenchmarkInstanceClose times closing an inotify instance whose 200
// watches were just removed, as the let-go watcher of a one-turn process
// is: by itself, and handed to a holder first (the holder's start is
// timed too).
func BenchmarkInstanceClose(b *testing.B) {
	root := b.TempDir()
	var dirs []string
	for i := range 200 {
		d := filepath.Join(root, fmt.Sprint(i))
		if err := os.Mkdir(d, 0o755); err != nil {
			b.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	for _, mode := range []string{"close", "handed-off"} {
		b.Run(mode, func(b *testing.B) {
			if mode == "handed-off" && holderPath() == "" {
				b.Skip("no cat to hold the instance")
			}
			for b.Loop() {
				b.StopTimer()
				fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
				if err != nil {
					b.Fatal(err)
				}
				var wds []int
				for _, d := range dirs {
					wd, err := unix.InotifyAddWatch(fd, d, unix.IN_CREATE)
					if err != nil {
						b.Fatal(err)
					}
					wds = append(wds, wd)
				}
				for _, wd := range wds {
					if _, err := unix.InotifyRmWatch(fd, uint32(wd)); err != nil {
						b.Fatal(err)
					}
				}
				time.Sleep(2 * time.Millisecond) // the end of a turn
				b.StartTimer()
				done := func() {}
				if mode == "handed-off" {
					_, done = holdInstance(fd)
				}
				if err := unix.Close(fd); err != nil {
					b.Fatal(err)
				}
				done()
			}
		})
	}
}
