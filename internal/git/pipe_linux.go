package git

import (
	"os"

	"golang.org/x/sys/unix"
)

// pipeCapacity is how many bytes the empty pipe f holds before a write
// blocks: 64 KiB by default, one page for a user over
// fs.pipe-user-pages-soft.
func pipeCapacity(f *os.File) int {
	n, err := unix.FcntlInt(f.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		return pipeAtomic
	}
	return n
}
