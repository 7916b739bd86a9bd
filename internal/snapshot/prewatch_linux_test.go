package snapshot

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/testenv"
)

// TestPrewatchedClaimIsWatchedAtTheTurnsEnd: a watcher armed over a spare
// before its proof lets the capture after the derived first one look at
// the changed paths only, and that capture holds what a full capture of
// the same worktree holds: the turn's edit, and changes made after the
// watcher was armed that the derived capture did not look at (the claim's
// checkout, or anything else). Without the proof (the first capture
// walks), the watcher still serves the next capture.
func TestPrewatchedClaimIsWatchedAtTheTurnsEnd(t *testing.T) {
	t.Parallel()
	for _, known := range []bool{true, false} {
		t.Run(map[bool]string{true: "derived", false: "walked"}[known], func(t *testing.T) {
			t.Parallel()
			var note Walk
			_, wt := knownCleanWorktree(t, func(wt string) {
				time.Sleep(walkSlack + 100*time.Millisecond)
				note = WalkTree(wt)
			})
			pw, err := NewPrewatch(wt, 0)
			if err != nil {
				t.Fatalf("NewPrewatch: %v", err)
			}
			// After the watcher, before the engine: what the claim's
			// two-tree checkout writes, or another writer.
			gittest.WriteFile(t, wt, "src/after-arm.go", "package main // arrived after the watcher\n")
			if err := os.Chmod(filepath.Join(wt, "src/run.sh"), 0o700); err != nil {
				t.Fatal(err)
			}
			e, err := Open(context.Background(), Options{Worktree: wt, SessionID: "s_test", StateDir: filepath.Join(t.TempDir(), "state"), SeedSettled: true, KnownClean: known, KnownWalk: &note, Prewatch: pw})
			if err != nil {
				t.Fatal(err)
			}
			e.Watch(WatchOptions{Resync: -1, ArmWithWalk: true})
			t.Cleanup(func() { _ = e.Close() })
			first := capture(t, e, "start")
			if got := e.derivedCaptures == 1; got != known {
				t.Fatalf("derived first capture: %v, want %v", got, known)
			}
			// The turn.
			gittest.WriteFile(t, wt, "src/main.go", "package main // the turn's edit\n")
			if err := os.Remove(filepath.Join(wt, "link")); err != nil {
				t.Fatal(err)
			}
			end := capture(t, e, "end")
			st := e.WatchState()
			if st.Watched != 1 || st.Walked != 1 {
				t.Fatalf("captures watched %d, walked %d (last walk: %q); want the end capture watched", st.Watched, st.Walked, st.LastWalk)
			}
			fresh := openKnownClean(t, wt, false)
			want := capture(t, fresh, "full")
			if end.Tree != want.Tree {
				t.Fatalf("end capture %s, a full capture %s (first %s)", end.Tree, want.Tree, first.Tree)
			}
			e.Wait()
			if e.lastWalk.modes["src/run.sh"] != fresh.lastWalk.modes["src/run.sh"] || fresh.lastWalk.modes["src/run.sh"] != 0o700 {
				t.Fatalf("permission of the file chmodded after the watcher: %o, a full capture %o", e.lastWalk.modes["src/run.sh"], fresh.lastWalk.modes["src/run.sh"])
			}
		})
	}
}

// TestPrewatchIsReleased: the inotify instance of a prewatch is closed by
// Close, by an engine that never watches, by an Open that fails, and when
// the engine is of another directory (it then watches with its own).
func TestPrewatchIsReleased(t *testing.T) {
	_, wt := knownCleanWorktree(t, nil)
	base := testenv.InotifyInstances(t)
	check := func(what string, want int) {
		t.Helper()
		if n := testenv.InotifyInstances(t) - base; n != want {
			t.Fatalf("%s: %d inotify instances held, want %d", what, n, want)
		}
	}
	pw, err := NewPrewatch(wt, 0)
	if err != nil {
		t.Fatal(err)
	}
	check("armed", 1)
	pw.Close()
	pw.Close()
	check("closed twice", 0)

	pw, _ = NewPrewatch(wt, 0)
	e, err := Open(context.Background(), Options{Worktree: wt, SessionID: "s_test", StateDir: filepath.Join(t.TempDir(), "state"), Prewatch: pw})
	if err != nil {
		t.Fatal(err)
	}
	capture(t, e, "a")
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	check("engine closed without watching", 0)

	pw, _ = NewPrewatch(wt, 0)
	if _, err := Open(context.Background(), Options{Worktree: wt, SessionID: "bad id!", StateDir: filepath.Join(t.TempDir(), "state"), Prewatch: pw}); err == nil {
		t.Fatal("Open with a bad session id succeeded")
	}
	check("Open failed", 0)

	other := gittest.NewRepo(t)
	pw, _ = NewPrewatch(wt, 0)
	e, err = Open(context.Background(), Options{Worktree: other, SessionID: "s_test", StateDir: filepath.Join(t.TempDir(), "state"), Prewatch: pw})
	if err != nil {
		t.Fatal(err)
	}
	e.Watch(WatchOptions{Resync: -1, ArmWithWalk: true})
	check("engine of another directory", 1) // its own
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	check("that engine closed", 0)

	l := NewLazy(func(ctx context.Context) (*Engine, error) { t.Fatal("opened"); return nil, nil })
	pw, _ = NewPrewatch(wt, 0)
	l.Unopened(pw.Close)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	check("lazy engine closed unopened", 0)
	if _, err := l.Get(context.Background()); err == nil {
		t.Fatal("a lazy engine closed unopened opened afterwards")
	}
}

