package snapshot

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// A new file that a background command turns into a directory between the
// capture's status and its record of the file does not fail the capture:
// it looks again, and what raced it is in the next capture.
func TestCaptureRacingAFileThatBecomesADirectory(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	sh(t, wt, `mkdir -p src; printf 'a\n' > src/a.txt; printf 'b\n' > b.txt; git add -A; git commit -qm base`)
	e := openEngine(t, wt)
	capture(t, e, "cp1")
	sh(t, wt, `printf 'new\n' > src/new.txt`)
	swapped := false
	e.onStatus = func() {
		if swapped {
			return
		}
		swapped = true
		p := filepath.Join(wt, "src", "new.txt")
		if err := os.Remove(p); err != nil {
			t.Error(err)
		}
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(filepath.Join(p, "inner"), []byte("inner\n"), 0o644); err != nil {
			t.Error(err)
		}
	}
	capture(t, e, "cp2")
	if !swapped {
		t.Fatal("the capture ran no status to race")
	}
	// What raced it is recorded by the next capture.
	e.onStatus = nil
	s := capture(t, e, "cp3")
	if got := gittest.Git(t, wt, "ls-tree", "-r", "--name-only", s.Tree); got != "README.md\nb.txt\nsrc/a.txt\nsrc/new.txt/inner" {
		t.Fatalf("tree after the race:\n%s", got)
	}
}
