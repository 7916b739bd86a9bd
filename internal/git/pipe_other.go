//go:build !linux

package git

import "os"

// pipeCapacity is how many bytes the empty pipe f surely holds: POSIX
// promises PIPE_BUF, 512 bytes at least.
func pipeCapacity(f *os.File) int { return pipeAtomic }
