//go:build !linux

package worktree

import "syscall"

// sentinelAttr starts the sentinel in a process group of its own.
func sentinelAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
