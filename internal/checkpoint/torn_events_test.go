package checkpoint_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/app"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/session"
)

// A torn end of events.jsonl can drop records the timeline already names
// (turn.completed's final_seq). Reopening must leave a session that runs:
// the lost seqs are recorded as lost, new events continue after the
// highest seq either journal has seen, and the next open finds both
// journals intact.
func TestTornEventsTailDoesNotWedgeTheSession(t *testing.T) {
	t.Parallel()
	tears := []struct {
		name string
		lose int // whole records lost
		tear func(data []byte, lines [][]byte) []byte
	}{
		{"half of the last record", 1, func(data []byte, lines [][]byte) []byte {
			last := lines[len(lines)-1]
			return data[:len(data)-len(last)+len(last)/2]
		}},
		{"last record zeroed", 1, func(data []byte, lines [][]byte) []byte {
			last := lines[len(lines)-1]
			out := bytes.Clone(data)
			clear(out[len(out)-len(last):])
			return out
		}},
		{"torn inside the record before the last", 2, func(data []byte, lines [][]byte) []byte {
			n := len(lines)
			cut := len(data) - len(lines[n-1]) - len(lines[n-2])/2
			return data[:cut]
		}},
	}
	for _, tc := range tears {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{})
			r.turn(threeTurns[0])
			r.turn(threeTurns[1])
			hi := r.sess.LastSeq()
			if got := finalSeq(t, r.timelineBytes(), "cp2"); got != hi {
				t.Fatalf("turn.completed of cp2 names seq %d, want the last event %d", got, hi)
			}
			path := r.sess.Path(session.EventsFile)
			r.close()

			data := readFile(t, path)
			lines := bytes.SplitAfter(data, []byte("\n"))
			lines = lines[:len(lines)-1] // the empty piece after the final newline
			if err := os.WriteFile(path, tc.tear(data, lines), 0o600); err != nil {
				t.Fatal(err)
			}

			r.open(r.env, app.Resume{ID: r.id})
			if ro := r.ctl.ReadOnly(); ro != "" {
				t.Fatalf("a torn tail made the session read-only: %s", ro)
			}
			if !strings.Contains(strings.Join(r.notes, "\n"), "torn") {
				t.Errorf("the repair notes do not say the event log was torn: %q", r.notes)
			}
			if got := r.sess.LastSeq(); got != hi {
				t.Fatalf("after Repair the log ends at %d, want %d (the lost seqs recorded)", got, hi)
			}
			lost := 0
			for _, ev := range r.sess.Events() {
				if ev.Seq > hi-int64(tc.lose) {
					if ev.Type != agent.EventNotice || ev.Turn != "cp2" || !strings.Contains(string(ev.Data), checkpoint.EventLost) {
						t.Errorf("seq %d stands in for a lost event as %s turn %q %s", ev.Seq, ev.Type, ev.Turn, ev.Data)
					}
					lost++
				}
			}
			if lost != tc.lose {
				t.Errorf("%d lost events recorded, want %d", lost, tc.lose)
			}

			// The next turn runs, and its events follow the highest seq.
			r.turn(threeTurns[2])
			var cp3 []int64
			for _, ev := range r.sess.Events() {
				if ev.Turn == "cp3" {
					cp3 = append(cp3, ev.Seq)
				}
			}
			if len(cp3) == 0 || cp3[0] != hi+1 {
				t.Fatalf("turn cp3's events have seqs %v, want them to start at %d", cp3, hi+1)
			}

			// Both journals stay consistent across another open, and
			// rewinding across the repaired turn works.
			before := manifest(t, r.root)
			r.reopen()
			if ro := r.ctl.ReadOnly(); ro != "" {
				t.Fatalf("reopened read-only: %s", ro)
			}
			if len(r.notes) != 0 {
				t.Errorf("a second open repaired again: %q", r.notes)
			}
			r.restore(rewind("cp2", checkpoint.ModeBoth))
			r.restore(checkpoint.Request{Action: checkpoint.ActionRedo})
			r.requireManifest(before, "after rewind and redo")
			r.turn("echo after")
		})
	}
}

// A timeline that names far more events than the log holds was not
// damaged by a torn write; the session must open read-only with the fork
// advice rather than refuse every turn with an inconsistency.
func TestEventsFarBehindTimelineIsReadOnlyWithForkAdvice(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	r.turn(threeTurns[0])
	tlPath := r.sess.Path(session.TimelineFile)
	hi := r.sess.LastSeq()
	r.close()

	tl := readFile(t, tlPath)
	old := []byte(`"final_seq":` + strconv.FormatInt(hi, 10))
	if !bytes.Contains(tl, old) {
		t.Fatalf("timeline has no %s:\n%s", old, tl)
	}
	if err := os.WriteFile(tlPath, bytes.Replace(tl, old, []byte(`"final_seq":50000`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	r.reopen()
	ro := r.ctl.ReadOnly()
	if ro == "" {
		t.Fatal("a log 50000 events behind its timeline was opened writable")
	}
	if !strings.Contains(strings.Join(r.notes, "\n"), "sessions fork "+r.id) {
		t.Errorf("the open notes give no fork advice: %q", r.notes)
	}
	_, err := r.ctl.RunTurn(context.Background(), "echo x", nil)
	var ce *checkpoint.Error
	if !errors.As(err, &ce) || ce.Code != checkpoint.CodeReadOnly || !strings.Contains(err.Error(), "sessions fork "+r.id) {
		t.Fatalf("turn on the read-only session: %v; want a read-only refusal with the fork advice", err)
	}
	if r.sess.LastSeq() != hi {
		t.Errorf("the refused session wrote events: log ends at %d, was %d", r.sess.LastSeq(), hi)
	}
}

var finalSeqRE = regexp.MustCompile(`"final_seq":(\d+)`)

// finalSeq is the final_seq of cp's turn.completed in timeline.jsonl.
func finalSeq(t *testing.T, timeline []byte, cp string) int64 {
	t.Helper()
	for _, line := range strings.Split(string(timeline), "\n") {
		if !strings.Contains(line, `"turn.completed"`) || !strings.Contains(line, `"checkpoint":"`+cp+`"`) {
			continue
		}
		if m := finalSeqRE.FindStringSubmatch(line); m != nil {
			n, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no turn.completed for %s in the timeline", cp)
	return 0
}
