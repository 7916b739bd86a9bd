package worktree

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yolop-dev/yolop/internal/worktree"
)

// The idle priority: the weakest nice value and ioprio_set(2)'s idle I/O
// class (the kernel's IOPRIO_WHO_PROCESS, IOPRIO_CLASS_SHIFT and
// IOPRIO_CLASS_IDLE).
const (
	idleNice         = 19
	ioprioWhoProcess = 1
	ioprioClassShift = 13
	ioprioClassIdle  = 3
)

// maxPriorityPasses bounds lowerPriority's walks of the thread list; each
// pass after the first only meets threads started while the previous one
// ran, and the Go runtime starts only a handful.
const maxPriorityPasses = 64

// lowerPriority makes the calling process yield CPU and disk to everything
// else: nice 19 and the idle I/O class on every one of its threads.
//
// Linux keeps both per thread, and a new thread or a forked child takes
// them from the thread that creates it: lowering only the calling thread
// leaves the runtime's other threads, and every git they fork, at the
// user's priority. A thread not yet lowered can start another while the
// list is walked, so the walk over /proc/self/task repeats until one pass
// finds every thread already lowered; from then on each new thread and
// child descends from a lowered thread.
//
// A kernel without I/O priorities (ENOSYS) leaves nice 19 alone, which the
// I/O schedulers that honour priorities map to the lowest best-effort level.
// A process that leads its session also gives the session's autogroup
// nice 19 (lowerAutogroup).
func lowerPriority() error {
	if err := lowerAutogroup(); err != nil {
		return err
	}
	ioClass := true
	for pass := 0; pass < maxPriorityPasses; pass++ {
		tids, err := threadIDs()
		if err != nil {
			return err
		}
		changed := false
		for _, tid := range tids {
			c, err := lowerThread(tid, &ioClass)
			if err != nil {
				return fmt.Errorf("lower the priority of thread %d: %w", tid, err)
			}
			changed = changed || c
		}
		if !changed {
			return nil
		}
	}
	return fmt.Errorf("lower the priority: threads kept starting at the previous priority through %d passes over /proc/self/task", maxPriorityPasses)
}

// threadIDs lists the threads of the process.
func threadIDs() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("list the threads to lower their priority: %w", err)
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}

// lowerThread gives thread tid nice 19 and the idle I/O class (the latter
// while *ioClass, which it clears on a kernel without I/O priorities), and
// reports whether it changed anything. A thread that has exited meanwhile
// is no error.
func lowerThread(tid int, ioClass *bool) (bool, error) {
	changed := false
	// The raw getpriority(2) returns 20 - nice.
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	if errors.Is(err, unix.ESRCH) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read its nice value: %w", err)
	}
	if 20-prio != idleNice {
		if err := unix.Setpriority(unix.PRIO_PROCESS, tid, idleNice); errors.Is(err, unix.ESRCH) {
			return false, nil
		} else if err != nil {
			return false, fmt.Errorf("set nice %d: %w", idleNice, err)
		}
		changed = true
	}
	if !*ioClass {
		return changed, nil
	}
	v, _, errno := unix.Syscall(unix.SYS_IOPRIO_GET, ioprioWhoProcess, uintptr(tid), 0)
	switch errno {
	case 0:
	case unix.ENOSYS:
		*ioClass = false
		return changed, nil
	case unix.ESRCH:
		return false, nil
	default:
		return false, fmt.Errorf("read its I/O priority: %w", errno)
	}
	if v>>ioprioClassShift == ioprioClassIdle {
		return changed, nil
	}
	switch _, _, errno := unix.Syscall(unix.SYS_IOPRIO_SET, ioprioWhoProcess, uintptr(tid), ioprioClassIdle<<ioprioClassShift); errno {
	case 0:
		return true, nil
	case unix.ESRCH:
		return false, nil
	default:
		return false, fmt.Errorf("set the idle I/O class: %w", errno)
	}
}

// lowerAutogroup gives this process's autogroup nice 19 when the process
// leads its session, as the detached preparation does: where the kernel
// shares the processor between sessions first (autogroups), nice values
// weigh only within a session, and a session of the preparation's own
// would otherwise get as much as the user's terminal. A run by hand in
// the user's terminal does not lead its session and leaves the
// terminal's alone. Another autogroup changed in the last 100 ms (EAGAIN)
// is waited out, for 5 s at most. A kernel without autogroups, or a
// process in none of its own, has nothing to lower.
func lowerAutogroup() error {
	pid := os.Getpid()
	if sid, err := unix.Getsid(0); err != nil || sid != pid {
		return nil
	}
	// A session whose autogroup the kernel could not make stays in the
	// default group, whose weight cannot be changed (EINVAL).
	if _, ok, err := worktree.AutogroupNice(pid); err != nil {
		return fmt.Errorf("lower the priority: read the session's autogroup: %w", err)
	} else if !ok {
		return nil
	}
	for try := 0; ; try++ {
		err := worktree.SetAutogroupNice(pid, idleNice)
		if errors.Is(err, unix.EAGAIN) && try < 50 {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if err != nil {
			return fmt.Errorf("lower the priority: give the session's autogroup nice %d: %w", idleNice, err)
		}
		return nil
	}
}
