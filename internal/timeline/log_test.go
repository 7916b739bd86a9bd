package timeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// writeLog appends recs through a Log and returns the file path and bytes.
func writeLog(t *testing.T, recs []Record) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	l, got, rep, err := OpenLog(path)
	if err != nil || len(got) != 0 || len(rep.Notes()) != 0 {
		t.Fatalf("OpenLog of a new file: %v %v %v", got, rep, err)
	}
	for _, r := range recs {
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, data
}

func lineStart(data []byte, i int) int {
	off := 0
	for ; i > 0; i-- {
		off += bytes.IndexByte(data[off:], '\n') + 1
	}
	return off
}

func TestLogRoundTripAndAppendChecks(t *testing.T) {
	t.Parallel()
	recs := cat(three(), rewind("r1", "cp2", ModeBoth, "cp3", "cp1"))
	path, data := writeLog(t, recs)
	if n := bytes.Count(data, []byte("\n")); n != len(recs) {
		t.Fatalf("%d lines for %d records", n, len(recs))
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("timeline mode %v, want 0600", fi.Mode())
	}
	os.Chmod(path, 0o644)
	l, st, rep, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode not re-applied: %v", fi.Mode())
	}
	if st.Head != "cp1" || st.ReadOnly || len(rep.Notes()) != 0 || st.Records != len(recs) {
		t.Fatalf("reloaded state head=%q ro=%v notes=%v records=%d", st.Head, st.ReadOnly, rep.Notes(), st.Records)
	}
	// A record that does not fit is refused and nothing is written.
	for _, bad := range []Record{
		created("cp4", "cp3", 16),                            // parent is not the head
		completed("cp1", 20, StatusCompleted),                // no open turn
		{Type: "bogus"},                                      // unknown type
		{Type: typeCorrupt, Reason: "x"},                     // the in-memory marker
		moved("r2", "cp1", ModeBoth, "cp3", "", false),       // stale old head
		started("r2", "cp1", "everything", "cp1", "", false), // unknown mode
	} {
		if err := l.Append(bad); err == nil {
			t.Errorf("Append(%+v) accepted", bad)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
		t.Fatal("a refused Append changed the file")
	}
	if err := l.Append(created("cp4", "cp1", 16)); err != nil {
		t.Fatal(err)
	}
	if s := l.State(); s.OpenTurn == nil || s.OpenTurn.ID != "cp4" || s.Redo != nil {
		t.Fatalf("state after append: %+v", s)
	}
}

func TestLogCorruption(t *testing.T) {
	t.Parallel()
	recs := cat(three(), rewind("r1", "cp2", ModeBoth, "cp3", "cp1"), []Record{created("cp4", "cp1", 16), completed("cp4", 20, StatusCompleted)})
	n := len(recs)
	tests := []struct {
		name     string
		mutate   func([]byte) []byte
		survive  int // records applied
		repaired bool
		readOnly string
	}{
		{"truncated mid-record", func(d []byte) []byte { return d[:lineStart(d, n-1)+20] }, n - 1, true, ""},
		{"missing newline", func(d []byte) []byte { return d[:len(d)-1] }, n - 1, true, ""},
		{"zeroed tail sector", func(d []byte) []byte {
			start := lineStart(d, n-2) + 3
			for i := start; i < len(d); i++ {
				d[i] = 0
			}
			return d
		}, n - 2, true, ""},
		{"zero blocks after the end", func(d []byte) []byte { return append(d, make([]byte, 4096)...) }, n, true, ""},
		{"garbled byte in the prefix", func(d []byte) []byte { d[lineStart(d, 3)+1] = 'X'; return d }, 3, false, "line 4"},
		{"well-formed unknown type in the prefix", func(d []byte) []byte {
			i := lineStart(d, 2)
			return append(append(bytes.Clone(d[:i]), []byte(`{"v":1,"type":"checkpoint.renamed","ts":"2026-01-01T00:00:00Z"}`+"\n")...), d[i:]...)
		}, 2, false, "unknown record type"},
		{"well-formed unknown type at the end", func(d []byte) []byte {
			return append(d, []byte(`{"v":2,"type":"future.thing","ts":"2026-01-01T00:00:00Z"}`+"\n")...)
		}, n, false, "version 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path, data := writeLog(t, recs)
			mutated := tt.mutate(bytes.Clone(data))
			os.WriteFile(path, mutated, 0o600)

			// Read-only views see the same state and write nothing.
			ro, err := ReadRecords(path)
			if err != nil {
				t.Fatal(err)
			}
			roState := Build(ro)

			l, st, rep, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if st.Records != tt.survive || roState.Records != tt.survive {
				t.Fatalf("%d records survive (read-only view %d), want %d", st.Records, roState.Records, tt.survive)
			}
			if st.ReadOnly != (tt.readOnly != "") || !strings.Contains(st.ReadOnlyReason, tt.readOnly) || roState.ReadOnly != st.ReadOnly {
				t.Fatalf("read-only %v %q (view %v), want %q", st.ReadOnly, st.ReadOnlyReason, roState.ReadOnly, tt.readOnly)
			}
			after, _ := os.ReadFile(path)
			kept, _ := filepath.Glob(path + ".corrupt-*")
			if !tt.repaired {
				if !bytes.Equal(after, mutated) || len(kept) != 0 {
					t.Fatal("a damaged prefix was modified")
				}
				if err := l.Append(Record{Type: TypeRedoCleared}); err == nil || !strings.Contains(err.Error(), "read-only") {
					t.Fatalf("Append to a read-only timeline: %v", err)
				}
				return
			}
			if len(kept) != 1 || rep.KeptAt != kept[0] || len(rep.Notes()) != 1 {
				t.Fatalf("kept=%v rep=%+v", kept, rep)
			}
			aside, _ := os.ReadFile(kept[0])
			if !bytes.Equal(append(bytes.Clone(after), aside...), mutated) {
				t.Fatal("prefix + kept tail != original bytes")
			}
			// The repaired file alone rebuilds the same state.
			if recs, err := ReadRecords(path); err != nil || Build(recs).Records != tt.survive || Parse(after).Tail != 0 {
				t.Fatalf("repaired file: %d records, %v", len(recs), err)
			}
			if err := l.Append(Record{Type: TypeRedoCleared}); err != nil {
				t.Fatalf("append after repair: %v", err)
			}
			final, _ := os.ReadFile(path)
			if p := Parse(final); p.Corrupt != nil || p.Tail != 0 || len(p.Records) != tt.survive+1 {
				t.Fatalf("after repair and append: %+v", p)
			}
		})
	}
}

