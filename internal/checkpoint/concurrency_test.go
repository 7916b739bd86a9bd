package checkpoint_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/checkpoint"
)

// waitFor polls cond; the deadline only guards against a hung test, it is
// not what the test asserts.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestBackgroundWriterBlocksConfirm: a preview may run while a background
// shell task writes the workspace; its confirm is refused with
// writer_active naming the task, and nothing changes. Once the task ends, a
// fresh preview and confirm succeed.
func TestBackgroundWriterBlocksConfirm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, rigOpts{})
	for _, p := range threeTurns {
		r.turn(p)
	}
	stop := filepath.Join(t.TempDir(), "stop")
	cmd := `while [ ! -e '` + stop + `' ]; do echo tick >> writer.txt; sleep 0.01; done`
	args, _ := json.Marshal(map[string]any{"command": cmd, "background": true})
	res, err := r.ts.Run(ctx, "bash", string(args))
	if err != nil || res.IsError {
		t.Fatalf("start background task: %v %+v", err, res)
	}
	active := r.tasks.Active()
	if len(active) != 1 {
		t.Fatalf("active writers = %+v", active)
	}
	task := active[0]
	waitFor(t, "the task's first write", func() bool {
		_, err := os.Stat(filepath.Join(r.root, "writer.txt"))
		return err == nil
	})

	// Previews (and listings) run concurrently with the writer.
	var wg sync.WaitGroup
	var pv *checkpoint.Preview
	var pvErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		pv, pvErr = r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionUndo})
	}()
	go func() {
		defer wg.Done()
		_, _ = r.ctl.List(ctx, true)
	}()
	wg.Wait()
	if pvErr != nil {
		t.Fatalf("preview while a writer runs: %v", pvErr)
	}
	tl, head := r.timelineBytes(), r.ctl.Head()
	_, err = r.ctl.Confirm(ctx, checkpoint.Request{Action: checkpoint.ActionUndo}, pv.Token)
	if checkpoint.CodeOf(err) != checkpoint.CodeWriterActive {
		t.Fatalf("confirm while a writer runs: %v, want %s", err, checkpoint.CodeWriterActive)
	}
	if !strings.Contains(err.Error(), task.ID) || !strings.Contains(err.Error(), "writer.txt") {
		t.Fatalf("refusal does not name the task %s and its command: %v", task.ID, err)
	}
	if !strings.Contains(err.Error(), "`/tasks stop "+task.ID+"`") {
		t.Fatalf("refusal does not give the command that stops %s: %v", task.ID, err)
	}
	if string(r.timelineBytes()) != string(tl) || r.ctl.Head() != head {
		t.Fatal("a refused confirm changed the timeline or the head")
	}
	// writer.txt exists only because of the task: nothing restored it away.
	if _, err := os.Stat(filepath.Join(r.root, "writer.txt")); err != nil {
		t.Fatalf("refused confirm touched the workspace: %v", err)
	}

	// Let the task write once more after the preview, then stop it.
	size := func() int64 {
		st, err := os.Stat(filepath.Join(r.root, "writer.txt"))
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	after := size()
	waitFor(t, "a write after the preview", func() bool { return size() > after })
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the task to end", func() bool { return len(r.tasks.Active()) == 0 })
	// The old preview is stale now (the task wrote after it)...
	_, err = r.ctl.Confirm(ctx, checkpoint.Request{Action: checkpoint.ActionUndo}, pv.Token)
	if checkpoint.CodeOf(err) != checkpoint.CodeStalePreview {
		t.Fatalf("confirming the preview made during the writes: %v, want %s", err, checkpoint.CodeStalePreview)
	}
	// ...and a fresh one goes through.
	got := r.restore(checkpoint.Request{Action: checkpoint.ActionUndo})
	if got.PathsChanged == 0 || r.ctl.Head() != "cp2" {
		t.Fatalf("undo after the writer: %+v head %s", got, r.ctl.Head())
	}
	if _, err := os.Stat(filepath.Join(r.root, "writer.txt")); !os.IsNotExist(err) {
		t.Fatalf("writer.txt (made after cp3) survived the undo: %v", err)
	}
}

