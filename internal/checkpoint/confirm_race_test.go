package checkpoint_test

import (
	"context"
	"sync"
	"testing"

	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// TestConcurrentConfirmsOfOneToken: a token confirms once even when two
// callers race with it: exactly one restore happens, the other caller gets
// token_used, and the timeline holds one head.moved.
func TestConcurrentConfirmsOfOneToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, rigOpts{})
	r.turn(threeTurns[0])
	atCP2 := manifest(t, r.root)
	r.turn(threeTurns[1])
	r.turn(threeTurns[2])
	pv, err := r.ctl.Preview(ctx, rewind("cp2", checkpoint.ModeBoth))
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = r.ctl.Confirm(ctx, rewind("cp2", checkpoint.ModeBoth), pv.Token)
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch checkpoint.CodeOf(err) {
		case "":
			if err != nil {
				t.Fatalf("confirm: %v", err)
			}
			ok++
		case checkpoint.CodeTokenUsed:
		default:
			t.Fatalf("confirm: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d confirms succeeded, want 1", ok)
	}
	if r.ctl.Head() != "cp1" {
		t.Fatalf("head %q, want cp1", r.ctl.Head())
	}
	r.requireManifest(atCP2, "after the confirms")
	if got := countRecords(t, r, "head.moved"); got != 1 {
		t.Fatalf("%d head.moved records, want 1", got)
	}
}

// countRecords counts the timeline records of one type.
func countRecords(t *testing.T, r *rig, typ string) int {
	t.Helper()
	recs, err := timeline.ReadRecords(r.sess.Path(session.TimelineFile))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, rec := range recs {
		if rec.Type == typ {
			n++
		}
	}
	return n
}
