package timeline

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func encode(recs []Record) []byte {
	var b bytes.Buffer
	for _, r := range recs {
		line, _ := json.Marshal(r)
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func FuzzMaterialize(f *testing.F) {
	valid := encode(cat(three(), rewind("r1", "cp2", ModeBoth, "cp3", "cp1")))
	f.Add(valid, []byte(`{"v":1,"type":"turn.comp`))
	f.Add(valid, []byte("\x00\x00\x00\x00"))
	f.Add(valid[:100], valid[100:])
	f.Add([]byte{}, []byte(`{"v":1,"type":"head.moved","restore":"r1","new_head":"cp9"}`+"\n"))
	f.Add(valid, []byte(`{"v":1,"type":"checkpoint.created","checkpoint":"cp4","parent":"cp1","seq_before":16}`+"\n"))
	f.Add(encode(cat(three(),
		move("r1", "cp2", ModeWorkspace, "cp3", "cp3", "F3", "tree-cp2", false),
		move("r2", "cp3", ModeConversation, "cp3", "cp2", "tree-cp2", "", false),
		move("r3", "", ModeBoth, "cp2", "cp3", "tree-cp2", "tree-cp2", true))), []byte{})
	f.Fuzz(func(t *testing.T, prefix, suffix []byte) {
		data := append(bytes.Clone(prefix), suffix...)
		st := Materialize(data) // must not panic
		p := Parse(data)
		if p.Valid+p.Tail > int64(len(data)) || (p.Corrupt != nil && p.Tail != 0) {
			t.Fatalf("bad classification %+v of %d bytes", p, len(data))
		}
		if st.Records > len(p.Records) {
			t.Fatalf("%d records applied of %d parsed", st.Records, len(p.Records))
		}
		if st.Head != "" && st.Checkpoints[st.Head] == nil {
			t.Fatalf("head %q is not a known checkpoint", st.Head)
		}
		for _, cp := range st.ActiveChain() {
			if !st.Active(cp.ID) {
				t.Fatalf("%s on the active chain but not Active", cp.ID)
			}
		}
		// Branches: unique ids, at most one active, and it ends where the
		// conversation is; every other one was left by a restore.
		ids := map[string]bool{}
		active := 0
		for _, b := range st.Branches() {
			if ids[b.ID] {
				t.Fatalf("branch id %s twice", b.ID)
			}
			ids[b.ID] = true
			if b.Active {
				active++
				want := st.Head
				if st.OpenTurn != nil {
					want = st.OpenTurn.ID
				}
				if b.Tip != want {
					t.Fatalf("active branch %s ends at %q, the conversation at %q", b.ID, b.Tip, want)
				}
			} else if b.LeftBy == "" {
				t.Fatalf("abandoned branch %s was not left by a restore", b.ID)
			}
			if b.Own < 0 || b.Turns < b.Own {
				t.Fatalf("branch %s: %d turns, %d own", b.ID, b.Turns, b.Own)
			}
		}
		if active > 1 || (len(st.Order) > 0 && active != 1) {
			t.Fatalf("%d active branches with %d checkpoints", active, len(st.Order))
		}
		// The valid prefix of a good log survives anything appended.
		good := Materialize(valid)
		got := Materialize(append(bytes.Clone(valid), suffix...))
		if got.Records < good.Records {
			t.Fatalf("appending %q lost records: %d < %d", suffix, got.Records, good.Records)
		}
	})
}

func FuzzParseCompactions(f *testing.F) {
	var b bytes.Buffer
	for _, c := range []Compaction{comp("sim", 4, "cp1"), comp("sim", 9, "cp2")} {
		c.V = 1
		line, _ := json.Marshal(c)
		b.Write(line)
		b.WriteByte('\n')
	}
	valid := b.Bytes()
	f.Add(valid, []byte(`{"v":1,"provider":"sim","mo`))
	f.Add(valid, []byte("\x00\x00"))
	f.Add([]byte{}, []byte("[]\n"))
	f.Fuzz(func(t *testing.T, prefix, suffix []byte) {
		data := append(bytes.Clone(prefix), suffix...)
		s := ParseCompactions(data)
		if s.Valid+s.Tail > int64(len(data)) || (s.Corrupt != nil && s.Tail != 0) {
			t.Fatalf("bad classification %+v", s)
		}
		re := ParseCompactions(data[:s.Valid])
		if re.Corrupt != nil || re.Tail != 0 || len(re.Records) != len(s.Records) {
			t.Fatalf("valid prefix does not reparse cleanly: %+v", re)
		}
		Select(s.Records, "sim", "m", 1, func(string, int64) bool { return true })
		got := ParseCompactions(append(bytes.Clone(valid), suffix...))
		if len(got.Records) < 2 {
			t.Fatalf("appending %q lost valid records", suffix)
		}
	})
}

// FuzzFastRecord: whatever line the fast decoder accepts, json.Unmarshal
// accepts too and decodes to the same record.
func FuzzFastRecord(f *testing.F) {
	two := 2
	for _, r := range []Record{
		created("cp1", "", 0), completed("cp1", 5, StatusCompleted),
		{V: 1, Type: TypeCheckpointCreated, Checkpoint: "cp2", Parent: "cp1", SeqBefore: 5, Prompt: "write a.txt\nhé \"q\" <x> & \\", CaptureError: "not a git repository"},
		{V: 1, Type: TypeTurnCompleted, Checkpoint: "cp2", FinalSeq: 9, Status: StatusFailed, End: snap("e"), FilesChanged: &two},
		started("r1", "cp1", ModeBoth, "cp2", "", false), moved("r2", "", ModeWorkspace, "cp2", "cp2", true),
		{V: 1, Type: TypeRestoreAborted, Restore: "r1", Reason: "interrupted; rolled back on open"},
		{V: 1, Type: TypeTurnCompleted, Checkpoint: "cp3", FinalSeq: 12, Status: StatusCompleted, Paths: []string{"a.txt", "dir/b \"q\".go", "é"}, PathsMore: 2},
		{V: 1, Type: TypeTurnCompleted, Checkpoint: "cp3", Paths: []string{}},
	} {
		f.Add(encode([]Record{r}))
	}
	f.Add([]byte(`{"v":1,"type":"turn.completed","ts":"2026-12-01T04:30:48+02:00","checkpoint":"cp1","end":null,"files_changed":0}`))
	f.Add([]byte(`{"v":1,"type":"x","ts":"2026-12-01T04:30:48Z","redo":true,"redo":false,"Type":"y"}`))
	f.Add([]byte(`{"v":1,"type":"turn.completed","paths":["a",1],"paths_more":3}`))
	f.Add([]byte(`{"v":1,"type":"turn.completed","paths":["a",],"status":"completed"}`))
	f.Add([]byte(`{"v":1,"type":"turn.completed","paths":["a","b"],"paths":[]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		fast, ok := fastRecord(line)
		if !ok {
			return
		}
		var slow Record
		if err := json.Unmarshal(line, &slow); err != nil {
			t.Fatalf("fast path accepted what json rejects (%v): %q", err, line)
		}
		if !fast.Time.Equal(slow.Time) || fast.Time.Location().String() != slow.Time.Location().String() {
			t.Fatalf("time %v != %v for %q", fast.Time, slow.Time, line)
		}
		fast.Time, slow.Time = time.Time{}, time.Time{}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("fast %+v != json %+v for %q", fast, slow, line)
		}
	})
}
