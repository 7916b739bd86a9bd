package snapshot

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// openWatched opens an engine with a watcher (no background walk) and
// waits for it to be armed; its first capture walks.
func openWatched(t testing.TB, wt string, o WatchOptions) *Engine {
	t.Helper()
	e := openEngine(t, wt)
	if o.Resync == 0 {
		o.Resync = -1
	}
	e.Watch(o)
	t.Cleanup(func() { _ = e.Close() })
	if err := e.WaitWatching(context.Background()); err != nil {
		t.Fatalf("WaitWatching: %v", err)
	}
	return e
}

// checkWatched requires e's capture to equal the walk of twin, an engine
// without a watcher that captured at the same moments (TestCaptureFollowsRulesNotHistory
// shows that equals a fresh engine's), and its permission record to equal a
// fresh walk's.
func checkWatched(t *testing.T, e, twin *Engine, wt string, what func() string) {
	t.Helper()
	got := capture(t, e, "").Tree
	want := capture(t, twin, "").Tree
	if got != want {
		diff := gittest.Git(t, wt, "diff-tree", "-r", "--no-renames", got, want)
		t.Fatalf("the watched capture is %s, a fresh engine's %s (last walk: %q):\n%s\n%s", got, want, e.lastWalkReason, diff, what())
	}
	ctx := context.Background()
	e.Wait()
	gotModes, err := e.capturedModes(ctx, e.lastWalk.modes)
	if err != nil {
		t.Fatal(err)
	}
	wantModes, err := e.capturedModes(ctx, walkTree(wt, nil, false).modes)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(gotModes) != fmt.Sprint(wantModes) {
		t.Fatalf("permissions: watched %v, walked %v\n%s", gotModes, wantModes, what())
	}
}

// TestWatchedDifferential runs random edit sequences (the differential
// test's operations: renames of whole directories, file<->directory
// swaps, symlinks, exec bits, ignored and blocklisted paths) plus
// restrictive permissions, .gitignore edits, bursts of files (one of
// 10,000) created, renamed and removed, and forced queue overflows, and
// requires every capture of a long-lived watched engine to equal a fresh
// engine's walk.
func TestWatchedDifferential(t *testing.T) {
	t.Parallel()
	// One seed makes a 10,000-file burst, the others bursts of 1,000: a
	// burst is most of the test's cost (about 15 s of CPU under -race at
	// 10,000 files), and the watcher's handling of a big one (the queue
	// overflowing, the budget) is the same in every seed.
	for seed, bursts := range map[uint64]int{11: 10000, 12: 1000, 13: 1000} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, seed*0x9e3779b97f4a7c15))
			wt := gittest.NewRepo(t)
			sh(t, wt, `mkdir -p src/lib docs ign; printf 'a\n' > src/a.go; printf 'bb\n' > src/lib/b.go
printf 'readme\n' > docs/r.md; printf 'ign/\n*.log\n' > .gitignore; printf 'x\n' > top.txt
git add -A; git commit -qm base`)
			e := openWatched(t, wt, WatchOptions{})
			twin := openEngine(t, wt)
			f := &fuzzTree{t: t, rng: rng, root: wt}
			var log []string
			what := func() string { return "ops:\n" + strings.Join(log, "\n") + "\nworktree:\n" + f.listing() }
			checkWatched(t, e, twin, wt, what)
			for i := 0; i < 120; i++ {
				switch i {
				case 40: // a burst of files, then the same moved, then gone
					burst(t, wt, "burst", bursts)
					log = append(log, fmt.Sprintf("burst of %d files in burst/", bursts))
				case 41:
					f.clear("src/moved")
					f.must(os.Rename(f.abs("burst"), f.abs("src/moved")))
					log = append(log, "mv burst src/moved")
				case 42:
					f.must(os.RemoveAll(f.abs("src/moved")))
					log = append(log, "rm -r src/moved")
				default:
					for range 1 + rng.IntN(3) {
						log = append(log, watchStep(f, e))
					}
				}
				checkWatched(t, e, twin, wt, what)
			}
			if e.watchedCaptures < e.walkedCaptures {
				t.Fatalf("%d captures were watched, %d walked (last: %q): the test no longer exercises the watcher", e.watchedCaptures, e.walkedCaptures, e.lastWalkReason)
			}
			t.Logf("%d watched captures, %d walks, %d tree edits", e.watchedCaptures, e.walkedCaptures, e.treeEdits)
		})
	}
}

