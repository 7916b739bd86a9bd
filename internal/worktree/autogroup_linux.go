package worktree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// A kernel with autogroups (CONFIG_SCHED_AUTOGROUP, on by default in the
// common distributions' kernels) shares the processor between sessions
// (setsid) first, and nice values weigh only within a session: the
// detached preparation leads a session of its own, so its nice 19 holds
// its own git processes back from each other and nothing else. The
// background command gives its session's autogroup nice 19 as well
// (lowerAutogroup in the command's priority), and a start that waits for
// the preparation has it lifted back to 0, the user's weight, as its I/O
// class is lifted (liftGroupIO). An autogroup's nice value can be raised
// and brought back down to 0 without privilege (only below 0 needs it),
// at most once per 100 ms across the system (EAGAIN otherwise).

// ownSession is this process's pid when it leads its session (its
// autogroup is its own, not the user's terminal's), else 0. A variable
// for tests.
var ownSession = func() int {
	if sid, err := unix.Getsid(0); err == nil && sid == os.Getpid() {
		return sid
	}
	return 0
}

// autogroupPath is the autogroup file of process pid.
func autogroupPath(pid int) string { return "/proc/" + strconv.Itoa(pid) + "/autogroup" }

// AutogroupNice is the nice value of the autogroup of process pid; ok is
// false when the kernel has no autogroups, the process is in none (see
// parseAutogroup) or the process is gone.
func AutogroupNice(pid int) (nice int, ok bool, err error) {
	b, err := os.ReadFile(autogroupPath(pid))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	nice, ok, err = parseAutogroup(b)
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w", autogroupPath(pid), err)
	}
	return nice, ok, nil
}

// parseAutogroup reads the content of an autogroup file:
// "/autogroup-<id> nice <n>\n", or nothing at all for a process in no
// autogroup of its own (one whose session was never made since boot, as
// in containers whose processes never call setsid: the kernel's default
// group, whose weight cannot be changed).
func parseAutogroup(b []byte) (nice int, ok bool, err error) {
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false, nil
	}
	if len(f) != 3 || !strings.HasPrefix(f[0], "/autogroup-") || f[1] != "nice" {
		return 0, false, fmt.Errorf("unexpected %q", b)
	}
	n, err := strconv.Atoi(f[2])
	if err != nil {
		return 0, false, fmt.Errorf("unexpected %q", b)
	}
	return n, true, nil
}

// kept is this process's own autogroup file, opened for writing by
// KeepAutogroup before the process sealed itself (spawn.Seal): a sealed
// process's /proc files belong to root, so an unprivileged one cannot
// open its own for writing any more. The kernel checks permission when
// the file is opened, not at each write.
var kept struct {
	mu  sync.Mutex
	pid int // 0: nothing kept
	f   *os.File
	err error // why it could not be opened
}

// KeepAutogroup opens this process's autogroup file for writing when the
// process leads its session (its autogroup is its own: the detached
// preparation's), for SetAutogroupNice to use once the process is
// sealed. yolop's main calls it before sealing. A failure to open is
// kept too, and SetAutogroupNice returns it.
func KeepAutogroup() {
	pid := ownSession()
	if pid == 0 {
		return
	}
	f, err := os.OpenFile(autogroupPath(pid), os.O_WRONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return // no autogroups
	}
	kept.mu.Lock()
	defer kept.mu.Unlock()
	kept.pid, kept.f, kept.err = pid, f, err
}

// SetAutogroupNice gives the autogroup of process pid (a session leader:
// the autogroup is its session's) the nice value nice. It does nothing
// on a kernel without autogroups; unix.EAGAIN says another autogroup was
// changed in the last 100 ms, and to try again. This process's own is
// written through the file KeepAutogroup kept, when it kept one; another
// sealed process's cannot be written without privilege (fs.ErrPermission).
func SetAutogroupNice(pid, nice int) error {
	kept.mu.Lock()
	if kept.pid != 0 && kept.pid == pid {
		defer kept.mu.Unlock()
		if kept.err != nil {
			return kept.err
		}
		_, err := kept.f.WriteString(strconv.Itoa(nice))
		return err
	}
	kept.mu.Unlock()
	f, err := os.OpenFile(autogroupPath(pid), os.O_WRONLY, 0)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = f.WriteString(strconv.Itoa(nice))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// liftAutogroup brings the autogroup of session leader pid back to nice 0
// when it is above: a preparation a start waits for is on that start's
// path. unix.EAGAIN: try again at the next poll.
func liftAutogroup(pid int) error {
	nice, ok, err := AutogroupNice(pid)
	if err != nil || !ok || nice <= 0 {
		return err
	}
	return SetAutogroupNice(pid, 0)
}

// liftPreparer lifts the autogroup of the preparation whose process is
// pid, when that process leads its session (a detached preparation does:
// the autogroup is the preparation's alone). Best effort: the
// preparation's own poll lifts it as well (pauser.step), and only that
// poll can without privilege (the preparation is sealed, and its /proc
// files belong to root).
func liftPreparer(pid int) {
	if pid > 0 && leadsSession(pid) {
		_ = liftAutogroup(pid) // EAGAIN, EACCES or gone: the preparation's poll lifts it
	}
}

// leadsSession reports whether process pid is its session's leader (from
// /proc).
func leadsSession(pid int) bool {
	// state(3) ppid(4) pgrp(5) session(6), counted from the name's field.
	f, ok := statFields(strconv.Itoa(pid))
	return ok && len(f) >= 4 && f[3] == strconv.Itoa(pid)
}
