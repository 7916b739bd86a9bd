package snapshot

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// A capture computes its tree while Options.BeforeRef (the session
// reaching the disk) is still under way, and writes no ref before it
// returns; its error fails the capture, and every later one, with no ref.
func TestBeforeRefComesBeforeTheFirstRef(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	gittest.WriteFile(t, wt, "new.txt", "agent\n")
	entered, release := make(chan struct{}), make(chan struct{})
	calls := 0
	e, err := Open(context.Background(), Options{Worktree: wt, SessionID: "s_wait", StateDir: filepath.Join(t.TempDir(), "state"), BeforeRef: func() error {
		calls++
		close(entered)
		<-release
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Wait)
	done := make(chan error, 1)
	go func() {
		_, err := e.Capture(context.Background(), "cp1")
		done <- err
	}()
	select {
	case <-entered:
	case err := <-done:
		t.Fatalf("the capture returned (%v) without waiting for BeforeRef", err)
	}
	if refs := gittest.Git(t, wt, "for-each-ref", "refs/yolop/"); refs != "" {
		t.Fatalf("a ref was written before BeforeRef returned:\n%s", refs)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	capture(t, e, "cp2")
	if calls != 1 {
		t.Fatalf("BeforeRef was called %d times, want once", calls)
	}
	if refs := gittest.Git(t, wt, "for-each-ref", "--format=%(refname)", RefPrefix); !strings.Contains(refs, "s_wait/cp1") || !strings.Contains(refs, "s_wait/cp2") {
		t.Fatalf("refs after the captures:\n%s", refs)
	}

	lost := errors.New("fsync: input/output error")
	wt2 := gittest.NewRepo(t)
	e2, err := Open(context.Background(), Options{Worktree: wt2, SessionID: "s_lost", StateDir: filepath.Join(t.TempDir(), "state"), BeforeRef: func() error { return lost }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e2.Wait)
	for _, name := range []string{"cp1", "cp2"} {
		_, err := e2.Capture(context.Background(), name)
		var ce *CaptureError
		if !errors.Is(err, lost) || !errors.As(err, &ce) {
			t.Fatalf("Capture(%s) = %v, want a CaptureError wrapping %v", name, err, lost)
		}
	}
	if _, err := e2.Anchor(context.Background(), "cp3", gittest.Git(t, wt2, "rev-parse", "HEAD^{tree}")); !errors.Is(err, lost) {
		t.Fatalf("Anchor = %v, want %v", err, lost)
	}
	if refs := gittest.Git(t, wt2, "for-each-ref", "refs/yolop/"); refs != "" {
		t.Fatalf("refs written although BeforeRef failed:\n%s", refs)
	}
}
