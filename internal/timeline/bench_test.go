package timeline

import (
	"fmt"
	"testing"
)

// BenchmarkBuild materializes a 1,000-turn timeline with a rewind every
// tenth turn, as a resume does.
func BenchmarkBuild(b *testing.B) {
	var recs []Record
	head := ""
	var seq int64
	for n := 1; n <= 1000; n++ {
		id := fmt.Sprintf("cp%d", n)
		recs = append(recs, created(id, head, seq))
		seq += 7
		recs = append(recs, completed(id, seq, StatusCompleted))
		head = id
		if n%10 == 0 {
			cp := Build(recs).Checkpoints[id]
			r := fmt.Sprintf("r%d", n/10)
			recs = append(recs, rewind(r, id, ModeBoth, head, cp.Parent)...)
			head = cp.Parent
		}
	}
	data := encode(recs)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if st := Materialize(data); st.ReadOnly {
			b.Fatal(st.ReadOnlyReason)
		}
	}
}

// BenchmarkDecodeState decodes the state of a 5,000-turn session, as
// opening it from resume.bin does.
func BenchmarkDecodeState(b *testing.B) {
	st := New()
	head := ""
	var seq int64
	for n := 1; n <= 5000; n++ {
		id := fmt.Sprintf("cp%d", n)
		c := created(id, head, seq)
		c.Prompt = fmt.Sprintf("write f%02d.txt\nturn %d\nEOF\nturn %d rewrites one file", n%20, n, n)
		if err := st.Apply(c); err != nil {
			b.Fatal(err)
		}
		seq += 4
		d := completed(id, seq, StatusCompleted)
		one := 1
		d.FilesChanged, d.Paths = &one, []string{fmt.Sprintf("f%02d.txt", n%20)}
		if err := st.Apply(d); err != nil {
			b.Fatal(err)
		}
		head = id
	}
	data, err := AppendState(nil, st)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := DecodeState(data); err != nil {
			b.Fatal(err)
		}
	}
}
