package snapshot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// TestOpenAsksGitOnce: opening an engine on a worktree with a commit asks
// git for what it needs of the repository in one rev-parse, the tree an
// earlier engine left included (every turn opens one); the other cases
// take the slower path that tells them apart.
func TestOpenAsksGitOnce(t *testing.T) {
	wt := gittest.NewRepo(t)
	sh(t, wt, `printf 'a\n' > a; git add -A; git commit -qm base; printf 'b\n' > b`)
	state := filepath.Join(t.TempDir(), "state")
	trace := filepath.Join(t.TempDir(), "trace.json")
	// Not parallel: the variable reaches every git this process starts.
	t.Setenv("GIT_TRACE2_EVENT", trace)
	revParses := func() int {
		t.Helper()
		b, err := os.ReadFile(trace)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `"event":"start"`) && strings.Contains(line, `"rev-parse"`) {
				n++
			}
		}
		if err := os.Remove(trace); err != nil {
			t.Fatal(err)
		}
		return n
	}
	open := func() *Engine {
		t.Helper()
		e, err := Open(context.Background(), Options{Worktree: wt, SessionID: "s_test", StateDir: state})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return e
	}
	e := open()
	if n := revParses(); n != 1 {
		t.Fatalf("the first Open ran %d rev-parse processes, want 1", n)
	}
	s := capture(t, e, "cp1")
	e.Wait()
	revParses()
	e = open()
	if n := revParses(); n != 1 {
		t.Fatalf("an Open after a capture ran %d rev-parse processes, want 1", n)
	}
	if !e.headIsTree || e.head != s.Tree {
		t.Fatalf("the reopened engine starts from %s (a tree: %v), want the captured tree %s", e.head, e.headIsTree, s.Tree)
	}
	e.Wait()
}
