package checkpoint

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/timeline"
)

// FuzzParsePreviews: previews.json never makes the controller fail or
// panic; what it keeps is confirmable and survives a save unchanged.
func FuzzParsePreviews(f *testing.F) {
	good := previewStore{NextRecovery: 3, Previews: []previewRecord{{
		Token: "k3F9x2ab", Session: "s_1", Action: ActionRewind, Target: "cp2", Mode: ModeBoth, Head: "cp3", NewHead: "cp1",
		TargetTree: "aaaa", Recovery: &timeline.SnapshotRef{Tree: "bbbb", Ref: "refs/yolop/checkpoints/s_1/r2"}, RecoveryName: "r2",
		Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	}, {Token: "zz", Action: ActionUndo, Mode: ModeConversation}}}
	b, _ := json.Marshal(good)
	f.Add(b)
	f.Add([]byte(`{"next_recovery":-4,"previews":[{"token":"","action":"rewind","mode":"both"}]}`))
	f.Add([]byte(`{"previews":[{"token":"t","action":"rewind","mode":"workspace","recovery":{"tree":"","ref":""}}]}`))
	f.Add([]byte(`{"previews":null}`))
	f.Add([]byte(`[]`))
	f.Add(b[:len(b)/2])
	f.Fuzz(func(t *testing.T, b []byte) {
		s := parsePreviews(b)
		if s == nil || s.NextRecovery < 1 {
			t.Fatalf("store %+v", s)
		}
		for _, r := range s.Previews {
			if !r.valid() {
				t.Fatalf("kept an invalid record %+v", r)
			}
			if got := s.find(r.Token); got == nil || got.Token != r.Token {
				t.Fatalf("find(%q) = %+v", r.Token, got)
			}
		}
		out, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		again := parsePreviews(out)
		if again.NextRecovery != s.NextRecovery || len(again.Previews) != len(s.Previews) {
			t.Fatalf("round trip: %+v != %+v", again, s)
		}
		for i := range s.Previews {
			a, b := again.Previews[i], s.Previews[i]
			a.Created, b.Created = time.Time{}, time.Time{}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("round trip: %+v != %+v", a, b)
			}
		}
	})
}
