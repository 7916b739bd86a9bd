package checkpoint_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/checkpoint"
)

// The diff of one path in a preview is what confirming it does to that
// file: from the current bytes to the checkpoint's.
func TestPreviewDiffShowsOnePath(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	ctx := context.Background()
	r.turn("write a.txt\nhello\nEOF")
	r.turn("write a.txt\nhello again\nEOF")
	if err := os.WriteFile(filepath.Join(r.root, "img.bin"), []byte{0, 1, 2, 3}, 0o644); err != nil {
		t.Fatal(err)
	}
	conv, err := r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp2", Mode: checkpoint.ModeConversation})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ctl.PreviewDiff(ctx, conv.Token, "a.txt"); checkpoint.CodeOf(err) != checkpoint.CodeNoWorkspace {
		t.Fatalf("conversation-only preview: err = %v", err)
	}
	// A newer preview replaces it (its token and recovery snapshot expire).
	pv, err := r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ctl.PreviewDiff(ctx, conv.Token, "a.txt"); checkpoint.CodeOf(err) != checkpoint.CodeTokenExpired {
		t.Fatalf("replaced preview: err = %v", err)
	}
	d, err := r.ctl.PreviewDiff(ctx, pv.Token, "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if d.Change != "modified" || d.Binary || d.From != pv.Recovery || d.To != "cp2" ||
		!strings.Contains(d.Patch, "\n-hello again\n+hello\n") {
		t.Fatalf("diff of a.txt = %+v", d)
	}
	d, err = r.ctl.PreviewDiff(ctx, pv.Token, "img.bin")
	if err != nil {
		t.Fatal(err)
	}
	if d.Change != "deleted" || !d.Binary || d.OldSize != 4 || d.NewSize != -1 {
		t.Fatalf("diff of img.bin = %+v", d)
	}
	d, err = r.ctl.PreviewDiff(ctx, pv.Token, "src/main.go")
	if err != nil || !d.Unchanged || d.Patch != "" {
		t.Fatalf("diff of an unchanged path = %+v, %v", d, err)
	}
	if _, err := r.ctl.PreviewDiff(ctx, "nosuchtoken", "a.txt"); checkpoint.CodeOf(err) != checkpoint.CodeUnknownToken {
		t.Fatalf("unknown token: err = %v", err)
	}
	// Nothing changed: the preview still confirms.
	if _, err := r.ctl.Confirm(ctx, checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp2", Mode: checkpoint.ModeBoth}, pv.Token); err != nil {
		t.Fatalf("confirm after diffs: %v", err)
	}
}

// During a turn the session's info counts the turn's checkpoint and no
// longer offers a redo the turn cleared.
func TestInfoDuringTurn(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	r.turn("write a.txt\nhello\nEOF")
	r.turn("write b.txt\nhi\nEOF")
	r.restore(checkpoint.Request{Action: checkpoint.ActionUndo})
	if in := r.app.Info(); in.Checkpoints != 1 || !in.RedoAvailable || in.Running != "" {
		t.Fatalf("info before the turn: %+v", in)
	}
	var during []string
	_, err := r.app.Prompt(context.Background(), "write c.txt\nx\nEOF", func(agent.Update) {
		in := r.app.Info()
		during = append(during, fmt.Sprintf("%d %v %s", in.Checkpoints, in.RedoAvailable, in.Running))
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(during) == 0 || during[0] != "2 false cp3" {
		t.Fatalf("info during the turn: %q, want \"2 false cp3\" from the first update", during)
	}
	if in := r.app.Info(); in.Checkpoints != 2 || in.RedoAvailable || in.Running != "" {
		t.Fatalf("info after the turn: %+v", in)
	}
}
