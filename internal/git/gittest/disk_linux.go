package gittest

import (
	"errors"
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// SmallDisk mounts a tmpfs of size bytes on a new temporary directory and
// returns it; it is unmounted when the test ends. Filling it makes every
// write there fail with ENOSPC, as on a full disk. The test is skipped, with
// the reason, where mounting is not permitted (not root, or no
// CAP_SYS_ADMIN in a container).
func SmallDisk(t testing.TB, size int) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "gittest-disk-")
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)+",mode=0700"); err != nil {
		os.Remove(dir)
		t.Skipf("disk-full test skipped: cannot mount a small tmpfs (%v); run as root with CAP_SYS_ADMIN to exercise it", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
		os.Remove(dir)
	})
	return dir
}

// Fill writes to path until the file system holding it is full.
func Fill(t testing.TB, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, unix.ENOSPC) {
				return
			}
			t.Fatalf("fill %s: %v", path, err)
		}
	}
}
