package spawn

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDescribe: five processes are named, each command cut at 60 bytes;
// the rest are counted.
func TestDescribe(t *testing.T) {
	t.Parallel()
	rs := []Record{{PID: 1}, {PID: 2, Command: "sleep 100"}, {PID: 3, Command: strings.Repeat("x", 61)}, {PID: 4}, {PID: 5}, {PID: 6}, {PID: 7}}
	want := "pid 1, pid 2 (sleep 100), pid 3 (" + strings.Repeat("x", 57) + "...), pid 4, pid 5, and 2 more"
	if got := describe(rs); got != want {
		t.Fatalf("describe = %q\nwant %q", got, want)
	}
}

// TestSessionWithoutLeftovers: a session whose ledger lists nothing has
// nothing to tell at open and nothing to end at close.
func TestSessionWithoutLeftovers(t *testing.T) {
	t.Parallel()
	ledger := filepath.Join(t.TempDir(), LedgerFile)
	notes, left, err := ReapSession(ledger, "s_test_none")
	if err != nil || notes != nil || left != nil {
		t.Fatalf("ReapSession: %q %v %v", notes, left, err)
	}
	if err := SweepSession(ledger, "s_test_none"); err != nil {
		t.Fatal(err)
	}
}
