package checkpoint_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// failingJournal refuses the first record of one type, as a full disk would.
type failingJournal struct {
	checkpoint.Timeline
	typ    string
	failed bool
}

func (f *failingJournal) Append(r timeline.Record) error {
	if r.Type == f.typ && !f.failed {
		f.failed = true
		return errors.New("no space left on device")
	}
	return f.Timeline.Append(r)
}

// After a failed journal write the controller cannot know which record
// reached the disk: it refuses every mutation with a message that says to
// reopen, and reopening repairs the session so work continues.
func TestFailedJournalWriteRefusesUntilReopened(t *testing.T) {
	r := newRig(t, rigOpts{journal: func(tl checkpoint.Timeline) checkpoint.Timeline {
		return &failingJournal{Timeline: tl, typ: timeline.TypeTurnCompleted}
	}})
	if _, err := r.ctl.RunTurn(t.Context(), "write a.txt\none\nEOF", nil); err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("turn with a failing journal: %v", err)
	}
	_, err := r.ctl.RunTurn(t.Context(), "hello", nil)
	if checkpoint.CodeOf(err) != checkpoint.CodeReadOnly || !strings.Contains(err.Error(), "Reopen it") {
		t.Fatalf("next turn: %v; want read_only telling to reopen", err)
	}
	if _, err := r.ctl.Preview(t.Context(), checkpoint.Request{Action: checkpoint.ActionUndo}); checkpoint.CodeOf(err) != checkpoint.CodeReadOnly {
		t.Fatalf("preview: %v; want read_only", err)
	}
	r.reopen()
	if len(r.notes) == 0 || !strings.Contains(strings.Join(r.notes, " "), "turn cp1 was interrupted") {
		t.Fatalf("repair notes after reopen: %q", r.notes)
	}
	out, err := r.ctl.RunTurn(t.Context(), "hello again", nil)
	if err != nil || out.ID != "cp2" || out.Status != "completed" {
		t.Fatalf("turn after reopen: %+v %v", out, err)
	}
}