// watchStep is one operation: mostly the differential test's, sometimes
// one that only a watcher finds hard.
func watchStep(f *fuzzTree, e *Engine) string {
	switch f.rng.IntN(40) {
	case 2:
		// Not through e.ForceOverflow: this may run while a capture
		// holds the engine (TestArmWithWalkDifferential).
		e.watch.forceOverflow()
		f.clear("top.txt")
		f.must(os.WriteFile(f.abs("top.txt"), []byte(f.content()), 0o644))
		return "forced overflow, write top.txt"
	case 3:
		p := f.existing(false)
		if p == "" || isLink(f.abs(p)) {
			return "noop"
		}
		f.must(os.Chmod(f.abs(p), 0o600))
		return "chmod 600 " + p
	case 4:
		d := fuzzDirs[f.rng.IntN(4)]
		rule := []string{"*.txt\n", "sub/\n", "!e.log\n", ""}[f.rng.IntN(4)]
		f.clear(filepath.Join(d, ".gitignore"))
		f.must(os.WriteFile(f.abs(filepath.Join(d, ".gitignore")), []byte(rule), 0o644))
		return fmt.Sprintf("gitignore %s %q", d, rule)
	case 5:
		// A directory made and filled at once: its files may come before
		// its watch.
		p := f.path()
		f.clear(p)
		f.must(os.MkdirAll(f.abs(p+"/x/y"), 0o755))
		f.must(os.WriteFile(f.abs(p+"/x/y/z"), []byte(f.content()), 0o644))
		f.must(os.WriteFile(f.abs(p+"/x/w"), []byte(f.content()), 0o644))
		return "mkdir -p and fill " + p
	case 6:
		// A directory moved out of the worktree and another moved in.
		p := f.existing(true)
		if p == "" || strings.HasPrefix(p, ".git") {
			return "noop"
		}
		out := filepath.Join(filepath.Dir(f.root), "outside-"+fmt.Sprint(f.rng.Int()))
		f.must(os.Rename(f.abs(p), out))
		f.must(os.WriteFile(filepath.Join(out, "late"), []byte("written outside\n"), 0o644))
		back := f.path()
		f.clear(back)
		f.must(os.Rename(out, f.abs(back)))
		return fmt.Sprintf("mv %s out, write, mv in as %s", p, back)
	}
	return f.step()
}

