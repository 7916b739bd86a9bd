package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenAt: a session opened at a prefix reads only the events after
// it, hands out exactly the events a full open would (any suffix, found by
// bisection, and all of them), keeps appending with the right seq, and
// falls back to a full read when the prefix no longer matches.
func TestOpenAt(t *testing.T) {
	t.Parallel()
	dataDir, s := newSession(t)
	// Enough lines of varied length for bisection to take several steps
	// (it stops at 64 KiB).
	for i := 0; i < 3000; i++ {
		if _, err := s.Append("message", "cp1", map[string]any{"i": i, "text": strings.Repeat("y", i%97)}); err != nil {
			t.Fatal(err)
		}
	}
	pre, err := s.Prefix()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := s.Append("message", "cp2", map[string]any{"after": i}); err != nil {
			t.Fatal(err)
		}
	}
	full := s.Events()
	s.Close()

	open := func(p Prefix, ok bool) *Session {
		t.Helper()
		s, err := OpenAt(dataDir, s.ID, func(string) (Prefix, bool) { return p, ok })
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	same := func(what string, got []Event, want []Event) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d events, want %d", what, len(got), len(want))
		}
		for i := range got {
			if got[i].Seq != want[i].Seq || string(got[i].Data) != string(want[i].Data) || got[i].Type != want[i].Type {
				t.Fatalf("%s: event %d is %+v, want %+v", what, i, got[i], want[i])
			}
		}
	}

	r := open(pre, true)
	if r.Skipped() != 3000 || r.LastSeq() != 3005 {
		t.Fatalf("skipped %d, last seq %d", r.Skipped(), r.LastSeq())
	}
	for _, after := range []int64{3004, 3000, 2999, 2500, 1234, 17, 1, 0} {
		same("EventsAfter", r.EventsAfter(after), full[after:])
	}
	ev, err := r.Append("message", "cp3", nil)
	if err != nil || ev.Seq != 3006 {
		t.Fatalf("append after a resumed open: %+v %v", ev, err)
	}
	same("Events", r.Events()[:len(full)], full)
	r.Close()

	// A fresh resumed open straight to Events.
	r = open(pre, true)
	same("Events of a fresh open", r.Events()[:len(full)], full)
	r.Close()

	// A prefix whose hash does not match: read whole.
	bad := pre
	bad.Mark.Tail[0] ^= 1
	r = open(bad, true)
	if r.Skipped() != 0 {
		t.Fatal("a prefix that does not match was trusted")
	}
	same("Events after a mismatch", r.Events()[:len(full)], full)
	r.Close()

	// The skipped bytes edited in place (same length, the hash window
	// untouched): noticed when they are needed; the session turns
	// read-only rather than mixing two histories.
	path := filepath.Join(s.Dir, EventsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), `"seq":10,`)
	copy(b[i:], `"seq":19,`)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r = open(pre, true)
	defer r.Close()
	r.Events()
	if ro, why := r.ReadOnly(); !ro || !strings.Contains(why, "seq 19") {
		t.Fatalf("an edited prefix was not noticed: %v %q", ro, why)
	}
}
