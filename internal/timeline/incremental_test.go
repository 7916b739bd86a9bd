package timeline

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// history returns n turns with a rewind of every kind every seventh turn,
// a redo after some of them and a turn left open at the end.
func history(n int) []Record {
	var recs []Record
	st := New()
	add := func(rs ...Record) {
		for _, r := range rs {
			if err := st.Apply(r); err != nil {
				panic(fmt.Sprintf("history record %d: %v", len(recs)+1, err))
			}
			recs = append(recs, r)
		}
	}
	head := ""
	var seq int64
	modes := []string{ModeBoth, ModeConversation, ModeWorkspace}
	restores := 0
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("cp%d", i)
		add(created(id, head, seq))
		seq += 5
		c := completed(id, seq, StatusCompleted)
		if i%5 == 0 {
			c.End = nil // a failed end capture
		}
		add(c)
		head = id
		if i%7 == 0 {
			restores++
			mode := modes[restores%3]
			target := st.Checkpoints[fmt.Sprintf("cp%d", i-2)]
			newHead := target.Parent
			if mode == ModeWorkspace {
				newHead = head
			}
			r := rewind(fmt.Sprintf("r%d", restores), target.ID, mode, head, newHead)
			r[0].TargetTree, r[1].TargetTree = "tree-"+target.ID, "tree-"+target.ID
			add(r...)
			if i%3 == 0 {
				restores++
				rid := fmt.Sprintf("r%d", restores)
				add(Record{V: 1, Type: TypeHeadMoved, Restore: rid, Mode: mode, OldHead: newHead, NewHead: head, AbandonedHead: newHead, Recovery: snap(rid), Redo: true})
				newHead = head
			}
			head = newHead
		}
	}
	add(created(fmt.Sprintf("cp%d", n+1), head, seq))
	return recs
}

// knownFilesByScan is the definition of KnownFiles: scanning back from the
// newest record, the first turn end, workspace restore or turn start
// decides.
func knownFilesByScan(recs []Record) string {
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		switch r.Type {
		case TypeTurnCompleted:
			if r.End == nil {
				return ""
			}
			return r.End.Tree
		case TypeHeadMoved:
			if (r.Mode == ModeBoth || r.Mode == ModeWorkspace) && r.TargetTree != "" {
				return r.TargetTree
			}
		case TypeCheckpointCreated:
			return ""
		}
	}
	return ""
}

// TestApplyMatchesBuild: the state kept up to date one record at a time is
// the state built from scratch after every record.
func TestApplyMatchesBuild(t *testing.T) {
	t.Parallel()
	recs := history(60)
	s := New()
	for i, r := range recs {
		if err := s.Apply(r); err != nil {
			t.Fatalf("record %d (%s): %v", i+1, r.Type, err)
		}
		want := Build(recs[:i+1])
		if want.ReadOnly {
			t.Fatalf("record %d: history is not valid: %s", i+1, want.ReadOnlyReason)
		}
		if !maps.Equal(s.upper, want.upper) || s.Head != want.Head || s.ActiveLen() != len(want.ActiveChain()) {
			t.Fatalf("after record %d (%s): head %q upper %v, want head %q upper %v", i+1, r.Type, s.Head, s.upper, want.Head, want.upper)
		}
		if got, def := s.KnownFiles, knownFilesByScan(recs[:i+1]); got != def || want.KnownFiles != def {
			t.Fatalf("after record %d (%s): known files %q (built: %q), want %q", i+1, r.Type, got, want.KnownFiles, def)
		}
	}
}

// TestFilesChangedRoundTrip: files_changed survives the journal, and a
// record without it (the format before it existed) leaves it unknown.
func TestFilesChangedRoundTrip(t *testing.T) {
	t.Parallel()
	two := 2
	c := completed("cp1", 5, StatusCompleted)
	c.FilesChanged = &two
	st := Materialize(encode([]Record{created("cp1", "", 0), c, created("cp2", "cp1", 5), completed("cp2", 9, StatusCompleted)}))
	if n := st.Checkpoints["cp1"].FilesChanged; n == nil || *n != 2 {
		t.Fatalf("cp1 files changed: %v", n)
	}
	if n := st.Checkpoints["cp2"].FilesChanged; n != nil {
		t.Fatalf("cp2 (no field) files changed: %d, want unknown", *n)
	}
}

// BenchmarkAppend appends one turn (checkpoint.created + turn.completed) to
// timelines of growing length: in memory (State.Check + Apply, what the
// journal does besides writing) and through Log.Append with its fsync. The
// time per turn must not grow with the length.
func BenchmarkAppend(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		recs := history(n)
		recs = recs[:len(recs)-1] // no open turn
		b.Run(fmt.Sprintf("state/turns=%d", n), func(b *testing.B) {
			s := Build(recs)
			head, seq := s.Head, int64(5*n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				id := fmt.Sprintf("cp%d", n+1+i)
				for _, r := range []Record{created(id, head, seq), completed(id, seq+5, StatusCompleted)} {
					if err := s.Check(r); err != nil {
						b.Fatal(err)
					}
					if err := s.Apply(r); err != nil {
						b.Fatal(err)
					}
				}
				head, seq = id, seq+5
			}
		})
		// What the checkpoint controller did before the journal's state
		// was shared: rebuild the whole state after each record.
		b.Run(fmt.Sprintf("rebuild/turns=%d", n), func(b *testing.B) {
			all := slices.Clip(recs)
			head, seq := Build(all).Head, int64(5*n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				id := fmt.Sprintf("cp%d", n+1+i)
				all = append(all[:len(recs)], created(id, head, seq))
				Build(all)
				all = append(all, completed(id, seq+5, StatusCompleted))
				Build(all)
			}
		})
		b.Run(fmt.Sprintf("log/turns=%d", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), FileName)
			writeFileB(b, path, encode(recs))
			l, _, _, err := OpenLog(path)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			st := l.Live()
			head, seq := st.Head, int64(5*n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				id := fmt.Sprintf("cp%d", n+1+i)
				for _, r := range []Record{created(id, head, seq), completed(id, seq+5, StatusCompleted)} {
					if err := l.Append(r); err != nil {
						b.Fatal(err)
					}
				}
				head, seq = id, seq+5
			}
		})
	}
}

func writeFileB(b *testing.B, path string, data []byte) {
	b.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
}
