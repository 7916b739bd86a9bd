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
