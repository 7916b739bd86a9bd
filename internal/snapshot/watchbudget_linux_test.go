package snapshot

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"golang.org/x/sys/unix"

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

// deniedFS is a /proc whose listed descriptor directories cannot be read,
// as a sealed process's are for any user but root.
type deniedFS struct {
	fstest.MapFS
	denied map[string]bool
}

func (d deniedFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if d.denied[name] {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return d.MapFS.ReadDir(name)
}

// TestWatchesInUse: the watches of the processes whose descriptors can be
// read are counted; a yolop process of the same user whose descriptors
// cannot be (sealed) is counted as hidden, one share of the budget; other
// users' processes and other sealed programs are neither.
func TestWatchesInUse(t *testing.T) {
	t.Parallel()
	link := func(to string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(to), Mode: fs.ModeSymlink} }
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	status := func(uid string) *fstest.MapFile {
		return file("Name:\tx\nUmask:\t0022\nState:\tS (sleeping)\nUid:\t" + uid + "\t" + uid + "\t" + uid + "\t" + uid + "\n")
	}
	proc := deniedFS{MapFS: fstest.MapFS{
		"self":        link("10"),
		"stat":        file("cpu 0 0 0 0\n"),
		"10/fd/0":     link("/dev/null"),
		"10/fd/3":     link("anon_inode:inotify"),
		"10/fd/4":     link("anon_inode:inotify"),
		"10/fd/5":     link("anon_inode:[eventpoll]"),
		"10/fdinfo/3": file("pos:\t0\nflags:\t02004000\ninotify wd:2 ino:1 sdev:800001 mask:3cc ignored_mask:0\ninotify wd:1 ino:2 sdev:800001 mask:3cc ignored_mask:0\ninotify wd:3 ino:3 sdev:800001 mask:3cc ignored_mask:0\n"),
		"10/fdinfo/4": file("pos:\t0\nflags:\t02004000\ninotify wd:1 ino:9 sdev:800001 mask:3cc ignored_mask:0\n"),
		"10/fdinfo/5": file("pos:\t0\nflags:\t02\ntfd:        3 events:       19 data:                3\n"),
		"10/status":   status("1000"),
		"10/cmdline":  file("code\x00--inspect\x00"),
		// Sealed yolop processes of this user: one by its path, one as
		// started from $PATH.
		"12/fd/3":    link("anon_inode:inotify"),
		"12/status":  status("1000"),
		"12/cmdline": file("/home/u/go/bin/yolop\x00--acp\x00"),
		"14/status":  status("1000"),
		"14/cmdline": file("yolop\x00"),
		// Another sealed program of this user, another user's yolop, a
		// process gone between the listing and its status.
		"13/status":  status("1000"),
		"13/cmdline": file("ssh-agent\x00-D\x00"),
		"15/status":  status("1001"),
		"15/cmdline": file("/usr/bin/yolop\x00"),
		"16/cmdline": file("yolop\x00"),
	}, denied: map[string]bool{"12/fd": true, "13/fd": true, "14/fd": true, "15/fd": true, "16/fd": true}}
	if used, hidden := watchesInUse(proc, 1000); used != 4 || hidden != 2 {
		t.Fatalf("watchesInUse: %d used, %d hidden; want 4 (three in one inotify instance, one in another) and 2 (the two sealed yolops of uid 1000)", used, hidden)
	}
	// For uid 1001, its own sealed yolop is the one hidden.
	if used, hidden := watchesInUse(proc, 1001); used != 4 || hidden != 1 {
		t.Fatalf("watchesInUse as uid 1001: %d used, %d hidden; want 4 and 1", used, hidden)
	}
}

// TestWatchesInUseInProc: on the real /proc, a watch this process adds
// is counted.
func TestWatchesInUseInProc(t *testing.T) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("no inotify: %v", err)
	}
	defer unix.Close(fd)
	// Other processes' watches may come and go meanwhile: one try of a
	// few sees only this one's.
	for try := 0; ; try++ {
		before, _ := watchesInUse(os.DirFS("/proc"), os.Getuid())
		if _, err := unix.InotifyAddWatch(fd, t.TempDir(), unix.IN_CREATE); err != nil {
			t.Fatal(err)
		}
		after, _ := watchesInUse(os.DirFS("/proc"), os.Getuid())
		if after-before == 1 {
			return
		}
		if try == 20 {
			t.Fatalf("%d watches counted before adding one, %d after", before, after)
		}
	}
}
