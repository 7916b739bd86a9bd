package blocklist_test

import (
	"slices"
	"testing"

	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/blocklist"
	"github.com/yolop-dev/yolop/internal/snapshot"
)

// TestOneList: what the file tools refuse to write and what snapshots
// leave out are the same directories, so no write the agent can make with
// its file tools escapes a rewind.
func TestOneList(t *testing.T) {
	t.Parallel()
	if !slices.Equal(tools.Blocklist, blocklist.Dirs) || !slices.Equal(snapshot.Blocklist, blocklist.Dirs) {
		t.Fatalf("tools %v, snapshot %v, blocklist %v", tools.Blocklist, snapshot.Blocklist, blocklist.Dirs)
	}
	for _, d := range blocklist.Dirs {
		if _, ok := tools.Blocked("a/" + d + "/b.txt"); !ok {
			t.Errorf("the tools would write into %s", d)
		}
		if !blocklist.Contains(d) {
			t.Errorf("Contains(%q) = false", d)
		}
	}
	if blocklist.Contains("src") {
		t.Error("Contains(src) = true")
	}
}
