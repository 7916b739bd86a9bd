package snapshot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// TestWatchedEditGitCannotSee: an edit that git's own stat comparison may
// not see (same size, mtime put back, the inode changed within the second
// the index recorded: a git built without nanosecond stat data compares to
// the second) is seen by the watcher and hashed by the tree edit. The
// background index update must hash it too: an entry git kept as it was
// would hold the old content, which the next walked capture would record
// as the worktree's.
func TestWatchedEditGitCannotSee(t *testing.T) {
	t.Parallel()
	ctime := func(p string) int64 {
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		return st.Ctim.Sec
	}
	for try := 0; try < 10; try++ {
		wt := gittest.NewRepo(t)
		// All of it within one second: from its start.
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
		a := filepath.Join(wt, "a.txt")
		sh(t, wt, `printf 'aaaa\n' > a.txt; touch -d '-1 hour' a.txt; git add a.txt; git commit -qm a`)
		before, err := os.Lstat(a)
		if err != nil {
			t.Fatal(err)
		}
		recorded := ctime(a)
		ageChanges() // so that the walk arms the watcher
		e := openArmed(t, wt, filepath.Join(t.TempDir(), "state"), 0)
		capture(t, e, "")
		e.Wait()
		// Past the coarse clock's tick, within the second.
		time.Sleep(20 * time.Millisecond)
		if err := os.WriteFile(a, []byte("bbbb\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(a, before.ModTime(), before.ModTime()); err != nil {
			t.Fatal(err)
		}
		if ctime(a) != recorded {
			_ = e.Close()
			continue // crossed a second: git would see it
		}
		want := strings.TrimSpace(gittest.Git(t, wt, "hash-object", "a.txt"))
		blob := func(tree string) string {
			return strings.Fields(gittest.Git(t, wt, "ls-tree", tree, "a.txt"))[2]
		}
		watched := capture(t, e, "").Tree
		if e.watchedCaptures == 0 {
			t.Fatalf("the capture after the edit was not watched: %s", e.lastWalkReason)
		}
		if got := blob(watched); got != want {
			t.Fatalf("the watched capture holds %s for a.txt, the file %s", got, want)
		}
		e.Wait()
		if out, err := e.runPriv(context.Background(), nil, "diff-index", "--cached", "--name-only", watched); err != nil || len(out) > 0 {
			t.Errorf("the private index after the update differs from the captured tree: %q, %v", out, err)
		}
		e.ForceOverflow()
		walked := capture(t, e, "").Tree
		if got := blob(walked); got != want {
			t.Fatalf("the walked capture after it holds %s for a.txt, the file %s", got, want)
		}
		return
	}
	t.Skip("every try crossed a second")
}
