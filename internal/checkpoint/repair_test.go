package checkpoint_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/app"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// TestRepairWithoutSnapshotsKeepsAnInterruptedRestore: a workspace restore
// interrupted after it wrote files can only be rolled back with the
// snapshot engine. When a reopen cannot use it (git missing, worktree
// unreadable), Repair must refuse rather than journal restore.aborted over
// half-restored files; once the engine works again, the files come back.
func TestRepairWithoutSnapshotsKeepsAnInterruptedRestore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, rigOpts{})
	for _, p := range threeTurns {
		r.turn(p)
	}
	before := manifest(t, r.root)
	// The state a crash at restore.after_write leaves: a durable intent
	// whose recovery snapshot holds the files before it, and some of the
	// target's files already written.
	rec, err := r.eng.Capture(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.tl.Append(timeline.Record{Type: timeline.TypeRestoreStarted, Restore: "r1", Target: "cp2", Mode: timeline.ModeBoth,
		OldHead: "cp3", NewHead: "cp1", AbandonedHead: "cp3", Recovery: &timeline.SnapshotRef{Tree: rec.Tree, Ref: rec.Ref}}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(r.root, "c.txt")); err != nil {
		t.Fatal(err)
	}
	write(t, r.root, "README.md", "half-restored\n")
	r.close()

	// Reopen without workspace snapshots.
	sess, err := session.Open(r.data, r.id)
	if err != nil {
		t.Fatal(err)
	}
	tl, _, _, err := timeline.OpenLog(sess.Path(session.TimelineFile))
	if err != nil {
		t.Fatal(err)
	}
	tlBefore := readFile(t, sess.Path(session.TimelineFile))
	ctl := checkpoint.New(checkpoint.Config{
		SessionID: sess.ID, Dir: sess.Dir, Store: sess, Timeline: tl,
		NoWorkspace: "workspace snapshots unavailable: git is unavailable", Runtime: nopRuntime{},
	})
	notes, err := ctl.Repair(ctx)
	if err == nil {
		t.Fatalf("Repair without snapshots accepted an interrupted workspace restore: %q", notes)
	}
	if !strings.Contains(err.Error(), rec.Ref) {
		t.Fatalf("the refusal does not name the recovery ref %s: %v", rec.Ref, err)
	}
	if !bytes.Equal(readFile(t, sess.Path(session.TimelineFile)), tlBefore) {
		t.Fatal("the refused repair changed timeline.jsonl")
	}
	tl.Close()
	sess.Close()

	// With the engine back, the next open rolls the files back.
	r.open(r.env, app.Resume{ID: r.id})
	if r.ctl.Head() != "cp3" {
		t.Fatalf("head %q after the rollback, want cp3", r.ctl.Head())
	}
	r.requireManifest(before, "after the repair")
}

// nopRuntime is a runtime for a controller that runs no turns.
type nopRuntime struct{}

func (nopRuntime) RunTurn(context.Context, string, string, func(agent.Update)) agent.Outcome {
	return agent.Outcome{Status: agent.StatusFailed}
}
func (nopRuntime) Reseed([]session.Event, []timeline.Compaction, func(string, int64) bool) {}
func (nopRuntime) Note(string, agent.NoticeData) error                                     { return nil }
func (nopRuntime) Compact(context.Context) (string, error)                                 { return "", agent.ErrNothingToCompact }
