package checkpoint_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/snapshot"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// A turn whose start capture is refused because the session is not
// safely on disk (snapshot.ErrNotOnDisk) does not run: its work could
// never be undone. Nothing is journaled and the runtime is not called.
func TestTurnRefusedWhenTheSessionIsNotOnDisk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wt := gittest.NewRepo(t)
	sess, err := session.Create(t.TempDir(), session.Workspace{Kind: session.KindInPlace, RepoRoot: wt, ActiveRoot: wt})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	lost := errors.New("fsync: input/output error")
	eng, err := snapshot.Open(ctx, snapshot.Options{Worktree: wt, SessionID: sess.ID, StateDir: filepath.Join(sess.Dir, "snapshot"),
		BeforeRef: func() error { return lost }})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	tl, _, _, err := timeline.OpenLog(sess.Path(session.TimelineFile))
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	rt := &countingRuntime{}
	ctl := checkpoint.New(checkpoint.Config{SessionID: sess.ID, Dir: sess.Dir, Store: sess, Timeline: tl, Snapshots: eng, Runtime: rt})
	before := readFile(t, sess.Path(session.TimelineFile))
	_, err = ctl.RunTurn(ctx, "$ echo x > x.txt", nil)
	if !errors.Is(err, snapshot.ErrNotOnDisk) || !errors.Is(err, lost) {
		t.Fatalf("RunTurn = %v, want a refusal naming %v", err, lost)
	}
	if rt.turns != 0 {
		t.Fatal("the turn ran on a session that is not on disk")
	}
	if !bytes.Equal(readFile(t, sess.Path(session.TimelineFile)), before) {
		t.Fatal("the refused turn was journaled")
	}
	if ctl.Head() != "" {
		t.Fatalf("head %q after a refused first turn", ctl.Head())
	}
}

type countingRuntime struct {
	nopRuntime
	turns int
}

func (r *countingRuntime) RunTurn(context.Context, string, string, func(agent.Update)) agent.Outcome {
	r.turns++
	return agent.Outcome{Status: agent.StatusFailed}
}
