package worktree

import (
	"os"

	"golang.org/x/sys/unix"
)

// reflink makes dst share src's extents (FICLONE: XFS, Btrfs, bcachefs, …).
func reflink(dst, src *os.File) error {
	return unix.IoctlFileClone(int(dst.Fd()), int(src.Fd()))
}
