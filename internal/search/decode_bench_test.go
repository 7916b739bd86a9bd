package search

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/timeline"
)

// BenchmarkDecodeTimeline decodes a 1,000-turn timeline.jsonl (a created
// and a completed record per turn, three changed paths each) as labeling
// a session's hits does.
func BenchmarkDecodeTimeline(b *testing.B) {
	var data []byte
	ts := time.Date(2026, 12, 1, 10, 0, 0, 123e6, time.UTC)
	parent := ""
	for i := 1; i <= 1000; i++ {
		cp := fmt.Sprintf("cp%d", i)
		two := 3
		for _, r := range []timeline.Record{
			{V: 1, Type: timeline.TypeCheckpointCreated, Time: ts, Checkpoint: cp, Parent: parent, SeqBefore: int64(4 * i), Prompt: "fix the failing test in parser.go", Snapshot: &timeline.SnapshotRef{Tree: "4b825dc642cb6eb9a060e54bf8d69288fbee4904", Ref: "refs/yolop/checkpoints/s_1/" + cp}, Sandbox: "write"},
			{V: 1, Type: timeline.TypeTurnCompleted, Time: ts, Checkpoint: cp, FinalSeq: int64(4*i + 3), Status: timeline.StatusCompleted, End: &timeline.SnapshotRef{Tree: "4b825dc642cb6eb9a060e54bf8d69288fbee4904", Ref: "refs/yolop/checkpoints/s_1/end-" + cp}, FilesChanged: &two, Paths: []string{"internal/parser/parser.go", "internal/parser/parser_test.go", "README.md"}},
		} {
			line, err := json.Marshal(r)
			if err != nil {
				b.Fatal(err)
			}
			data = append(append(data, line...), '\n')
		}
		parent = cp
	}
	var buf []timeline.Record
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		st, err := decodeTimeline("unused", data, nil, &buf)
		if err != nil || st.Head != "cp1000" {
			b.Fatalf("head %q, %v", st.Head, err)
		}
	}
}
