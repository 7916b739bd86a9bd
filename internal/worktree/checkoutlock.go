package worktree

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrCheckoutInUse is wrapped by *CheckoutInUseError.
var ErrCheckoutInUse = errors.New("worktree: checkout in use")

// CheckoutInUseError says another in-place session holds the checkout.
type CheckoutInUseError struct {
	Checkout string
	Session  string // "" when unknown
	PID      int    // 0 when unknown
}

func (e *CheckoutInUseError) Error() string {
	who := "another yolop session"
	if e.Session != "" {
		who = "session " + e.Session
	}
	if e.PID > 0 {
		who += fmt.Sprintf(" (yolop process %d)", e.PID)
	}
	return fmt.Sprintf("%s is in use by %s, which is running a turn, a restore or a background task in place; wait for it to finish, or start a worktree session (--workspace worktree), which works on its own copy", e.Checkout, who)
}

func (e *CheckoutInUseError) Unwrap() error { return ErrCheckoutInUse }

// CheckoutLock is the one-writer lock of a checkout that sessions working
// in place share: held while a turn, a restore or a background task of such
// a session runs, and by `yolop apply` while it writes. It lives in the
// repository's common git directory (yolop/checkout-<hash of the top
// level>.lock), so sessions of every data directory see it; the file is
// never deleted (a deleted flock'ed file lets a second process lock a new
// inode of the same name).
type CheckoutLock struct {
	f *os.File
}

// CheckoutLockPath is where the lock of the checkout whose top level is top
// lives.
func CheckoutLockPath(commonDir, top string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(top)))
	return filepath.Join(commonDir, "yolop", "checkout-"+hex.EncodeToString(sum[:8])+".lock")
}

// LockCheckout takes the checkout lock without waiting; when another
// process (or another session of this one) holds it, it returns a
// *CheckoutInUseError naming the holder and changes nothing.
func LockCheckout(commonDir, top, sessionID string) (*CheckoutLock, error) {
	path := CheckoutLockPath(commonDir, top)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("checkout lock: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("checkout lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			e := &CheckoutInUseError{Checkout: top}
			e.Session, e.PID = readCheckoutHolder(f)
			return nil, e
		}
		return nil, fmt.Errorf("checkout lock %s: %w", path, err)
	}
	// Only the holder writes the file; a reader racing this write sees
	// an unknown holder, never a torn one it would trust.
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+" "+sessionID+"\n"), 0)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("checkout lock %s: %w", path, err)
		}
	} else {
		f.Close()
		return nil, fmt.Errorf("checkout lock %s: %w", path, err)
	}
	return &CheckoutLock{f: f}, nil
}

func readCheckoutHolder(f *os.File) (string, int) {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 256))
	if err != nil {
		return "", 0
	}
	pid, sess, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 {
		return "", 0
	}
	return sess, n
}

// Release clears the holder and drops the lock. The explicit LOCK_UN
// matters: a child forked by another goroutine shares the open file
// description until it execs.
func (l *CheckoutLock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	terr := l.f.Truncate(0)
	uerr := unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	cerr := l.f.Close()
	l.f = nil
	return errors.Join(terr, uerr, cerr)
}
