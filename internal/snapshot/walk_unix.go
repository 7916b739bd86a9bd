//go:build linux || darwin

package snapshot

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// openDir opens a directory for reading without following a symlink.
func openDir(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// permAt returns the permission bits and the inode change time (Unix ns)
// of name in the open directory dir, without following a symlink and
// without resolving the whole path again.
func permAt(dir *os.File, name string) (perm fs.FileMode, ctime int64, ok bool) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, 0, false
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0, 0, false
	}
	return fs.FileMode(st.Mode & 0o777), unix.TimespecToNsec(st.Ctim), true
}

// dirCtime returns the inode change time (Unix ns) of the open directory.
func dirCtime(dir *os.File) (int64, bool) {
	var st unix.Stat_t
	if err := unix.Fstat(int(dir.Fd()), &st); err != nil {
		return 0, false
	}
	return unix.TimespecToNsec(st.Ctim), true
}
