package session

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A lock whose recorded holder is dead but which is still held for a
// moment (a child of the killed holder that had not exec'd yet) is waited
// for; one held by a live process is refused at once.
func TestLockOfADeadHolderIsWaitedFor(t *testing.T) {
	dir := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	other, err := os.OpenFile(dirJoin(dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := unix.Flock(int(other.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if _, err := other.WriteAt([]byte(strconv.Itoa(dead.Process.Pid)+"\n"), 0); err != nil {
		t.Fatal(err)
	}
	fd := int(other.Fd())
	released := make(chan error, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		released <- unix.Flock(fd, unix.LOCK_UN)
	}()
	f, err := acquireLock(dir, "s_x")
	if rerr := <-released; rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatalf("a lock of a dead holder, released soon after: %v", err)
	}
	if err := releaseLock(f); err != nil {
		t.Fatal(err)
	}

	// A live holder: refused without waiting for it.
	if err := unix.Flock(int(other.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if _, err := other.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		t.Fatal(err)
	}
	_, err = acquireLock(dir, "s_x")
	var le *LockedError
	if !errors.As(err, &le) || le.Holder != os.Getpid() {
		t.Fatalf("a live holder: %v", err)
	}
}
