package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sessionLeader starts a process that leads a session of its own (as the
// detached preparation does) with its autogroup at nice 19, or skips the
// test on a kernel without autogroups.
func sessionLeader(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "120")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	if _, ok, err := AutogroupNice(pid); err != nil || !ok {
		t.Skipf("no autogroups in this kernel (%v)", err)
	}
	retryAgain(t, "set its autogroup's nice 19", func() error { return SetAutogroupNice(pid, 19) })
	if n := autogroupNice(t, pid); n != 19 {
		t.Fatalf("the session's autogroup has nice %d after setting 19", n)
	}
	return pid
}

// retryAgain runs fn until it does not say EAGAIN (autogroups change at
// most once per 100 ms across the system).
func retryAgain(t *testing.T, what string, fn func() error) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		err := fn()
		if err == nil {
			return
		}
		if !errors.Is(err, unix.EAGAIN) || time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

func autogroupNice(t *testing.T, pid int) int {
	t.Helper()
	n, ok, err := AutogroupNice(pid)
	if err != nil || !ok {
		t.Fatalf("autogroup of %d: %v (present: %v)", pid, err, ok)
	}
	return n
}

// TestLiftAutogroup: a session's autogroup set to nice 19 is brought back
// to 0, and one at 0 is left as it is.
func TestLiftAutogroup(t *testing.T) {
	pid := sessionLeader(t)
	retryAgain(t, "lift", func() error { return liftAutogroup(pid) })
	if n := autogroupNice(t, pid); n != 0 {
		t.Fatalf("lifted autogroup has nice %d, want 0", n)
	}
	if err := liftAutogroup(pid); err != nil {
		t.Fatalf("lifting an autogroup already at 0: %v", err)
	}
}

// TestWaitedPreparationGetsTheUsersProcessorWeight: a detached preparation
// leads its session, whose autogroup the background command gives nice
// 19; while no start waits it stays there, and once one waits the
// preparation lifts it to 0. (Not parallel: the preparation is told that
// the stand-in session is its own.)
func TestWaitedPreparationGetsTheUsersProcessorWeight(t *testing.T) {
	leader := sessionLeader(t)
	old := ownSession
	ownSession = func() int { return leader }
	defer func() { ownSession = old }()
	r, repo, data, goOn, prepared := slowPreparation(t)
	never := time.AfterFunc(time.Minute, goOn)
	defer never.Stop()
	awaitCheckoutGit(t, data)
	time.Sleep(50 * time.Millisecond) // polls that see no waiter
	if n := autogroupNice(t, leader); n != 19 {
		t.Fatalf("with no start waiting the session's autogroup has nice %d, want 19", n)
	}
	lifted, _ := startWhileWaiting(t, r, repo, goOn, prepared, func() int { return autogroupNice(t, leader) }, 0)
	if lifted != 0 {
		t.Fatalf("while a start waited the session's autogroup had nice %d, want 0", lifted)
	}
}

// TestLiftPreparer: a start lifts the autogroup of a preparation that
// leads its session, and leaves alone that of a process that does not
// lead its own (its session may be the user's terminal's).
func TestLiftPreparer(t *testing.T) {
	leader := sessionLeader(t)
	// A member of another session, not its leader.
	cmd := exec.Command("setsid", "sh", "-c", "sleep 120 & echo $!; wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("setsid: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var member int
	if _, err := fmt.Fscan(out, &member); err != nil {
		t.Fatal(err)
	}
	if leadsSession(member) || !leadsSession(leader) {
		t.Fatalf("leads its session: member %v, leader %v", leadsSession(member), leadsSession(leader))
	}
	retryAgain(t, "set the member's autogroup nice 19", func() error { return SetAutogroupNice(member, 19) })
	liftPreparer(member)
	if n := autogroupNice(t, member); n != 19 {
		t.Fatalf("the autogroup of a process not leading its session was changed to nice %d", n)
	}
	retryAgain(t, "lift", func() error {
		liftPreparer(leader)
		if n := autogroupNice(t, leader); n != 0 {
			return unix.EAGAIN
		}
		return nil
	})
}

// TestWaitingStartLiftsThePreparersSession: a start that begins to wait
// for a preparation lifts the autogroup of the preparation's process (a
// session leader) itself, at once, not at the preparation's next poll.
func TestWaitingStartLiftsThePreparersSession(t *testing.T) {
	leader := sessionLeader(t)
	time.Sleep(150 * time.Millisecond) // past the kernel's 100 ms between autogroup changes
	dir := t.TempDir()
	lock := filepath.Join(dir, tmpPrefix+"x"+lockSuffix)
	f, err := createLocked(lock)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(prepareTag + strconv.Itoa(leader) + " " + strings.Repeat("a", 40) + "\n"); err != nil {
		t.Fatal(err)
	}
	lifted := -1
	m := &Manager{DataDir: t.TempDir(), Notify: func(string) {
		lifted = autogroupNice(t, leader)
		// The preparation ends.
		if err := os.Remove(lock); err != nil {
			t.Error(err)
		}
	}}
	waited, _, err := m.awaitPreparation(context.Background(), dir)
	if err != nil || !waited {
		t.Fatalf("waited %v, %v", waited, err)
	}
	if lifted != 0 {
		t.Fatalf("as the start began to wait the preparer's autogroup had nice %d, want 0", lifted)
	}
}

// TestParseAutogroup: a process in no autogroup of its own reads an empty
// file (the kernel's default group, as in containers whose processes
// never made a session): no autogroup, not an error.
func TestParseAutogroup(t *testing.T) {
	for _, c := range []struct {
		in   string
		nice int
		ok   bool
		bad  bool
	}{
		{in: "/autogroup-3464 nice 0\n", nice: 0, ok: true},
		{in: "/autogroup-12 nice 19\n", nice: 19, ok: true},
		{in: "/autogroup-7 nice -5\n", nice: -5, ok: true},
		{in: "", ok: false},
		{in: "\n", ok: false},
		{in: "/autogroup-7 nice\n", bad: true},
		{in: "/autogroup-7 nice x\n", bad: true},
		{in: "nice 0 /autogroup-7\n", bad: true},
	} {
		nice, ok, err := parseAutogroup([]byte(c.in))
		if (err != nil) != c.bad || ok != c.ok || nice != c.nice {
			t.Errorf("parseAutogroup(%q) = %d, %v, %v; want %d, %v, error %v", c.in, nice, ok, err, c.nice, c.ok, c.bad)
		}
	}
}
