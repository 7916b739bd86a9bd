package search

import (
	"os"
	"testing"
)

// BenchmarkSearch searches a data dir made by cmd/searchbench:
//
//	go run ./internal/search/cmd/searchbench -yolop /tmp/yolop -dir /tmp/sb
//	YOLOP_SEARCH_BENCH_DIR=/tmp/sb go test -bench Search ./internal/search
func BenchmarkSearch(b *testing.B) {
	dir := os.Getenv("YOLOP_SEARCH_BENCH_DIR")
	if dir == "" {
		b.Skip("set YOLOP_SEARCH_BENCH_DIR to a data dir made by cmd/searchbench")
	}
	for _, q := range []string{"quixotic", "parser", "the", `"quoted"`} {
		b.Run(q, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := Search(Options{DataDir: dir, Query: q}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
