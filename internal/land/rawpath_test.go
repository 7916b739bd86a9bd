package land

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// A journal record keeps every path's exact bytes, and journals written
// before (plain strings) read as they did.
func TestJournalRecordKeepsPathBytes(t *testing.T) {
	t.Parallel()
	rec := record{V: 1, Type: recApplyStarted, SessionID: "s_1", N: 2, Paths: []string{"ok.txt", "bad\xffname", "new\nline"}, Dirs: []string{"d\xfe"}}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"paths":["ok.txt",{"b64":"YmFk/25hbWU="},"new\nline"]`) {
		t.Fatalf("encoded %s", b)
	}
	var got record
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rec) {
		t.Fatalf("round trip = %+v, want %+v", got, rec)
	}
	var old record
	if err := json.Unmarshal([]byte(`{"v":1,"type":"apply.started","session_id":"s_1","n":1,"paths":["a.txt","b/c.txt"],"dirs":["b"]}`), &old); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(old.Paths, []string{"a.txt", "b/c.txt"}) || !reflect.DeepEqual(old.Dirs, []string{"b"}) {
		t.Fatalf("old record read as %+v", old)
	}
	if err := json.Unmarshal([]byte(`{"v":1,"paths":[{"x":1}]}`), &old); err == nil {
		t.Fatal("a path that is neither a string nor b64 was accepted")
	}
}