// TestTurnRunningBlocksConfirm: while a turn runs, confirm and another turn
// are refused with turn_running; the running turn's own checkpoint is not a
// target; after the turn ends the token is stale by conversation.
func TestTurnRunningBlocksConfirm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, rigOpts{})
	for _, p := range threeTurns {
		r.turn(p)
	}
	pv, err := r.ctl.Preview(ctx, rewind("cp2", checkpoint.ModeBoth))
	if err != nil {
		t.Fatal(err)
	}
	turnCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan checkpoint.TurnOutcome, 1)
	go func() {
		out, err := r.ctl.RunTurn(turnCtx, "sleep 600000", func(agent.Update) {})
		if err != nil {
			t.Errorf("turn: %v", err)
		}
		done <- out
	}()
	waitFor(t, "the turn to start", func() bool { return r.ctl.Running() != "" })
	ws := manifest(t, r.root)

	_, err = r.ctl.Confirm(ctx, rewind("cp2", checkpoint.ModeBoth), pv.Token)
	if checkpoint.CodeOf(err) != checkpoint.CodeTurnRunning || !strings.Contains(err.Error(), "cp4") {
		t.Fatalf("confirm during a turn: %v, want %s naming cp4", err, checkpoint.CodeTurnRunning)
	}
	_, err = r.ctl.RunTurn(ctx, "hello", func(agent.Update) {})
	if checkpoint.CodeOf(err) != checkpoint.CodeTurnRunning {
		t.Fatalf("second turn during a turn: %v", err)
	}
	waitFor(t, "cp4 to be journaled", func() bool {
		_, err := r.ctl.Preview(ctx, rewind("cp4", checkpoint.ModeBoth))
		return checkpoint.CodeOf(err) == checkpoint.CodeTurnRunning
	})
	r.requireManifest(ws, "during the turn")

	cancel()
	out := <-done
	if out.Status != agent.StatusCancelled {
		t.Fatalf("cancelled turn status %s", out.Status)
	}
	_, err = r.ctl.Confirm(ctx, rewind("cp2", checkpoint.ModeBoth), pv.Token)
	if checkpoint.CodeOf(err) != checkpoint.CodeConversationMove {
		t.Fatalf("confirm after the turn: %v, want %s", err, checkpoint.CodeConversationMove)
	}
	// The cancelled turn is rewindable like any other.
	r.restore(rewind("cp4", checkpoint.ModeBoth))
	if r.ctl.Head() != "cp3" {
		t.Fatalf("head after rewinding the cancelled turn: %s", r.ctl.Head())
	}
}

// A branch switch goes through the same gate as every restore: its
// preview may run while a turn or a background shell task can write the
// workspace, its confirm is refused (turn_running, writer_active) and
// changes nothing; a token from before a turn stays refused, and a new
// preview switches.
func TestBranchSwitchRefusedWhileAWriterRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, rigOpts{})
	r.turn("write a.txt\na\nEOF")
	r.turn("write b.txt\nb\nEOF")
	r.restore(checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp2"})
	r.turn("write c.txt\nc\nEOF")
	branch := checkpoint.Request{Action: checkpoint.ActionBranch, Target: "b1"}
	unchanged := func(what string, files map[string]entry, tl []byte, head string) {
		t.Helper()
		r.requireManifest(files, what)
		if string(r.timelineBytes()) != string(tl) || r.ctl.Head() != head {
			t.Fatalf("%s changed the timeline or the head", what)
		}
	}

	// A background shell task.
	stop := filepath.Join(t.TempDir(), "stop")
	args, _ := json.Marshal(map[string]any{"command": `while [ ! -e '` + stop + `' ]; do sleep 0.01; done`, "background": true})
	if res, err := r.ts.Run(ctx, "bash", string(args)); err != nil || res.IsError {
		t.Fatalf("start background task: %v %+v", err, res)
	}
	pv, err := r.ctl.Preview(ctx, branch)
	if err != nil {
		t.Fatalf("preview /branch b1 while a task runs: %v", err)
	}
	files, tl, head := manifest(t, r.root), r.timelineBytes(), r.ctl.Head()
	if _, err := r.ctl.Confirm(ctx, branch, pv.Token); checkpoint.CodeOf(err) != checkpoint.CodeWriterActive {
		t.Fatalf("confirm /branch b1 while a task runs: %v, want %s", err, checkpoint.CodeWriterActive)
	}
	unchanged("the refused confirm (task)", files, tl, head)
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the task to end", func() bool { return len(r.tasks.Active()) == 0 })

	// A turn running in the same process.
	done := make(chan error, 1)
	go func() {
		_, err := r.ctl.RunTurn(ctx, "sleep 1500", func(agent.Update) {})
		done <- err
	}()
	waitFor(t, "the turn to start", func() bool { return r.tl.State().OpenTurn != nil })
	if _, err := r.ctl.Confirm(ctx, branch, pv.Token); checkpoint.CodeOf(err) != checkpoint.CodeTurnRunning {
		t.Fatalf("confirm /branch b1 while a turn runs: %v, want %s", err, checkpoint.CodeTurnRunning)
	}
	r.requireManifest(files, "the refused confirm (turn)")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The turn moved the conversation: the old token is refused, a new
	// preview switches.
	if _, err := r.ctl.Confirm(ctx, branch, pv.Token); checkpoint.CodeOf(err) == "" {
		t.Fatal("a token from before a turn still switched the branch")
	}
	r.restore(branch)
	if r.ctl.Head() != "cp2" {
		t.Fatalf("after /branch b1: head %s", r.ctl.Head())
	}
}
