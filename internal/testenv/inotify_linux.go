package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// InotifyInstances counts the inotify instances this process holds (the
// tests of what releases a file watcher).
func InotifyInstances(t testing.TB) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && l == "anon_inode:inotify" {
			n++
		}
	}
	return n
}
