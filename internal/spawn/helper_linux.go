package spawn

import (
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
