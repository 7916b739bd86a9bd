package fsutil

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSizeText(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{512: "512 bytes", 2048: "2.0 KB", 4 << 20: "4 MB", 20<<20 + 1<<19: "20.5 MB"} {
		if got := SizeText(n); got != want {
			t.Errorf("SizeText(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestPaths: the comparisons see through symlinks, SamePath only in the
// parents, and ResolveExisting keeps the part that does not exist yet.
func TestPaths(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if !SameDir(real, link) || SameDir(real, dir) {
		t.Error("SameDir does not resolve the last element")
	}
	if !SamePath(filepath.Join(real, "x"), filepath.Join(link, "x")) || SamePath(real, link) {
		t.Error("SamePath resolves other than the parents")
	}
	if got, want := ResolveExisting(filepath.Join(link, "a", "b")), filepath.Join(real, "a", "b"); got != want {
		t.Errorf("ResolveExisting = %s, want %s", got, want)
	}
}
