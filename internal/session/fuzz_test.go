package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

func FuzzParseEvents(f *testing.F) {
	var valid bytes.Buffer
	for i := 1; i <= 3; i++ {
		fmt.Fprintf(&valid, `{"v":1,"seq":%d,"type":"m","ts":"2026-01-01T00:00:00Z","turn":"cp1","data":{"i":%d}}`+"\n", i, i)
	}
	f.Add(valid.Bytes(), []byte(`{"v":1,"seq":4,"ty`))
	f.Add(valid.Bytes(), []byte("\x00\x00\x00"))
	f.Add([]byte{}, []byte("null\n"))
	f.Add(valid.Bytes(), []byte(`{"v":1,"seq":9,"type":"m","ts":"2026-01-01T00:00:00Z"}`+"\n"))
	f.Add(valid.Bytes()[:40], valid.Bytes()[40:])
	f.Fuzz(func(t *testing.T, prefix, suffix []byte) {
		// Arbitrary bytes never panic and always describe a prefix.
		data := append(bytes.Clone(prefix), suffix...)
		scan := ParseEvents("events.jsonl", data)
		if scan.Valid < 0 || scan.Valid+scan.Tail > int64(len(data)) {
			t.Fatalf("valid %d + tail %d outside %d bytes", scan.Valid, scan.Tail, len(data))
		}
		if scan.Corrupt != nil && scan.Tail != 0 {
			t.Fatal("both corrupt and a tail to repair")
		}
		reparsed := ParseEvents("events.jsonl", data[:scan.Valid])
		if reparsed.Corrupt != nil || reparsed.Tail != 0 || len(reparsed.Events) != len(scan.Events) {
			t.Fatalf("the valid prefix does not reparse cleanly: %+v", reparsed)
		}
		// A valid log followed by anything keeps its events.
		good := ParseEvents("events.jsonl", valid.Bytes())
		withJunk := append(bytes.Clone(valid.Bytes()), suffix...)
		got := ParseEvents("events.jsonl", withJunk)
		if len(got.Events) < len(good.Events) {
			t.Fatalf("appending %q lost valid events: %d < %d", suffix, len(got.Events), len(good.Events))
		}
	})
}

// FuzzParseWorkspace: workspace.json never panics the parser, and what it
// accepts is complete (a worktree session has a worktree path) and survives
// being written back.
func FuzzParseWorkspace(f *testing.F) {
	f.Add([]byte(`{"version":1,"session_id":"s_1","kind":"worktree","repo_root":"/r","active_root":"/w","common_dir":"/r/.git","worktree":{"path":"/w","branch":"yolop/x","base":"abc"}}`), "s_1")
	f.Add([]byte(`{"version":1,"session_id":"s_1","kind":"worktree","worktree":null}`), "s_1")
	f.Add([]byte(`{"version":1,"session_id":"s_1","kind":"conversation","active_root":"/x"}`), "s_1")
	f.Add([]byte(`{"version":99,"session_id":"s_1","kind":"conversation"}`), "s_1")
	f.Add([]byte(`{"session_id":"s_2"}`), "s_1")
	f.Add([]byte(`null`), "s_1")
	f.Fuzz(func(t *testing.T, b []byte, id string) {
		ws, err := parseWorkspace("workspace.json", b, id)
		if err != nil {
			return
		}
		if ws.SessionID != id {
			t.Fatalf("accepted session id %q for %q", ws.SessionID, id)
		}
		if ws.Kind == KindWorktree && (ws.Worktree == nil || ws.Worktree.Path == "") {
			t.Fatalf("accepted a worktree session without a worktree: %+v", ws)
		}
		out, err := json.Marshal(ws)
		if err != nil {
			t.Fatal(err)
		}
		again, err := parseWorkspace("workspace.json", out, id)
		if err != nil {
			t.Fatalf("written back, it no longer parses: %v", err)
		}
		if !reflect.DeepEqual(again, ws) {
			t.Fatalf("round trip: %+v != %+v", again, ws)
		}
	})
}

// FuzzFastEvent: whatever line the fast decoder accepts, json.Unmarshal
// accepts too and decodes to the same event.
func FuzzFastEvent(f *testing.F) {
	for _, l := range []string{
		`{"v":1,"seq":1,"type":"m","ts":"2026-01-01T00:00:00Z","turn":"cp1","data":{"i":1}}`,
		`{"v":1,"seq":12,"type":"user.message","ts":"2026-12-01T04:48:14.312972853Z","data":{"text":"a \"q\" \u00e9"}}`,
		`{"v":1,"seq":3,"type":"notice","ts":"2026-12-01T04:48:14Z","turn":""}`,
		`{"v":1,"seq":3,"type":"m","ts":"2026-12-01T04:48:14Z","data":{}}`,
		`{"v":1,"seq":3,"type":"m","ts":"2026-12-01T04:48:14Z","data":{"a":1},"data":{"b":2}}`,
		`{"v":1,"seq":03,"type":"m","ts":"2026-12-01T04:48:14Z"}`,
		`{"v":1,"seq":3,"type":"m","ts":"2026-12-01T04:48:14+01:00","data":{"a":[1,2,{"b":null}]}}`,
	} {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		fast, ok := fastEvent(line)
		if !ok {
			return
		}
		var slow Event
		if err := json.Unmarshal(line, &slow); err != nil {
			t.Fatalf("fast path accepted what json rejects (%v): %q", err, line)
		}
		if fast.V != slow.V || fast.Seq != slow.Seq || fast.Type != slow.Type || !fast.Time.Equal(slow.Time) || fast.Time.Location().String() != slow.Time.Location().String() || fast.Turn != slow.Turn || !bytes.Equal(fast.Data, slow.Data) {
			t.Fatalf("fast %+v != json %+v for %q", fast, slow, line)
		}
	})
}
