package worktree

import "syscall"

// sentinelAttr starts the sentinel in a process group of its own, killed
// when the preparing process dies: the kernel's hang-up of the orphaned
// group reaches it only if some member is stopped at that moment, and the
// sentinel may be between a SIGCONT and its next stop, after which it
// would stay stopped forever. (The parent-death signal follows the thread
// that started it; yolop never ends a thread, no goroutine of it locks
// one.)
func sentinelAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
