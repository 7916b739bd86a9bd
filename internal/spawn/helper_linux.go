package spawn

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func helperAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func setSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become child subreaper: %w", err)
	}
	return nil
}

// killTree SIGKILLs every descendant of the helper until none is left and
// reports whether there was any. As a subreaper the helper inherits every
// orphan below it, so walking down from its own pid finds them all; a
// process forked during a pass is found by the next.
func killTree(int) bool {
	if !hasChildren() {
		// Every living descendant has a child of the helper among its
		// ancestors: with none, there is nothing to walk /proc for (the
		// walk reads every process's stat, and most commands leave
		// nothing behind).
		return false
	}
	self := os.Getpid()
	any := false
	for i := 0; ; i++ {
		ds := descendants(self)
		if len(ds) == 0 {
			return any
		}
		any = true
		for _, pid := range ds {
			_ = syscall.Kill(pid, syscall.SIGKILL) // ESRCH: already gone
		}
		time.Sleep(time.Duration(min(1<<i, 50)) * time.Millisecond)
	}
}

// hasChildren reports whether the helper has a child process, running,
// stopped or a zombie, without reaping any.
func hasChildren() bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WSTOPPED|unix.WCONTINUED|unix.WNOHANG|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return !errors.Is(err, unix.ECHILD)
	}
}
