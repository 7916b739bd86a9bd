package search

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// readTimeline builds what the timeline package builds from the same file
// (timeline.ParseRecord is the one record decoder; FuzzFastRecord checks
// its fast path against encoding/json).
func TestReadTimelineAgreesWithTimeline(t *testing.T) {
	t.Parallel()
	dataDir, _ := fixture(t)
	dirs, err := sessionDirs(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 2 {
		t.Fatalf("only %d sessions checked", len(dirs))
	}
	for _, d := range dirs {
		st, err := readTimeline(d)
		if err != nil {
			t.Fatal(err)
		}
		recs, _ := timeline.ReadRecords(filepath.Join(d, session.TimelineFile))
		if want := timeline.Build(recs); !reflect.DeepEqual(st, want) {
			t.Errorf("%s: readTimeline = head %q order %v, want %q %v", d, st.Head, st.Order, want.Head, want.Order)
		}
	}
}
