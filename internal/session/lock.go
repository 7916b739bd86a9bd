package session

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// lockName is the per-session lock file. It is never deleted: deleting a
// flock'ed file lets a second process lock a new inode with the same name.
const lockName = "lock"

// LockedError says another process (or another Session in this process)
// holds the session.
type LockedError struct {
	ID     string
	Holder int // pid written by the holder; 0 when unknown
}

func (e *LockedError) Error() string {
	who := "another yolop process"
	if e.Holder > 0 {
		who = fmt.Sprintf("yolop process %d", e.Holder)
		if e.Holder == os.Getpid() {
			who = fmt.Sprintf("this process (%d)", e.Holder)
		}
	}
	return fmt.Sprintf("session %s is in use by %s; close it there first, or open it read-only with \"yolop sessions show %s\"", e.ID, who, e.ID)
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// ReadableOnly says why err, from opening a session for writing, leaves
// the session readable only (another process holds it, or its directory
// cannot be written), "" when err is no such reason.
func ReadableOnly(err error) string {
	var le *LockedError
	switch {
	case errors.As(err, &le):
		return le.Error()
	case errors.Is(err, ErrNotWritable):
		return fmt.Sprintf("its directory cannot be written (%v)", errors.Unwrap(err))
	}
	return ""
}

// acquireLock takes a non-blocking exclusive flock on dir/lock and records
// the holder's pid in it. On EWOULDBLOCK it returns a *LockedError naming
// the pid found in the file and changes nothing.
func acquireLock(dir, id string) (*os.File, error) {
	path := dirJoin(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, unix.EROFS) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("open lock %s: %w (%w; reading it needs no lock: \"yolop sessions show %s\", \"yolop checkpoints %s\")", path, err, ErrNotWritable, id, id)
		}
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	// A holder that is gone (killed) can leave the lock held for a moment:
	// a child it was forking shares the lock's open file description
	// until that child execs. Wait that moment out, never longer.
	for deadline := time.Now().Add(deadHolderWait); errors.Is(err, unix.EWOULDBLOCK) && holderGone(readHolder(f)) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	}
	if err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &LockedError{ID: id, Holder: readHolder(f)}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// Only the holder writes the file, so the pid cannot be torn by a
	// competing writer; a reader racing this write sees "unknown".
	if err := writeHolder(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("record lock holder in %s: %w", path, err)
	}
	return f, nil
}

// deadHolderWait is how long a lock whose recorded holder no longer runs
// is waited for.
const deadHolderWait = 2 * time.Second

// holderGone reports whether pid names a process that no longer exists.
func holderGone(pid int) bool {
	return pid > 0 && errors.Is(unix.Kill(pid, 0), unix.ESRCH)
}

func readHolder(f *os.File) int {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 32))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

func writeHolder(f *os.File) error {
	if err := f.Chmod(0o600); err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

// releaseLock clears the pid (so a stale pid never names an unrelated
// process) and drops the flock by closing the descriptor.
//
// The explicit LOCK_UN matters: a child process forked by another goroutine
// shares the lock's open file description until it execs, and closing only
// our descriptor would leave the session locked for that moment.
func releaseLock(f *os.File) error {
	terr := f.Truncate(0)
	uerr := unix.Flock(int(f.Fd()), unix.LOCK_UN)
	cerr := f.Close()
	return errors.Join(terr, uerr, cerr)
}
