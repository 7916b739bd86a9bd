package snapshot

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// TestSeedSettledSkipsTheSettlePass: a private index seeded from a settled
// real index (a recycled worktree) gets no settle marker, so no capture
// pays a refresh of every file; an edit made after the seed is still
// captured, and without the hint the marker is written as before.
func TestSeedSettledSkipsTheSettlePass(t *testing.T) {
	t.Parallel()
	for _, settled := range []bool{true, false} {
		repo := gittest.NewRepo(t)
		gittest.WriteFile(t, repo, "a.txt", "a\n")
		gittest.Commit(t, repo, "base")
		state := filepath.Join(t.TempDir(), "state")
		e, err := Open(context.Background(), Options{Worktree: repo, SessionID: "s_test", StateDir: state, SeedSettled: settled})
		if err != nil {
			t.Fatal(err)
		}
		first := capture(t, e, "")
		_, err = os.Stat(filepath.Join(state, "index.settle"))
		if marker := err == nil; marker == settled {
			t.Fatalf("SeedSettled=%v: settle marker present = %v", settled, marker)
		}
		gittest.WriteFile(t, repo, "a.txt", "b\n")
		if next := capture(t, e, ""); next.Tree == first.Tree {
			t.Fatalf("SeedSettled=%v: an edit after the seed was not captured", settled)
		}
		e.Wait()
	}
}
