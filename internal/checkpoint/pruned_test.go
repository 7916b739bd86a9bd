package checkpoint_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// Snapshots pruned from the repository (refs deleted by hand, then git gc):
// a rewind of the files says they are gone instead of passing on git's
// "bad object", and a conversation rewind still works.
func TestRewindToAPrunedSnapshot(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	r.turn("$ echo one > a.txt")
	r.turn("$ echo two > b.txt")
	r.eng.Wait()
	refs := gittest.Git(t, r.repo, "for-each-ref", "--format=%(refname)", "refs/yolop/")
	for _, ref := range strings.Fields(refs) {
		gittest.Git(t, r.repo, "update-ref", "-d", ref)
	}
	gittest.Git(t, r.repo, "reflog", "expire", "--expire=now", "--all")
	gittest.Git(t, r.repo, "gc", "-q", "--prune=now")
	// The preview finds the snapshot gone and says what is still possible.
	_, err := r.ctl.Preview(context.Background(), checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp2", Mode: checkpoint.ModeBoth})
	if checkpoint.CodeOf(err) != checkpoint.CodeNoWorkspace || !strings.Contains(err.Error(), "the files of cp2 are gone from the repository") {
		t.Fatalf("Preview = %v (code %q)", err, checkpoint.CodeOf(err))
	}
	// From then on the listing (which runs no git) no longer claims the
	// pruned snapshot, in this process and the next: cp2's tree (a.txt
	// added) is gone, cp1's is the base commit's tree, still there.
	for _, reopen := range []bool{false, true} {
		if reopen {
			r.reopen()
		}
		rows, err := r.ctl.List(context.Background(), false)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, row := range rows {
			got[row.ID] = fmt.Sprintf("%v %s", row.Workspace, row.Reason)
		}
		if want := (map[string]string{"cp2": "false " + checkpoint.PrunedReason, "cp1": "true "}); !reflect.DeepEqual(got, want) {
			t.Errorf("rows (reopened %v) = %q, want %q", reopen, got, want)
		}
	}
	r.restore(checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp2", Mode: checkpoint.ModeConversation})
}
