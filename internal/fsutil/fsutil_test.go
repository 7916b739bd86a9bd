package fsutil

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileAtomic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	for _, tc := range []struct {
		data string
		perm os.FileMode
	}{{"one\n", 0o600}, {"two\n", 0o755}, {"", 0o640}} {
		if err := WriteFileAtomic(p, []byte(tc.data), tc.perm); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil || string(b) != tc.data {
			t.Fatalf("read %q, %v; want %q", b, err, tc.data)
		}
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != tc.perm {
			t.Fatalf("mode %v, %v; want %v", st.Mode().Perm(), err, tc.perm)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("temporary files left behind: %v", ents)
	}
	// A failure leaves the old content and no temporary file.
	if err := WriteFileAtomic(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}

// TestWriteFileAtomicAtStaysInTheDirectory: the write goes to the open
// directory even after its path was made a symlink to somewhere else, a
// symlink at the name is replaced rather than followed, and the mode is
// exact.
func TestWriteFileAtomicAtStaysInTheDirectory(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir, elsewhere := filepath.Join(base, "d"), filepath.Join(base, "elsewhere")
	for _, d := range []string{dir, elsewhere} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(elsewhere, "target"), []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(elsewhere, "target"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// The directory's path now leads elsewhere; its descriptor does not.
	if err := os.Rename(dir, filepath.Join(base, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"new", "link"} {
		if err := WriteFileAtomicAt(d, name, []byte("data\n"), 0o640); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(filepath.Join(base, "moved", name))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o640 {
			t.Fatalf("%s: %v %v", name, fi, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(elsewhere, "target")); err != nil || string(b) != "keep\n" {
		t.Fatalf("the link's target changed: %q %v", b, err)
	}
	es, err := os.ReadDir(elsewhere)
	if err != nil || len(es) != 1 {
		t.Fatalf("elsewhere holds %v (%v)", es, err)
	}
	es, err = os.ReadDir(filepath.Join(base, "moved"))
	if err != nil || len(es) != 2 {
		t.Fatalf("a temporary file was left: %v (%v)", es, err)
	}
}
