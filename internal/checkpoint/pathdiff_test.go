package checkpoint_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	pv, err := r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp2"})
	if err != nil {
		t.Fatal(err)
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
	conv, err := r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp2", Mode: checkpoint.ModeConversation})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ctl.PreviewDiff(ctx, conv.Token, "a.txt"); checkpoint.CodeOf(err) != checkpoint.CodeNoWorkspace {
		t.Fatalf("conversation-only preview: err = %v", err)
	}
	// Nothing changed: the preview still confirms.
	if _, err := r.ctl.Confirm(ctx, checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp2", Mode: checkpoint.ModeBoth}, pv.Token); err != nil {
		t.Fatalf("confirm after diffs: %v", err)
	}
}
