package snapshot

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
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
