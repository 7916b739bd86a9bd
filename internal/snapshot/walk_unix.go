//go:build linux || darwin

package snapshot

import (
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

// statAt returns the stat data of name in the open directory dir, without
// following a symlink and without resolving the whole path again.
func statAt(dir *os.File, name string) (walkedFile, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return walkedFile{}, err
	}
	return walkedFile{
		mode:  uint32(st.Mode),
		ctime: unix.TimespecToNsec(st.Ctim), mtime: unix.TimespecToNsec(st.Mtim),
		ino: uint64(st.Ino), uid: st.Uid, gid: st.Gid, size: st.Size,
	}, nil
}

// dirCtime returns the inode change time (Unix ns) of the open directory.
func dirCtime(dir *os.File) (int64, bool) {
	var st unix.Stat_t
	if err := unix.Fstat(int(dir.Fd()), &st); err != nil {
		return 0, false
	}
	return unix.TimespecToNsec(st.Ctim), true
}
