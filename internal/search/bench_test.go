package search

import (
	"io"
	"os"
	"testing"
)

// BenchmarkSearch searches a data dir made by cmd/searchbench and writes
// the JSON answer, like `yolop sessions search --all --output-format json`:
//
//	go run ./test/bench/cmd/searchbench -yolop /tmp/yolop -dir /tmp/sb
//	YOLOP_SEARCH_BENCH_DIR=/tmp/sb go test -run X -bench Search ./internal/search
func BenchmarkSearch(b *testing.B) {
	dir := os.Getenv("YOLOP_SEARCH_BENCH_DIR")
	if dir == "" {
		b.Skip("set YOLOP_SEARCH_BENCH_DIR to a data dir made by cmd/searchbench")
	}
	for _, limit := range []int{0, 200} {
		for _, q := range []string{"quixotic", "parser", "the", `"quoted"`} {
			b.Run(q+"/limit="+itoa(limit), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					res, err := Search(Options{DataDir: dir, Query: q, Limit: limit})
					if err != nil {
						b.Fatal(err)
					}
					if err := res.WriteJSON(io.Discard); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
