package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The kernel's IOPRIO_WHO_PROCESS and IOPRIO_CLASS_IDLE.
const (
	ioprioWhoProcess = 1
	ioprioClassIdle  = 3
)

// TestWaitedPreparationGetsTheUsersIOClass: a preparation runs at the idle
// I/O class (as the background command sets it); once a start waits for
// it, its git processes get the best-effort class a start of the user's
// has, since the start is waiting on their disk time.
func TestWaitedPreparationGetsTheUsersIOClass(t *testing.T) {
	t.Parallel()
	r, repo, data, goOn, prepared := slowPreparation(t)
	never := time.AfterFunc(time.Minute, goOn)
	defer never.Stop()
	ioClass := func(pid int) int {
		v, _, errno := syscall.Syscall(syscall.SYS_IOPRIO_GET, ioprioWhoProcess, uintptr(pid), 0)
		if errno != 0 {
			t.Fatalf("ioprio_get %d: %v", pid, errno)
		}
		return int(v >> ioprioClassShift)
	}
	git := awaitCheckoutGit(t, data)
	// The background command's idle class, given here to the group.
	if _, _, errno := syscall.Syscall(syscall.SYS_IOPRIO_SET, ioprioWhoPgrp, uintptr(git.pgrp), ioprioClassIdle<<ioprioClassShift); errno != 0 {
		t.Skipf("cannot set the idle I/O class: %v", errno)
	}
	time.Sleep(50 * time.Millisecond) // polls that see no waiter
	if c := ioClass(git.pid); c != ioprioClassIdle {
		t.Fatalf("with no start waiting the checkout's class is %d, not idle", c)
	}
	// The start waits: the next polls lift the group.
	lifted, st := startWhileWaiting(t, r, repo, goOn, prepared, func() int { return ioClass(git.pid) }, ioprioClassBE)
	if lifted != ioprioClassBE {
		t.Fatalf("while a start waited the checkout's I/O class stayed %d (want best-effort, %d)", lifted, ioprioClassBE)
	}
	if !st.Recycled {
		t.Fatalf("the start did not claim the spare (notes %v)", st.Notes)
	}
}

// checkoutGit is the git of a preparation's checkout into the data
// directory data: in the preparation's group (not the test's).
func checkoutGit(data string) (procStat, bool) {
	for _, st := range allStats() {
		cwd, err := os.Readlink("/proc/" + strconv.Itoa(st.pid) + "/cwd")
		if err == nil && st.comm == "git" && st.pgrp != os.Getpid() && strings.HasPrefix(cwd, data+string(filepath.Separator)) {
			return st, true
		}
	}
	return procStat{}, false
}

// awaitCheckoutGit waits for checkoutGit, for a minute at most.
func awaitCheckoutGit(t *testing.T, data string) procStat {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if git, ok := checkoutGit(data); ok {
			return git
		}
		if time.Now().After(deadline) {
			t.Fatal("the checkout did not start")
		}
	}
}

// startWhileWaiting starts a session (in the rig of slowPreparation) that
// waits for the preparation in flight; once it waits, observe is polled,
// for 10 s at most, until it gives want, and the preparation goes on. It
// returns what observe last gave, and the start, once the preparation is
// over.
func startWhileWaiting(t *testing.T, r *spareRig, repo *Repo, goOn func(), prepared <-chan error, observe func() int, want int) (int, *Started) {
	t.Helper()
	var got int
	m := &Manager{DataDir: r.data, Spares: 1, Notify: func(string) {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if got = observe(); got == want {
				break
			}
		}
		goOn()
	}}
	st, err := m.Start(context.Background(), repo, "s_waits", "waits")
	if err != nil {
		t.Fatal(err)
	}
	st.Done()
	if err := <-prepared; err != nil {
		t.Fatalf("the preparation failed: %v", err)
	}
	return got, st
}