// BenchmarkPrewatch times arming a watcher over a tree before a proof
// (what a claim adds before its status); BenchmarkWalk on the same tree
// is the walk the end capture no longer needs.
func BenchmarkPrewatch(b *testing.B) {
	_, dir, _ := benchRepo(b)
	for b.Loop() {
		pw, err := NewPrewatch(dir, 0)
		if err != nil {
			b.Fatal(err)
		}
		pw.Close()
	}
}

// TestWatchedWalkAsksTheWatcher: a walk begun after the claim's watcher
// was armed (Walk.Watched, the walk beside the proof of a spare whose
// preparation hurried) has the derived first capture look again only at
// what the watcher names, though every file of the checkout was stamped
// within the second before the walk; a permission changed after the walk
// is recorded all the same, as an ordinary capture records it. Where the
// watcher cannot vouch (it overflowed, or a nested repository appeared)
// or is not the engine's (no prewatch), inode times decide, with the same
// record; a nested repository makes the capture walk.
func TestWatchedWalkAsksTheWatcher(t *testing.T) {
	t.Parallel()
	for _, c := range []string{"watched", "overflowed", "not taken", "nested"} {
		t.Run(c, func(t *testing.T) {
			t.Parallel()
			_, wt := knownCleanWorktree(t, nil)
			pw, err := NewPrewatch(wt, 0)
			if err != nil {
				t.Fatalf("NewPrewatch: %v", err)
			}
			note := WalkTree(wt)
			note.Watched = true
			if c == "overflowed" {
				pw.w.forceOverflow()
			}
			// After the walk: the claim's two-tree checkout, or another
			// writer.
			if err := os.Chmod(filepath.Join(wt, "src/run.sh"), 0o700); err != nil {
				t.Fatal(err)
			}
			if c == "nested" {
				if err := os.Mkdir(filepath.Join(wt, "vendor/lib/.git"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			o := Options{Worktree: wt, SessionID: "s_test", StateDir: filepath.Join(t.TempDir(), "state"), SeedSettled: true, KnownClean: true, KnownWalk: &note, Prewatch: pw}
			if c == "not taken" {
				pw.Close()
				o.Prewatch = nil
			}
			e, err := Open(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			if c == "not taken" {
				// A watcher of its own, armed after the walk and the
				// change: it could not name what changed before.
				e.Watch(WatchOptions{Resync: -1})
				if err := e.watch.waitArmed(context.Background()); err != nil {
					t.Fatal(err)
				}
			} else {
				e.Watch(WatchOptions{Resync: -1, ArmWithWalk: true})
			}
			got := capture(t, e, "start")
			if fromNote := map[bool]int{true: 0, false: 1}[c == "nested"]; e.noteWalks != fromNote {
				t.Fatalf("captures that took their walk from the note: %d, want %d", e.noteWalks, fromNote)
			}
			fresh := openKnownClean(t, wt, false)
			want := capture(t, fresh, "full")
			if got.Tree != want.Tree {
				t.Fatalf("tree %s, an ordinary capture %s", got.Tree, want.Tree)
			}
			wantModes := map[string]fs.FileMode{"src/main.go": 0o600, "src/run.sh": 0o700}
			if !reflect.DeepEqual(e.lastWalk.modes, wantModes) || !reflect.DeepEqual(fresh.lastWalk.modes, wantModes) {
				t.Fatalf("permission record %v, an ordinary capture's %v; want %v", e.lastWalk.modes, fresh.lastWalk.modes, wantModes)
			}
			switch {
			case c == "nested":
			case c == "watched" && e.noteLooks != 1:
				t.Fatalf("entries looked at again: %d, want 1 (the one the watcher saw change)", e.noteLooks)
			case c != "watched" && e.noteLooks < 1:
				t.Fatalf("entries looked at again: %d, want at least the one changed after the walk", e.noteLooks)
			}
		})
	}
}

// TestPrewatchByWalkBesideTheProof: a watcher armed by a walk that runs
// beside the proof (NewPrewatchByWalk, from a start taken before the
// proof began) misses nothing: a file changed after the start but before
// the walk reached it (the proof may have looked at it first) is recorded
// as changed, one changed after the walk raises an event. The capture
// after the derived first one looks at the changed paths only and holds
// what a full capture of the worktree holds.
func TestPrewatchByWalkBesideTheProof(t *testing.T) {
	t.Parallel()
	_, wt := knownCleanWorktree(t, func(string) { time.Sleep(armSlack + 50*time.Millisecond) })
	// The top directory renamed into place just before, as a claim does.
	moved := filepath.Join(filepath.Dir(wt), "moved")
	if err := os.Rename(wt, moved); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, filepath.Dir(wt), "-C", moved, "worktree", "repair")
	wt = moved
	pw, note := NewPrewatchByWalk(wt, 0, func() {
		// The proof begins here and looks at src/main.go at once; then
		// it is changed, before the walk comes to it.
		gittest.WriteFile(t, wt, "src/main.go", "package main // changed before the walk\n")
		if err := os.Chmod(filepath.Join(wt, "src/main.go"), 0o600); err != nil {
			t.Fatal(err)
		}
		// And a file at the top removed, before the walk reads it.
		if err := os.Remove(filepath.Join(wt, "link")); err != nil {
			t.Fatal(err)
		}
	})
	if pw == nil || !note.Watched {
		t.Fatalf("no watcher armed by the walk (walk %+v)", note)
	}
	// After the walk.
	if err := os.Chmod(filepath.Join(wt, "src/run.sh"), 0o700); err != nil {
		t.Fatal(err)
	}
	e, err := Open(context.Background(), Options{Worktree: wt, SessionID: "s_test", StateDir: filepath.Join(t.TempDir(), "state"), SeedSettled: true, KnownClean: true, KnownWalk: &note, Prewatch: pw})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	e.Watch(WatchOptions{Resync: -1, ArmWithWalk: true})
	capture(t, e, "start")
	if e.derivedCaptures != 1 || e.noteWalks != 1 {
		t.Fatalf("derived captures %d, from the walk %d; want 1 and 1", e.derivedCaptures, e.noteWalks)
	}
	end := capture(t, e, "end")
	if st := e.WatchState(); st.Watched != 1 {
		t.Fatalf("captures watched %d (last walk: %q); want the end capture watched, the rename of the top directory notwithstanding", st.Watched, st.LastWalk)
	}
	fresh := openKnownClean(t, wt, false)
	if want := capture(t, fresh, "full"); end.Tree != want.Tree {
		t.Fatalf("end capture %s, a full capture %s", end.Tree, want.Tree)
	}
	e.Wait()
	if want := map[string]fs.FileMode{"src/main.go": 0o600, "src/run.sh": 0o700}; !reflect.DeepEqual(e.lastWalk.modes, want) {
		t.Fatalf("permission record %v, want %v", e.lastWalk.modes, want)
	}
}

// TestDerivedCaptureLeavesNothingTaken: a first capture derived from the
// proof records the tree the proof saw. When it took the watcher's change
// set first (it was asked to walk, as the background resync or a restore
// asks, or the watcher is the engine's own, armed after the proof), an
// edit made after the proof and before that capture is still recorded by
// the next capture, which equals a full capture of the worktree.
func TestDerivedCaptureLeavesNothingTaken(t *testing.T) {
	t.Parallel()
	for _, c := range []string{"resync with a prewatch", "resync with a prewatch by walk", "own watcher armed after the proof"} {
		t.Run(c, func(t *testing.T) {
			t.Parallel()
			var note Walk
			_, wt := knownCleanWorktree(t, func(wt string) {
				time.Sleep(walkSlack + 100*time.Millisecond)
				note = WalkTree(wt)
			})
			o := Options{Worktree: wt, SessionID: "s_test", StateDir: filepath.Join(t.TempDir(), "state"), SeedSettled: true, KnownClean: true, KnownWalk: &note}
			switch c {
			case "resync with a prewatch":
				pw, err := NewPrewatch(wt, 0)
				if err != nil {
					t.Fatal(err)
				}
				o.Prewatch = pw
			case "resync with a prewatch by walk":
				o.Prewatch, note = NewPrewatchByWalk(wt, 0, func() {})
			}
			e, err := Open(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			own := o.Prewatch == nil
			if own {
				e.Watch(WatchOptions{Resync: -1})
				if err := e.watch.waitArmed(context.Background()); err != nil {
					t.Fatal(err)
				}
			} else {
				e.Watch(WatchOptions{Resync: -1, ArmWithWalk: true})
			}
			gittest.WriteFile(t, wt, "src/main.go", "package main // edited after the proof\n")
			if own {
				capture(t, e, "start")
			} else if err := e.Resync(context.Background()); err != nil {
				t.Fatal(err)
			}
			if e.derivedCaptures != 1 {
				t.Fatalf("derived captures: %d, want the first one (the test's premise)", e.derivedCaptures)
			}
			end := capture(t, e, "end")
			if want := capture(t, openKnownClean(t, wt, false), "full"); end.Tree != want.Tree {
				t.Fatalf("the capture after the derived one %s, a full capture %s (last walk: %q)", end.Tree, want.Tree, e.WatchState().LastWalk)
			}
		})
	}
}
