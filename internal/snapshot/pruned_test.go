package snapshot

import (
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// Refs deleted by hand and the objects pruned by git gc: the private index
// names blobs that are gone, and the next capture rebuilds it instead of
// failing for ever.
func TestCaptureAfterObjectsWerePruned(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t)
	e := openEngine(t, repo)
	gittest.WriteFile(t, repo, "one.txt", "one\n")
	capture(t, e, "cp1")
	gittest.WriteFile(t, repo, "two.txt", "two\n")
	capture(t, e, "cp2")
	e.Wait()
	for _, ref := range []string{"cp1", "cp2"} {
		gittest.Git(t, repo, "update-ref", "-d", e.RefName(ref))
	}
	gittest.Git(t, repo, "reflog", "expire", "--expire=now", "--all")
	gittest.Git(t, repo, "gc", "-q", "--prune=now")
	gittest.WriteFile(t, repo, "three.txt", "three\n")
	s := capture(t, e, "cp3")
	for _, p := range []string{"one.txt", "two.txt", "three.txt"} {
		if out := gittest.Git(t, repo, "cat-file", "-t", s.Tree+":"+p); out != "blob" {
			t.Fatalf("%s in the new capture: %q", p, out)
		}
	}
}
