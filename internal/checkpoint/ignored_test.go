package checkpoint_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// appendExclude adds a rule to the repository's info/exclude, shared by
// every worktree and never part of a snapshot.
func appendExclude(t *testing.T, repo, rule string) {
	t.Helper()
	p := filepath.Join(repo, ".git", "info", "exclude")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(rule + "\n"); err != nil {
		t.Fatal(err)
	}
}

// An ignore rule added outside the workspace after a checkpoint keeps it
// restorable: the preview marks the file, the restore writes it byte for
// byte, and the next preview does not report it as changed outside turns.
func TestUndoRestoresFileIgnoredSinceCheckpoint(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	ctx := context.Background()
	r.turn("$ printf 'tmp\\r\\n' > foo.tmp")
	want := manifest(t, r.root)
	r.turn("$ rm foo.tmp; echo b > b")
	appendExclude(t, r.repo, "*.tmp")
	pv, err := r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionUndo})
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	var marked []string
	for _, p := range pv.Paths {
		if p.Ignored {
			marked = append(marked, p.Path)
		}
	}
	if len(marked) != 1 || marked[0] != "foo.tmp" {
		t.Fatalf("paths marked ignored = %q, want [foo.tmp] (paths %+v)", marked, pv.Paths)
	}
	res, err := r.ctl.Confirm(ctx, checkpoint.Request{Action: checkpoint.ActionUndo}, pv.Token)
	if err != nil {
		t.Fatalf("confirm: %v", err)
	}
	if res.PathsChanged != 2 {
		t.Errorf("paths changed = %d, want 2", res.PathsChanged)
	}
	r.requireManifest(want, "after the undo")
	// /redo brings back the state the undo left, and the ignored file
	// stays (it is left alone now).
	pv, err = r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionRedo})
	if err != nil {
		t.Fatalf("redo preview: %v", err)
	}
	for _, w := range pv.Warnings {
		if w.Kind == "changed_outside_turns" {
			t.Errorf("redo preview warns %q changed outside turns", w.Path)
		}
	}
	if _, err := r.ctl.Confirm(ctx, checkpoint.Request{Action: checkpoint.ActionRedo}, pv.Token); err != nil {
		t.Fatalf("redo: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(r.root, "b")); err != nil || string(b) != "b\n" {
		t.Errorf("b after redo = %q, %v", b, err)
	}
}

// A file⇄directory swap over an ignored file: the preview says what is in
// the way and gives no token; conversation-only is offered and works.
func TestPreviewReportsIgnoredFileInTheWay(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	ctx := context.Background()
	r.turn("$ echo one > thing")
	r.turn("$ rm thing && mkdir thing && echo data > thing/keep.txt && echo precious > thing/app.log")
	before := manifest(t, r.root)
	tl := r.timelineBytes()
	_, err := r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionUndo})
	if checkpoint.CodeOf(err) != checkpoint.CodeBlocked {
		t.Fatalf("preview: %v, want code %s", err, checkpoint.CodeBlocked)
	}
	msg := err.Error()
	for _, part := range []string{"thing/app.log (ignored file) is in the way of restoring the file thing; move it away", "nothing was changed", "/rewind cp2 conversation"} {
		if !strings.Contains(msg, part) {
			t.Errorf("message %q lacks %q", msg, part)
		}
	}
	if strings.Contains(msg, "snapshot:") {
		t.Errorf("message %q carries an internal prefix", msg)
	}
	r.requireManifest(before, "after the refused preview")
	if string(r.timelineBytes()) != string(tl) {
		t.Error("the refused preview changed the timeline")
	}
	// No recovery ref is left behind for a preview without a token.
	if out := gittest.Git(t, r.repo, "for-each-ref", "--format=%(refname)", "refs/yolop/checkpoints/"+r.id+"/r"); out != "" {
		t.Errorf("recovery refs left: %s", out)
	}
	// The conversation-only rewind it offers can be previewed.
	if _, err := r.ctl.Preview(ctx, rewind("cp2", checkpoint.ModeConversation)); err != nil {
		t.Fatalf("conversation-only preview: %v", err)
	}

	// Moved away, the restore goes through.
	if err := os.Remove(filepath.Join(r.root, "thing", "app.log")); err != nil {
		t.Fatal(err)
	}
	r.restore(checkpoint.Request{Action: checkpoint.ActionUndo})
	if b, err := os.ReadFile(filepath.Join(r.root, "thing")); err != nil || string(b) != "one\n" {
		t.Errorf("thing = %q, %v; want the file back", b, err)
	}
}

// An ignored file that appears between the preview and the confirm is
// found before anything is written, and said plainly.
func TestConfirmBlockedAfterPreview(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	ctx := context.Background()
	r.turn("$ echo one > thing")
	r.turn("$ rm thing && mkdir thing && echo data > thing/keep.txt")
	pv, err := r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionUndo})
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	write(t, r.root, "thing/app.log", "precious\n")
	before := manifest(t, r.root)
	_, err = r.ctl.Confirm(ctx, checkpoint.Request{Action: checkpoint.ActionUndo}, pv.Token)
	if checkpoint.CodeOf(err) != checkpoint.CodeBlocked {
		t.Fatalf("confirm: %v, want code %s", err, checkpoint.CodeBlocked)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "the files cannot be restored: thing/app.log (ignored file) is in the way") || strings.Contains(msg, "snapshot:") {
		t.Errorf("message = %q", msg)
	}
	r.requireManifest(before, "after the refused confirm")
	if b, err := os.ReadFile(filepath.Join(r.root, "thing", "app.log")); err != nil || string(b) != "precious\n" {
		t.Errorf("thing/app.log = %q, %v", b, err)
	}
	// The session stays usable.
	r.turn("$ echo next > next.txt")
}
