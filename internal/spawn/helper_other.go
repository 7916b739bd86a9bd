//go:build !linux

package spawn

import "syscall"

func helperAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// setSubreaper: there is no child subreaper off Linux; the process group is
// the fallback (a process that leaves it escapes).
func setSubreaper() error { return nil }

// killTree SIGKILLs the command's process group and reports whether any of
// it was still there.
func killTree(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return true
}
