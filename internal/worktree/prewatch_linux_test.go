package worktree

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/snapshot"
	"github.com/yolop-dev/yolop/internal/testenv"
)

// TestClaimArmsAWatcherBeforeItsProof: with Manager.Watch a claimed spare
// comes with a watcher armed before the status that proved it clean; a
// spare set aside by that status, and a start given back, hold none.
// Not parallel: it counts the process's inotify instances.
func TestClaimArmsAWatcherBeforeItsProof(t *testing.T) {
	r := newSpareRig(t)
	r.m.Watch = &snapshot.WatchOptions{}
	repo := detect(t, r.repo)
	base := testenv.InotifyInstances(t)
	if _, err := r.m.PrepareSpare(context.Background(), repo, ""); err != nil {
		t.Fatal(err)
	}
	st := r.start(t, "s_1")
	if !st.Recycled || !st.KnownClean || st.Watch == nil {
		t.Fatalf("claimed spare: recycled %v, known clean %v, watch %v", st.Recycled, st.KnownClean, st.Watch)
	}
	if n := testenv.InotifyInstances(t) - base; n != 1 {
		t.Fatalf("%d inotify instances held after the claim, want 1", n)
	}
	r.m.Abandon(context.Background(), st)
	if n := testenv.InotifyInstances(t) - base; n != 0 {
		t.Fatalf("%d inotify instances held after the start was given back", n)
	}

	// Given back, it was parked again: with a stranger's file in it, it
	// is set aside at its next claim.
	spares, _ := filepath.Glob(filepath.Join(r.spareDir(), ".spare-*[0-9]"))
	if len(spares) != 1 {
		t.Fatalf("spares after the start was given back: %v", spares)
	}
	gittest.WriteFile(t, spares[0], "notes/mine.txt", "mine\n")
	st = r.start(t, "s_2")
	if st.Recycled || st.Watch != nil {
		t.Fatalf("spoiled spare: recycled %v, watch %v", st.Recycled, st.Watch)
	}
	if n := testenv.InotifyInstances(t) - base; n != 0 {
		t.Fatalf("%d inotify instances held after the spare was set aside", n)
	}
}
