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

	"github.com/yolop-dev/yolop/internal/fault"
	"golang.org/x/sys/unix"
)

// ErrCheckoutInUse is wrapped by *CheckoutInUseError.
var ErrCheckoutInUse = fault.Plain("worktree: checkout in use")

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
// level>.lock), so sessions of every data directory see it (a folder
// outside git has its lock in the user's runtime directory instead:
// FolderLockPath); the file is never deleted (a deleted flock'ed file lets a second process lock a new
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
	return lockAt(path, top, sessionID)
}

// FolderLockPath is where the lock of a folder outside git lives: in the
// user's runtime directory ($XDG_RUNTIME_DIR/yolop, else a directory of
// the user's own under the temporary directory), named by the folder's
// device and inode. A folder's private repository lives in one data
// directory, so a lock there would not keep out a session of another data
// directory; this one is the same for every data directory, and for every
// path (a symlink, a bind mount) that reaches the folder. It makes the
// directory it returns, and refuses one that is not the user's alone.
func FolderLockPath(top string) (string, error) {
	st, err := os.Stat(top)
	if err != nil {
		return "", fmt.Errorf("folder lock: %w", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return "", fmt.Errorf("folder lock: no device and inode for %s", top)
	}
	dir, err := runtimeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, fmt.Sprintf("folder-%x-%x.lock", uint64(sys.Dev), uint64(sys.Ino))), nil
}

// runtimeDir is the directory of yolop's machine-wide locks for this user.
func runtimeDir() (string, error) {
	var dir string
	if rt := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(rt) {
		dir = filepath.Join(rt, "yolop")
	} else {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("yolop-%d", os.Getuid()))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("folder lock: %w", err)
	}
	// Anyone can make a directory under /tmp first: only one that is a
	// directory (no symlink), the user's own and closed to others is used.
	st, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("folder lock: %w", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !st.IsDir() || !ok || int(sys.Uid) != os.Getuid() || st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("folder lock: %s is not a directory of this user's alone (mode %v); remove it, or set XDG_RUNTIME_DIR to a private directory", dir, st.Mode())
	}
	return dir, nil
}

// LockFolder takes the lock of a folder outside git without waiting, as
// LockCheckout does for a checkout (the same *CheckoutInUseError when it is
// held).
func LockFolder(top, sessionID string) (*CheckoutLock, error) {
	path, err := FolderLockPath(top)
	if err != nil {
		return nil, err
	}
	return lockAt(path, top, sessionID)
}

func lockAt(path, top, sessionID string) (*CheckoutLock, error) {
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