func TestOpenLogMarkerMakesBuildReadOnly(t *testing.T) {
	t.Parallel()
	path, data := writeLog(t, three())
	data[lineStart(data, 1)] = '#'
	os.WriteFile(path, data, 0o600)
	l, recs, rep, err := OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if rep.Corrupt == nil || !errors.Is(rep.Corrupt, ErrCorrupt) || rep.Corrupt.Line != 2 {
		t.Fatalf("repair = %+v", rep)
	}
	// A caller that keeps the records and appends more still sees the damage.
	st := Build(append(recs, Record{V: 1, Type: TypeRedoCleared}))
	if !st.ReadOnly || st.Records != 1 || !strings.Contains(st.ReadOnlyReason, "line 2") {
		t.Fatalf("Build of OpenLog records: ro=%v records=%d %q", st.ReadOnly, st.Records, st.ReadOnlyReason)
	}
}

func TestSymlinkRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.WriteFile(target, nil, 0o644)
	for _, name := range []string{FileName, CompactionsFileName} {
		link := filepath.Join(dir, name)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, _, err := OpenLog(filepath.Join(dir, FileName)); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("OpenLog through a symlink: %v", err)
	}
	if _, _, err := OpenCompactions(filepath.Join(dir, CompactionsFileName)); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("OpenCompactions through a symlink: %v", err)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o644 {
		t.Errorf("symlink target chmod'ed to %v", fi.Mode())
	}
}

func comp(provider string, seq int64, turn string) Compaction {
	return Compaction{Provider: provider, Model: "m", Format: 1, SourceSeq: seq, Turn: turn, Replacement: json.RawMessage(fmt.Sprintf(`{"summary":"up to %d"}`, seq))}
}

