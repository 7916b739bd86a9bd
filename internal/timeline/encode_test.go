package timeline

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// sameState compares two states field by field (times by instant).
func sameState(t *testing.T, what string, got, want *State) {
	t.Helper()
	norm := func(s *State) string {
		c := s.Clone()
		b, err := json.Marshal(struct {
			S     *State
			Trail []Record
		}{c, c.fullTrail()})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if g, w := norm(got), norm(want); g != w {
		t.Fatalf("%s: state differs:\n%s\nwant\n%s", what, g, w)
	}
	if !maps.Equal(got.upper, want.upper) || got.maxSeq != want.maxSeq || got.LastUsed.UnixNano() != want.LastUsed.UnixNano() {
		t.Fatalf("%s: index differs: %v %d, want %v %d", what, got.upper, got.maxSeq, want.upper, want.maxSeq)
	}
	if !reflect.DeepEqual(got.Branches(), want.Branches()) {
		t.Fatalf("%s: branches differ", what)
	}
}

// TestStateRoundTrip: a state decoded from its encoding is the state it
// was encoded from, at every point of a history with rewinds, redos, an
// open turn and a pending restore, and applying the rest of the records to
// it gives the state built from all of them.
func TestStateRoundTrip(t *testing.T) {
	t.Parallel()
	recs := history(40)
	if recs[0].Type != TypeCheckpointCreated {
		t.Fatalf("history starts with %s", recs[0].Type)
	}
	recs[0].PromptBytes = 1 << 20 // a long prompt's kept start
	if recs[1].Type != TypeTurnCompleted {
		t.Fatalf("history's second record is %s", recs[1].Type)
	}
	recs[1].Paths = []string{} // recorded, and empty: not the same as not recorded
	// A pending restore at the end (a crash mid-restore), after the open
	// turn is closed.
	last := recs[len(recs)-1]
	recs = append(recs, completed(last.Checkpoint, last.SeqBefore+3, StatusInterrupted))
	recs = append(recs, rewind("r99", "cp3", ModeBoth, last.Checkpoint, "cp2")[0])
	for i := 0; i <= len(recs); i++ {
		st := Build(recs[:i])
		if st.ReadOnly {
			t.Fatalf("history prefix %d is not valid: %s", i, st.ReadOnlyReason)
		}
		b, err := AppendState(nil, st)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeState(b)
		if err != nil {
			t.Fatalf("prefix %d: %v", i, err)
		}
		sameState(t, "decoded", got, st)
		for _, r := range recs[i:] {
			if err := got.Apply(r); err != nil {
				t.Fatalf("prefix %d: applying %s to the decoded state: %v", i, r.Type, err)
			}
		}
		sameState(t, "decoded and extended", got, Build(recs))
	}
	if _, err := AppendState(nil, Build([]Record{{V: 1, Type: "bogus"}})); err == nil {
		t.Fatal("a read-only state was encoded")
	}
}

// TestOpenLogAt: the journal opened at a mark parses only what follows it;
// a mark the file no longer matches replays the file.
func TestOpenLogAt(t *testing.T) {
	t.Parallel()
	recs := history(30)
	path := filepath.Join(t.TempDir(), FileName)
	half := len(recs) / 2
	if err := os.WriteFile(path, encode(recs[:half]), 0o600); err != nil {
		t.Fatal(err)
	}
	l, st, _, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := l.Mark()
	if err != nil {
		t.Fatal(err)
	}
	b, err := AppendState(nil, st)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs[half:] {
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	// Append stamped the records' times: the file is the reference.
	full, want, _, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	full.Close()

	dec, _ := DecodeState(b)
	l, _, resumed, err := OpenLogAt(path, dec, m)
	if err != nil || !resumed {
		t.Fatalf("open at the mark: resumed %v, %v", resumed, err)
	}
	sameState(t, "resumed", l.Live(), want)
	l.Close()

	// The file no longer starts with the marked prefix.
	bad := m
	bad.Tail[3] ^= 1
	dec, _ = DecodeState(b)
	l, _, resumed, err = OpenLogAt(path, dec, bad)
	if err != nil || resumed {
		t.Fatalf("open at a wrong mark: resumed %v, %v", resumed, err)
	}
	sameState(t, "replayed", l.Live(), want)
	l.Close()
}

// FuzzDecodeState: no input makes DecodeState panic, and what it accepts
// encodes again.
func FuzzDecodeState(f *testing.F) {
	for _, n := range []int{0, 3, 15} {
		b, err := AppendState(nil, Build(history(n)))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := DecodeState(data)
		if err != nil {
			return
		}
		if _, err := AppendState(nil, st); err != nil {
			t.Fatalf("a decoded state does not encode: %v", err)
		}
	})
}

// TestShortPrompt: a prompt up to PromptKept bytes is kept whole; a longer
// one is cut at a character boundary at most PromptKept bytes in, with its
// whole length.
func TestShortPrompt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		prompt     string
		keep       int
		wholeBytes int64
	}{
		{"short", "fix the parser", 14, 0},
		{"exactly the limit", strings.Repeat("a", PromptKept), PromptKept, 0},
		{"one byte over", strings.Repeat("a", PromptKept+1), PromptKept, PromptKept + 1},
		{"a character across the cut", strings.Repeat("a", PromptKept-1) + "é" + "tail", PromptKept - 1, PromptKept + 5},
		{"four-byte characters", strings.Repeat("😀", PromptKept), PromptKept, 4 * PromptKept},
		{"invalid UTF-8 at the cut", strings.Repeat("a", PromptKept-1) + "\xff\xfe" + "tail", PromptKept, PromptKept + 5},
	} {
		kept, whole := ShortPrompt(tc.prompt)
		if len(kept) != tc.keep || whole != tc.wholeBytes || !strings.HasPrefix(tc.prompt, kept) {
			t.Errorf("%s: kept %d bytes, whole %d; want %d, %d", tc.name, len(kept), whole, tc.keep, tc.wholeBytes)
		}
	}
}
