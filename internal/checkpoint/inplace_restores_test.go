package checkpoint_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/config"
)

// TestInPlaceRewindPastAWorkspaceRestore: a workspace-only restore changes
// the files after the head without moving it; a later rewind in place
// takes it back too (newest first), so the user's line, which survived
// only until an agent turn overwrote the file, comes back and the turns
// the restore already undid are not taken back twice.
func TestInPlaceRewindPastAWorkspaceRestore(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{workspace: config.WorkspaceInPlace})
	f := filepath.Join(r.root, "f.txt")
	r.turn("write f.txt\na\nb\nc\nEOF")
	if err := os.WriteFile(f, []byte("a\nb-user\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.turn("write f.txt\nthree\nEOF")
	r.turn("write f.txt\nfour\nEOF")
	r.turn("$ echo five >> f.txt")
	r.restore(checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp3", Mode: checkpoint.ModeWorkspace})
	if b, _ := os.ReadFile(f); string(b) != "three\n" {
		t.Fatalf("after the workspace rewind to cp3: f.txt = %q, want what cp2 left", b)
	}
	r.turn("write other.txt\nsix\nEOF")
	res := r.restore(checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp1", Mode: checkpoint.ModeWorkspace})
	b, err := os.ReadFile(f)
	if err != nil || !strings.Contains(string(b), "b-user") {
		t.Fatalf("after the rewind to cp1: f.txt = %q (%v), want the user's version kept; outcomes %+v", b, err, res.Paths)
	}
	if _, err := os.Stat(filepath.Join(r.root, "other.txt")); !os.IsNotExist(err) {
		t.Fatalf("other.txt: %v, want removed with the turn that wrote it", err)
	}
}
