package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// TestCloseEndsARunningTurn: Close while a turn runs must not release the
// session lock under a turn that still writes the workspace and the logs.
// It cancels the turn and waits for it, so the turn is journaled as
// cancelled (not found interrupted by the next open) and nothing is
// written after Close returns.
func TestCloseEndsARunningTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	gittest.WriteFile(t, repo, "a.txt", "a\n")
	gittest.Commit(t, repo, "base")
	data := t.TempDir()
	s, err := app.Open(ctx, app.Env{DataDir: data, Dir: repo, Provider: provider.Config{Provider: provider.NameSim}}, app.New{})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	type result struct {
		res app.TurnResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := s.Prompt(ctx, "$ touch started && sleep 30 && touch late", func(u agent.Update) {
			if u.Kind == agent.UpdateToolStart {
				close(started)
			}
		})
		done <- result{res, err}
	}()
	<-started
	root := s.Info().ActiveRoot
	waitFile(t, filepath.Join(root, "started"))
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	// Close returned: the turn must already be journaled as cancelled
	// (read before anything else can touch the session).
	id := s.Info().SessionID
	sess, err := session.Open(data, id)
	if err != nil {
		t.Fatalf("the lock should be free after Close: %v", err)
	}
	defer sess.Close()
	st := timeline.Build(mustRecords(t, sess.Path(session.TimelineFile)))
	if cp := st.Checkpoints["cp1"]; cp == nil || cp.Open || cp.Status != agent.StatusCancelled {
		t.Fatalf("cp1 in the timeline when Close returned: %+v", cp)
	}
	got := <-done
	if got.err != nil || got.res.Status != agent.StatusCancelled {
		t.Fatalf("turn after Close: %+v, %v; want cancelled", got.res, got.err)
	}
	if _, err := s.Prompt(ctx, "another", nil); err == nil {
		t.Fatal("a prompt after Close was accepted")
	}
	if _, err := os.Stat(filepath.Join(root, "late")); err == nil {
		t.Fatal("the turn kept running after Close")
	}
}

func mustRecords(t *testing.T, path string) []timeline.Record {
	t.Helper()
	recs, err := timeline.ReadRecords(path)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// waitFile polls for a file; the deadline only guards against a hang.
func waitFile(t *testing.T, p string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(p); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", strings.TrimSpace(p))
		}
		time.Sleep(5 * time.Millisecond)
	}
}
