package checkpoint_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// TestModelQueuedRestores: the checkpoint tool only queues; the preview is
// built after the turn. "Undo" asked during turn N targets turn N-1 so that
// confirming removes both; a request the controller would refuse after the
// turn is answered to the model at once instead of being reported queued.
func TestModelQueuedRestores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("undo during turn 3 removes turns 2 and 3", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, rigOpts{})
		r.turn(threeTurns[0])
		atCP2 := manifest(t, r.root)
		r.turn(threeTurns[1])
		out := r.turn("$ echo MARK3 > c.txt\nundo the last turn")
		if out.Pending == nil {
			t.Fatalf("no pending preview (err %v, text %q)", out.PendingErr, out.Text)
		}
		if out.Pending.Target != "cp2" || out.Pending.Action != checkpoint.ActionUndo {
			t.Fatalf("pending %+v, want an undo to cp2", out.Pending)
		}
		var leaving []string
		for _, tr := range out.Pending.TurnsLeaving {
			leaving = append(leaving, tr.ID)
		}
		if !slices.Equal(leaving, []string{"cp2", "cp3"}) {
			t.Fatalf("turns leaving %q, want cp2 and cp3", leaving)
		}
		if r.ctl.Head() != "cp3" {
			t.Fatal("queueing changed the head")
		}
		if _, err := r.ctl.Confirm(ctx, checkpoint.Request{Action: checkpoint.ActionUndo}, out.Pending.Token); err != nil {
			t.Fatal(err)
		}
		if r.ctl.Head() != "cp1" {
			t.Fatalf("head %q, want cp1", r.ctl.Head())
		}
		r.requireManifest(atCP2, "after the queued undo")
	})
	t.Run("undo during the first turn removes it", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, rigOpts{})
		out := r.turn("undo")
		if out.Pending == nil || out.Pending.Target != "cp1" {
			t.Fatalf("pending %+v (%v), want an undo to cp1", out.Pending, out.PendingErr)
		}
	})
	t.Run("refused requests are answered at once", func(t *testing.T) {
		t.Parallel()
		for _, req := range []tools.CheckpointRequest{
			{Action: "undo", Mode: "both"},
			{Action: "redo"},
			{Action: "rewind", Target: "cp9"},
			{Action: "rewind", Target: "cp1", Mode: "sideways"},
		} {
			qr := &queueRuntime{req: req}
			r := newRig(t, rigOpts{runtime: func(a *agent.Agent) checkpoint.Runtime { qr.base = a; return qr }})
			qr.ctl = r.ctl
			r.ctl.Reseed()
			out, err := r.ctl.RunTurn(ctx, "queue", nil)
			if err != nil {
				t.Fatal(err)
			}
			if qr.err != nil {
				t.Fatalf("%+v: %v", req, qr.err)
			}
			if strings.HasPrefix(qr.reply, "Queued") {
				t.Fatalf("%+v was reported queued: %q", req, qr.reply)
			}
			if out.Pending != nil || out.PendingErr != nil {
				t.Fatalf("%+v: pending %+v, err %v", req, out.Pending, out.PendingErr)
			}
		}
	})
}

// queueRuntime runs a turn whose only action is one checkpoint-tool
// request, made the way the tool makes it (during the turn).
type queueRuntime struct {
	base  checkpoint.Runtime
	ctl   *checkpoint.Controller
	req   tools.CheckpointRequest
	reply string
	err   error
}

func (q *queueRuntime) RunTurn(ctx context.Context, turnID, prompt string, onUpdate func(agent.Update)) agent.Outcome {
	q.reply, q.err = q.ctl.QueuePreview(ctx, q.req)
	return q.base.RunTurn(ctx, turnID, prompt, onUpdate)
}

// Reseed is called once by the rig before base is set; the session is
// empty then.
func (q *queueRuntime) Reseed(active []session.Event, comps []timeline.Compaction, in func(string, int64) bool) {
	if q.base != nil {
		q.base.Reseed(active, comps, in)
	}
}

func (q *queueRuntime) Note(turn string, n agent.NoticeData) error { return q.base.Note(turn, n) }

func (q *queueRuntime) Compact(ctx context.Context) (string, error) { return q.base.Compact(ctx) }
