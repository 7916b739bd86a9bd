package checkpoint_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// TestRecoveryRefsSurviveLostPreviews: previews.json only holds outstanding
// tokens, so losing it must not make a new preview reuse the name of a
// recovery snapshot the timeline still refers to (the redo slot, a past
// restore): that would move its ref and leave the tree to git gc.
func TestRecoveryRefsSurviveLostPreviews(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, rigOpts{})
	for _, p := range threeTurns {
		r.turn(p)
	}
	// Two restores: r1 (now history) and r2 (the redo slot).
	r.restore(rewind("cp3", checkpoint.ModeWorkspace))
	r.restore(checkpoint.Request{Action: checkpoint.ActionRedo})
	refs := map[string]string{}
	for _, n := range []string{"r1", "r2"} {
		refs[n] = gittest.Git(t, r.root, "rev-parse", "refs/yolop/checkpoints/"+r.id+"/"+n)
	}
	for _, damage := range []func(string) error{
		os.Remove,
		func(p string) error { return os.WriteFile(p, []byte("{not json"), 0o600) },
	} {
		if err := damage(filepath.Join(r.sess.Dir, "previews.json")); err != nil {
			t.Fatal(err)
		}
		write(t, r.root, "user.txt", "edited after the restores: the new recovery tree differs\n")
		pv, err := r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionRedo})
		if err != nil {
			t.Fatal(err)
		}
		if _, taken := refs[pv.Recovery]; taken {
			t.Fatalf("the new preview reused the recovery name %s", pv.Recovery)
		}
		for n, want := range refs {
			if got := gittest.Git(t, r.root, "rev-parse", "refs/yolop/checkpoints/"+r.id+"/"+n); got != want {
				t.Fatalf("recovery ref %s moved from %s to %s", n, want, got)
			}
		}
	}
}
