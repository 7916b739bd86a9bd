package search

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// The fast record reader must agree with the timeline package on every
// line it accepts.
func TestDecodeRecordAgreesWithTimeline(t *testing.T) {
	t.Parallel()
	dataDir, _ := fixture(t)
	dirs, err := sessionDirs(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(d, session.TimelineFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
			lines++
			got, ok := decodeRecord(line)
			want, err := timeline.ParseRecord(line)
			if !ok || err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("line %s:\n got %+v (ok %v)\nwant %+v (err %v)", line, got, ok, want, err)
			}
		}
		st, err := readTimeline(d)
		if err != nil {
			t.Fatal(err)
		}
		recs, _ := timeline.ReadRecords(filepath.Join(d, session.TimelineFile))
		if want := timeline.Build(recs); st.Head != want.Head || len(st.Order) != len(want.Order) || st.ReadOnly != want.ReadOnly {
			t.Errorf("readTimeline = head %q order %v, want %q %v", st.Head, st.Order, want.Head, want.Order)
		}
	}
	if lines < 8 {
		t.Fatalf("only %d lines checked", lines)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte(`{"v":1,"type":"turn.completed","ts":"2026-12-01T10:00:00Z","checkpoint":"cp1","final_seq":4,"status":"completed","end":{"tree":"ab","ref":"r"},"paths":["a\"b","c"]}`))
	f.Add([]byte(`{"v":1,"type":"head.moved","ts":"2026-12-01T10:00:00.5Z","restore":"r2","mode":"both","redo":true,"recovery":null}`))
	f.Add([]byte(`{"v":1,"type":"checkpoint.created","ts":"2024-02-29T23:59:59.123456789Z","checkpoint":"cp2","sandbox":"write","prompt":"p"}`))
	f.Add([]byte(`{"v":1,"type":"turn.completed","ts":"2026-12-01T10:00:00+02:00","checkpoint":"cp1","files_changed":3,"end_error":"no \u0041"}`))
	f.Add([]byte(`{"v":1,"type":"turn.completed","ts":"2023-02-29T10:00:00Z","files_changed":null}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		got, ok := decodeRecord(line)
		if !ok {
			return
		}
		want, err := timeline.ParseRecord(line)
		if err != nil {
			t.Fatalf("decodeRecord accepted %s, ParseRecord: %v", line, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %+v\nwant %+v", line, got, want)
		}
	})
}
