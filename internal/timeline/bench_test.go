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
