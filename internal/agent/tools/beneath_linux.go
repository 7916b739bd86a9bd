package tools

import "golang.org/x/sys/unix"

// walkFlags open a directory the walk only passes through: O_PATH needs
// no read permission, as a path lookup needs none.
const walkFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// sysOpenat2 opens a directory beneath dirfd in one lookup the kernel
// confines: no "..", absolute path or symlink may take it out of dirfd
// (RESOLVE_BENEATH), no /proc magic link is followed
// (RESOLVE_NO_MAGICLINKS), and no symlink at all (RESOLVE_NO_SYMLINKS),
// since the path was checked to hold none.
func sysOpenat2(dirfd int, path string) (int, error) {
	return unix.Openat2(dirfd, path, &unix.OpenHow{
		Flags:   dirFlags,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_SYMLINKS,
	})
}
