package snapshot

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// TestNoWatchBudgetMeansWalks: when the user's free inotify watches,
// counted in the background, leave yolop none (or cannot be counted), the
// watcher stops for good with the reason before adding a watch, every
// capture walks and stays exact, and no background walk runs (it would
// buy nothing).
func TestNoWatchBudgetMeansWalks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		count  func() (int, error)
		reason string
	}{
		{"none left", func() (int, error) { return 1, nil }, "no inotify watches left"},
		{"cannot count", func() (int, error) { return 0, errors.New("no /proc") }, "cannot read the inotify watch limit: no /proc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wt := gittest.NewRepo(t)
			sh(t, wt, `mkdir -p src; printf 'a\n' > src/a.go; git add -A; git commit -qm base`)
			for _, byWalk := range []bool{true, false} {
				e, err := Open(context.Background(), Options{Worktree: wt, SessionID: "s_test", StateDir: filepath.Join(t.TempDir(), "state")})
				if err != nil {
					t.Fatal(err)
				}
				e.countWatches = func() (int, error) {
					time.Sleep(20 * time.Millisecond) // counted after the watcher opens
					return tc.count()
				}
				e.Watch(WatchOptions{Resync: 30 * time.Millisecond, ArmWithWalk: byWalk})
				for i := range 3 {
					sh(t, wt, `printf 'x\n' >> src/a.go`)
					if got, want := capture(t, e, "").Tree, oracle(t, wt); got != want {
						t.Fatalf("capture %d: %s, a fresh engine %s", i, got, want)
					}
				}
				time.Sleep(150 * time.Millisecond) // several resync periods
				st := e.WatchState()
				if st.Watching || st.Watches != 0 || !strings.Contains(st.Stopped, tc.reason) {
					t.Fatalf("arm with walk %v: %+v, want stopped for %q with no watch", byWalk, st, tc.reason)
				}
				if st.Walked != 3 || st.Watched != 0 {
					t.Fatalf("arm with walk %v: %d walked, %d watched; want the three captures' walks and no other", byWalk, st.Walked, st.Watched)
				}
				if err := e.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestWalkWatchesBeforeTheCount: a walk that arms the watcher does not
// wait for the count of the user's watches; when the count, once known,
// allows fewer watches than the walk took, the walk gives them all back
// and the watcher stops for good, every capture walking and exact.
func TestWalkWatchesBeforeTheCount(t *testing.T) {
	t.Parallel()
	wt, e := thirteenDirs(t)
	counted := make(chan struct{})
	var watchedBefore int
	e.provisionalWatches = 100
	e.countWatches = func() (int, error) {
		select {
		case <-counted: // the walk has watched every directory by then
		case <-time.After(10 * time.Second): // it waits for the count
		}
		return 3, nil
	}
	var entered atomic.Int32
	e.onWalkDir = func(string) {
		// The last of the 13 directories: the others are entered, and
		// most watched (a worker may be between the two).
		if entered.Add(1) == 13 {
			e.watch.mu.Lock()
			watchedBefore = len(e.watch.wds)
			e.watch.mu.Unlock()
			close(counted)
		}
	}
	e.Watch(WatchOptions{Resync: -1, ArmWithWalk: true})
	for i := range 3 {
		sh(t, wt, `printf 'x\n' >> a/sub/f`)
		if got, want := capture(t, e, "").Tree, oracle(t, wt); got != want {
			t.Fatalf("capture %d: %s, a fresh engine %s", i, got, want)
		}
		e.onWalkDir = nil
	}
	if watchedBefore <= 3 {
		t.Fatalf("the walk had %d watches when the count came: it waited for it", watchedBefore)
	}
	st := e.WatchState()
	if st.Watching || st.Watches != 0 || !strings.Contains(st.Stopped, "more directories than the 3 inotify watches") {
		t.Fatalf("%+v: want stopped for good over the budget, with no watch", st)
	}
	if st.Walked != 3 || st.Watched != 0 {
		t.Fatalf("%d walked, %d watched; want three walks", st.Walked, st.Watched)
	}
}

// TestWalkWaitsPastTheProvisionalBudget: a walk that reaches the
// provisional budget before the count is known waits for the count, and
// arms with every directory when it allows them.
func TestWalkWaitsPastTheProvisionalBudget(t *testing.T) {
	t.Parallel()
	wt, e := thirteenDirs(t)
	ageChanges() // so that the first capture's walk arms the watcher
	e.provisionalWatches = 2
	e.countWatches = func() (int, error) {
		time.Sleep(50 * time.Millisecond) // the walk reaches 2 first
		return 100, nil
	}
	e.Watch(WatchOptions{Resync: -1, ArmWithWalk: true})
	capture(t, e, "")
	sh(t, wt, `printf 'x\n' >> a/sub/f`)
	if got, want := capture(t, e, "").Tree, oracle(t, wt); got != want {
		t.Fatalf("capture %s, a fresh engine %s", got, want)
	}
	st := e.WatchState()
	if !st.Watching || st.Watches != 13 || st.Watched != 1 {
		t.Fatalf("%+v: want the 13 directories watched and the second capture watched", st)
	}
}

// thirteenDirs is a repository of 13 directories (the top one, six and a
// subdirectory in each) and an engine over it, not yet watching.
func thirteenDirs(t *testing.T) (string, *Engine) {
	t.Helper()
	wt := gittest.NewRepo(t)
	sh(t, wt, `for d in a b c d e f; do mkdir -p $d/sub; printf '%s\n' $d > $d/sub/f; done; git add -A; git commit -qm base`)
	e, err := Open(context.Background(), Options{Worktree: wt, SessionID: "s_test", StateDir: filepath.Join(t.TempDir(), "state")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return wt, e
}
