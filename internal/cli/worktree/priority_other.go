//go:build !linux

package worktree

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// lowerPriority makes the calling process yield CPU to everything else:
// nice 19, which these systems keep per process.
func lowerPriority() error {
	if err := unix.Setpriority(unix.PRIO_PROCESS, 0, 19); err != nil {
		return fmt.Errorf("lower the priority: set nice 19: %w", err)
	}
	return nil
}
