package worktree

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A folder's lock is one for every path that reaches it, and held once.
func TestFolderLockIsTheFolders(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	folder := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(folder, link); err != nil {
		t.Fatal(err)
	}
	a, err := FolderLockPath(folder)
	if err != nil {
		t.Fatal(err)
	}
	b, err := FolderLockPath(link)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("the folder and a symlink to it have two locks: %s, %s", a, b)
	}
	l, err := LockFolder(folder, "s_one")
	if err != nil {
		t.Fatal(err)
	}
	_, err = LockFolder(link, "s_two")
	var ie *CheckoutInUseError
	if !errors.As(err, &ie) || ie.Session != "s_one" || ie.PID != os.Getpid() {
		t.Fatalf("a second lock through the symlink: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l, err = LockFolder(link, "s_two")
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// Without a runtime directory the locks live in a directory of the user's
// own under the temporary directory; one somebody else could write into
// (made first by anyone, under a shared /tmp) is refused, never used.
func TestFolderLockRefusesAnOpenTempDir(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := filepath.Join(tmp, fmt.Sprintf("yolop-%d", os.Getuid()))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := LockFolder(t.TempDir(), "s_one")
	if err == nil || !strings.Contains(err.Error(), "not a directory of this user's alone") {
		t.Fatalf("an open lock directory: %v", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := LockFolder(t.TempDir(), "s_one")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}
