//go:build !linux

package cli

import "golang.org/x/sys/unix"

// lowerPriority makes the calling process yield CPU to everything else.
func lowerPriority() { _ = unix.Setpriority(unix.PRIO_PROCESS, 0, 19) }
