package cli

import "golang.org/x/sys/unix"

// lowerPriority makes the calling process yield CPU and disk to everything
// else: nice 19 and the idle I/O class.
func lowerPriority() {
	_ = unix.Setpriority(unix.PRIO_PROCESS, 0, 19)
	const ioprioClassIdle, ioprioWhoProcess = 3, 1
	_, _, _ = unix.Syscall(unix.SYS_IOPRIO_SET, ioprioWhoProcess, 0, ioprioClassIdle<<13)
}
