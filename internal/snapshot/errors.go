package snapshot

import (
	"fmt"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/git"
)

// Sentinel errors. Capture-blocking conditions are wrapped in *CaptureError
// so a caller can show its Reason ("conversation only: <reason>") and still
// test for the cause with errors.Is.
var (
	ErrNotRepo     = fault.Plain("snapshot: not a git work tree")
	ErrBare        = fault.Plain("snapshot: bare repository has no work tree")
	ErrNotTopLevel = fault.Plain("snapshot: worktree path is not the top level of its work tree")
	ErrNoCommits   = fault.Plain("snapshot: repository has no commits")
	ErrBudget      = fault.Plain("snapshot: capture exceeded its time budget")
	ErrLocked      = fault.Plain("snapshot: index is locked by another git process")
	ErrUnreadable  = fault.Plain("snapshot: file cannot be read")
	ErrNoSpace     = fault.Plain("snapshot: no space left on device")
	ErrBadName     = fault.Plain("snapshot: invalid snapshot or session name")
	ErrNoRef       = fault.Plain("snapshot: no such snapshot ref")
	ErrUnsafePath  = fault.Plain("snapshot: unsafe path in tree")
	ErrConflict    = fault.Plain("snapshot: worktree state blocks the restore")
	ErrMismatch    = fault.Plain("snapshot: worktree does not match the expected tree")
)

// MissingObjectError is a git operation that failed because an object it
// names, OID, is not in the repository (its snapshot was pruned). Its text
// is the failed operation's.
type MissingObjectError struct {
	OID string
	Err error
}

func (e *MissingObjectError) Error() string { return e.Err.Error() }
func (e *MissingObjectError) Unwrap() error { return e.Err }

// CaptureError explains why a capture could not produce an exact snapshot.
// Reason is a short human sentence fragment for the UI.
type CaptureError struct {
	Reason string
	Err    error
}

func (e *CaptureError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("snapshot: capture: %s: %v", e.Reason, e.Err)
	}
	return "snapshot: capture: " + e.Reason
}

func (e *CaptureError) Unwrap() error { return e.Err }

// RestoreError reports a restore that failed. Applied tells whether any file
// in the worktree may already have changed (false means nothing was touched).
type RestoreError struct {
	Step    string // "validate", "write", "delete", "verify"
	Applied bool
	Err     error
}

func (e *RestoreError) Error() string {
	state := "worktree unchanged"
	if e.Applied {
		state = "worktree partly changed; restore the recovery snapshot"
	}
	return fmt.Sprintf("snapshot: restore (%s, %s): %v", e.Step, state, e.Err)
}

func (e *RestoreError) Unwrap() error { return e.Err }

// BlockedError is a restore refused before it changed anything: something
// no snapshot holds (an ignored file, a file created since the capture, a
// nested repository or write-blocklisted directory) is where the restore
// must write. Its message is a complete sentence for the user.
type BlockedError struct {
	Path    string // the path the restore must write
	Restore string // what it writes there: "file", "symlink" or "directory"
	Blocker string // the entry in the way (Path itself, beneath it or above it)
	Kind    string // the blocker's kind: "file", "symlink", "directory", "special file"
	Why     string // why no snapshot holds it: "ignored", "not captured" or "never captured"
}

func (e *BlockedError) Error() string {
	if e.Blocker == e.Path {
		return fmt.Sprintf("%s (%s %s) is in the way of restoring the %s %s and differs from it; move it away", git.DisplayPath(e.Blocker), e.Why, e.Kind, e.Restore, git.DisplayPath(e.Path))
	}
	return fmt.Sprintf("%s (%s %s) is in the way of restoring the %s %s; move it away", git.DisplayPath(e.Blocker), e.Why, e.Kind, e.Restore, git.DisplayPath(e.Path))
}

// Is makes a BlockedError match ErrConflict.
func (e *BlockedError) Is(target error) bool { return target == ErrConflict }