func TestCompactionStore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), CompactionsFileName)
	c, all, err := OpenCompactions(path)
	if err != nil || len(all) != 0 {
		t.Fatal(all, err)
	}
	for i := int64(1); i <= 5; i++ {
		if err := c.Append(comp("sim", i*10, "cp1")); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Append(Compaction{Provider: "sim", Model: "m", Format: 1, SourceSeq: 3}); err == nil {
		t.Fatal("compaction without replacement accepted")
	}
	if len(c.All()) != 5 {
		t.Fatalf("All() = %d records", len(c.All()))
	}
	c.Close()
	data, _ := os.ReadFile(path)

	tests := []struct {
		name     string
		mutate   func([]byte) []byte
		survive  int
		repaired bool
		corrupt  bool
	}{
		{"intact", func(d []byte) []byte { return d }, 5, false, false},
		{"truncated mid-record", func(d []byte) []byte { return d[:len(d)-7] }, 4, true, false},
		{"zeroed tail", func(d []byte) []byte {
			for i := lineStart(d, 3) + 2; i < len(d); i++ {
				d[i] = 0
			}
			return d
		}, 3, true, false},
		{"garbled byte in prefix", func(d []byte) []byte { d[lineStart(d, 1)] = '['; return d }, 1, false, true},
		{"invalid fields in prefix", func(d []byte) []byte {
			return bytes.Replace(d, []byte(`"source_seq":20`), []byte(`"source_seq":-2`), 1)
		}, 1, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(t.TempDir(), CompactionsFileName)
			mutated := tt.mutate(bytes.Clone(data))
			os.WriteFile(p, mutated, 0o644)
			c, got, err := OpenCompactions(p)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want 0600", fi.Mode())
			}
			if len(got) != tt.survive {
				t.Fatalf("%d records survive, want %d", len(got), tt.survive)
			}
			rep := c.Repair()
			if (rep.Dropped > 0) != tt.repaired || (rep.Corrupt != nil) != tt.corrupt {
				t.Fatalf("repair = %+v", rep)
			}
			err = c.Append(comp("sim", 99, "cp2"))
			if tt.corrupt {
				if err == nil {
					t.Fatal("append to a corrupt store accepted")
				}
				if after, _ := os.ReadFile(p); !bytes.Equal(after, mutated) {
					t.Fatal("a corrupt store was modified")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			after, _ := os.ReadFile(p)
			if s := ParseCompactions(after); s.Corrupt != nil || s.Tail != 0 || len(s.Records) != tt.survive+1 {
				t.Fatalf("after append: %+v", s)
			}
		})
	}
}

func TestSelect(t *testing.T) {
	t.Parallel()
	// cp1 (0,5], cp2 (5,10] rewound away, cp3 parent cp1 (10,15].
	st := Build(cat(three()[:4], rewind("r1", "cp2", ModeBoth, "cp2", "cp1"), []Record{created("cp3", "cp1", 11), completed("cp3", 15, StatusCompleted)}))
	if st.ReadOnly {
		t.Fatal(st.ReadOnlyReason)
	}
	tests := []struct {
		name string
		all  []Compaction
		want int64 // SourceSeq of the selected record; 0 = none
	}{
		{"none", nil, 0},
		{"active ancestor", []Compaction{comp("sim", 4, "cp1")}, 4},
		{"abandoned suffix never shadows the ancestor", []Compaction{comp("sim", 4, "cp1"), comp("sim", 9, "cp2")}, 4},
		{"latest active wins", []Compaction{comp("sim", 4, "cp1"), comp("sim", 9, "cp2"), comp("sim", 14, "cp3")}, 14},
		{"monotonic: an older boundary written later is ignored", []Compaction{comp("sim", 14, "cp3"), comp("sim", 4, "cp1")}, 14},
		{"equal boundary keeps the first", []Compaction{comp("sim", 4, "cp1"), func() Compaction { c := comp("sim", 4, "cp1"); c.Replacement = json.RawMessage(`"second"`); return c }()}, 4},
		{"other provider ignored", []Compaction{comp("openai", 14, "cp3"), comp("sim", 3, "cp1")}, 3},
		{"other format ignored", []Compaction{func() Compaction { c := comp("sim", 14, "cp3"); c.Format = 2; return c }()}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Select(tt.all, "sim", "m", 1, st.InActiveRange)
			switch {
			case tt.want == 0 && got != nil:
				t.Fatalf("selected %+v, want none", got)
			case tt.want != 0 && (got == nil || got.SourceSeq != tt.want):
				t.Fatalf("selected %+v, want source seq %d", got, tt.want)
			}
			if tt.name == "equal boundary keeps the first" && string(got.Replacement) == `"second"` {
				t.Fatal("an equal boundary replaced the installed record")
			}
		})
	}
}

// TestWrittenRecordsTakeTheFastPath: every record the journal writes is
// decoded by fastRecord, to the record written.
func TestWrittenRecordsTakeTheFastPath(t *testing.T) {
	t.Parallel()
	recs := history(40)
	recs[0].PromptBytes = 1 << 20 // a long prompt's kept start
	_, data := writeLog(t, recs)
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	if len(lines) != len(recs) {
		t.Fatalf("%d lines for %d records", len(lines), len(recs))
	}
	for i, l := range lines {
		got, ok := fastRecord(l)
		if !ok {
			t.Fatalf("line %d not decoded by the fast path: %s", i+1, l)
		}
		var want Record
		if err := json.Unmarshal(l, &want); err != nil {
			t.Fatal(err)
		}
		got.Time, want.Time = time.Time{}, time.Time{}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("line %d: %+v, want %+v", i+1, got, want)
		}
	}
}