// burst creates n files under dir, 100 per directory.
func burst(t testing.TB, root, dir string, n int) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(root, dir)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		d := filepath.Join(root, dir, fmt.Sprintf("d%03d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d", i)), []byte(fmt.Sprintf("%d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWatchedCaptureLooksAtChangedPathsOnly: with a watcher armed, a
// one-file edit is captured without a status (no walk), a quiet worktree
// without any git process, and what the watcher cannot vouch for walks.
func TestWatchedCaptureLooksAtChangedPathsOnly(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	sh(t, wt, `mkdir -p a/b; printf 'x\n' > a/b/x; printf 'y\n' > y; git add -A; git commit -qm base`)
	e := openWatched(t, wt, WatchOptions{})
	var cmds []string
	e.onPriv = func(args []string) { cmds = append(cmds, strings.Join(args, " ")) }
	capture(t, e, "") // the first capture walks
	if e.walkedCaptures != 1 {
		t.Fatalf("first capture: %d walks", e.walkedCaptures)
	}
	cmds = nil
	capture(t, e, "")
	if len(cmds) != 0 || e.watchedCaptures != 1 {
		t.Fatalf("a quiet worktree ran %q (%d watched; last walk: %q)", cmds, e.watchedCaptures, e.lastWalkReason)
	}
	gittest.WriteFile(t, wt, "a/b/x", "changed\n")
	cmds = nil
	if got, want := capture(t, e, "").Tree, oracle(t, wt); got != want {
		t.Fatalf("captured %s, want %s", got, want)
	}
	for _, c := range cmds {
		if strings.HasPrefix(c, "status") {
			t.Fatalf("a watched capture ran %q", cmds)
		}
	}
	// Verifications walk: writes through mmap raise no event.
	if err := e.Verify(context.Background(), oracle(t, wt)); err != nil {
		t.Fatal(err)
	}
	if e.lastWalkReason != "asked to walk" {
		t.Fatalf("Verify did not walk (last walk: %q)", e.lastWalkReason)
	}
	if _, err := e.Capture(WithWalk(context.Background()), ""); err != nil || e.lastWalkReason != "asked to walk" {
		t.Fatalf("WithWalk: %v, last walk %q", err, e.lastWalkReason)
	}
	// A rule from outside the worktree changed: walk.
	gittest.WriteFile(t, wt, "y.tmp", "t\n")
	exclude := filepath.Join(wt, ".git", "info", "exclude")
	if err := os.WriteFile(exclude, []byte("*.tmp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	walks := e.walkedCaptures
	if got, want := capture(t, e, "").Tree, oracle(t, wt); got != want || e.walkedCaptures != walks+1 {
		t.Fatalf("after an info/exclude edit: %s (want %s), walks %d -> %d", got, want, walks, e.walkedCaptures)
	}
	// Overflow: walk, then watch again.
	e.ForceOverflow()
	gittest.WriteFile(t, wt, "y", "y2\n")
	walks = e.walkedCaptures
	if got, want := capture(t, e, "").Tree, oracle(t, wt); got != want || e.walkedCaptures != walks+1 || !strings.Contains(e.lastWalkReason, "overflow") {
		t.Fatalf("after an overflow: %s (want %s), walks %d -> %d (%q)", got, want, walks, e.walkedCaptures, e.lastWalkReason)
	}
	gittest.WriteFile(t, wt, "y", "y3\n")
	watched := e.watchedCaptures
	if got, want := capture(t, e, "").Tree, oracle(t, wt); got != want || e.watchedCaptures != watched+1 {
		t.Fatalf("after the overflow's walk: %s (want %s), watched %d -> %d (%q)", got, want, watched, e.watchedCaptures, e.lastWalkReason)
	}
}

// TestWatchBudget: a worktree with more directories than the watch budget
// gets no watcher, and its captures walk.
func TestWatchBudget(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	sh(t, wt, `mkdir -p a/b/c d/e f; printf 'x\n' > a/b/c/x; git add -A; git commit -qm base`)
	e := openEngine(t, wt)
	e.Watch(WatchOptions{Resync: -1, Budget: 3})
	t.Cleanup(func() { _ = e.Close() })
	if err := e.WaitWatching(context.Background()); err == nil || !strings.Contains(err.Error(), "inotify watches") {
		t.Fatalf("WaitWatching: %v, want the budget named", err)
	}
	capture(t, e, "")
	gittest.WriteFile(t, wt, "a/b/c/x", "y\n")
	if got, want := capture(t, e, "").Tree, oracle(t, wt); got != want || e.watchedCaptures != 0 {
		t.Fatalf("captured %s (want %s), %d watched", got, want, e.watchedCaptures)
	}
	if s := e.WatchState(); s.Watching || !strings.Contains(s.Stopped, "inotify watches") {
		t.Fatalf("state %+v", s)
	}
}

// TestResyncGivesWay: the background walk is cancelled by a capture.
func TestResyncWalks(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	e := openWatched(t, wt, WatchOptions{})
	capture(t, e, "")
	if err := e.Resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e.lastWalkReason != "asked to walk" || e.walkedCaptures != 2 {
		t.Fatalf("Resync: %d walks, last %q", e.walkedCaptures, e.lastWalkReason)
	}
	_ = fs.ModePerm
}
