//go:build linux || darwin

package snapshot

import "golang.org/x/sys/unix"

// freeBytes returns the space available to this user on the file system
// holding dir, or -1 when it cannot be told.
func freeBytes(dir string) int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}
