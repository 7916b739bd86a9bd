package checkpoint_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/app"

	"github.com/yolop-dev/yolop/internal/checkpoint"
)

// Ctrl+C while a confirmed restore writes: the files go back as they were,
// the head stays, and the error says it was interrupted (not that the
// restore failed, nor the snapshot engine's advice about a half-changed
// worktree).
func TestInterruptedRestoreIsRolledBackAndSaysSo(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	r.turn("$ echo one > a.txt")
	r.turn("$ echo two > b.txt && echo changed > a.txt")
	before := manifest(t, r.root)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := r.env
	o.Hooks.Failpoint = func(name string) {
		if name == "restore.after_write" {
			cancel()
		}
	}
	r.close()
	r.open(o, app.Resume{ID: r.id})
	pv, err := r.ctl.Preview(context.Background(), checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp1", Mode: checkpoint.ModeBoth})
	if err != nil {
		t.Fatal(err)
	}
	head := r.ctl.Head()
	_, err = r.ctl.Confirm(ctx, checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp1", Mode: checkpoint.ModeBoth}, pv.Token)
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("Confirm = %v, want an interruption", err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "interrupted: the restore was stopped; the files were put back") || strings.Contains(msg, "restore the recovery snapshot") {
		t.Fatalf("message %q", msg)
	}
	if r.ctl.Head() != head {
		t.Fatalf("head moved to %s", r.ctl.Head())
	}
	r.requireManifest(before, "after the interrupted restore")
}
