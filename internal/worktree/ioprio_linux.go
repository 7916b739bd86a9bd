package worktree

import "golang.org/x/sys/unix"

// ioprio_set(2)'s values (the kernel's IOPRIO_WHO_PGRP, IOPRIO_CLASS_SHIFT
// and IOPRIO_CLASS_BE): best-effort level 4 is what a process of nice 0
// gets when it sets no class.
const (
	ioprioWhoPgrp    = 2
	ioprioClassShift = 13
	ioprioClassBE    = 2
	ioprioLevel      = 4
)

// liftGroupIO gives every process of the group pgid the best-effort I/O
// class a start of the user's has: a preparation a start waits for is on
// that start's path, and the idle class it was given gets no disk time
// while other I/O is pending (mq-deadline holds idle requests back for up
// to prio_aging_expire, 10 s by default, behind the writeback of a
// checkout just made). No privilege is needed to leave the idle class
// (only the nice value cannot be lowered again). A kernel without I/O
// priorities (ENOSYS) has nothing to lift.
func liftGroupIO(pgid int) error {
	_, _, errno := unix.Syscall(unix.SYS_IOPRIO_SET, ioprioWhoPgrp, uintptr(pgid), ioprioClassBE<<ioprioClassShift|ioprioLevel)
	switch errno {
	case 0, unix.ENOSYS, unix.ESRCH: // (ESRCH: no process in the group now)
		return nil
	}
	return errno
}
