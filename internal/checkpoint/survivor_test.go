package checkpoint_test

import (
	"context"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/spawn"
)

// TestSurvivorBlocksConfirm: a process left by an earlier yolop process of
// the session that could not be ended is a writer: confirm is refused with
// writer_active naming its pid until it is gone, then goes through.
func TestSurvivorBlocksConfirm(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process identities (start time, boot id) come from /proc")
	}
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, rigOpts{})
	for _, p := range threeTurns {
		r.turn(p)
	}
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	rec, err := spawn.Identify(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	rec.Command = "sleep 300"
	r.tasks.AddSurvivors([]spawn.Record{rec})

	pv, err := r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionUndo})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.ctl.Confirm(ctx, checkpoint.Request{Action: checkpoint.ActionUndo}, pv.Token)
	if checkpoint.CodeOf(err) != checkpoint.CodeWriterActive || !strings.Contains(err.Error(), "kill -9 "+strconv.Itoa(rec.PID)) {
		t.Fatalf("confirm with a survivor: %v, want %s naming pid %d", err, checkpoint.CodeWriterActive, rec.PID)
	}
	if err := r.tasks.Stop("p" + strconv.Itoa(rec.PID)); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if a := r.tasks.Active(); len(a) != 0 {
		t.Fatalf("active after the survivor ended: %+v", a)
	}
	if _, err := r.ctl.Confirm(ctx, checkpoint.Request{Action: checkpoint.ActionUndo}, pv.Token); err != nil {
		t.Fatalf("confirm once the survivor is gone: %v", err)
	}
}
