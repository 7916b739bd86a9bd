package search

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/yolop-dev/yolop/internal/timeline"
)

func BenchmarkTimelineTmp(b *testing.B) {
	dir := os.Getenv("YOLOP_SEARCH_BENCH_DIR")
	dirs, _ := filepath.Glob(filepath.Join(dir, "sessions", "*", "timeline.jsonl"))
	var datas [][]byte
	for _, d := range dirs {
		x, _ := os.ReadFile(d)
		datas = append(datas, x)
	}
	b.Run("decode", func(b *testing.B) {
		var buf []timeline.Record
		for i := 0; i < b.N; i++ {
			for j, d := range datas {
				decodeTimeline(dirs[j], d, nil, &buf)
			}
		}
	})
	b.Run("materialize", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for _, d := range datas {
				timeline.Materialize(d)
			}
		}
	})
	b.Run("parseonly", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for _, d := range datas {
				timeline.Parse(d)
			}
		}
	})
}
