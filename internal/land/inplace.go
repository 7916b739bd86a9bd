package land

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/git"
)

// ErrInPlace says an operation that brings a worktree session's work home
// is not needed: the session works in the user's own checkout.
var ErrInPlace = fault.New(fault.InPlace, "land: the session works in your checkout")

// A session in place (Session.InPlace) works in the user's checkout:
// Worktree is that checkout, Base the tree of its first checkpoint, and
// Paths every path its turns on the active branch changed.

// applyInPlace is Apply's answer for a session in place.
func applyInPlace(s Session) error {
	return fmt.Errorf("%w: session %s works in %s itself, so its changes are already there; `yolop diff %s` shows them and `yolop commit %s` commits the paths its turns changed", ErrInPlace, s.ID, s.Worktree, s.ID, s.ID)
}

// commitInPlace commits, on the checkout's current branch, the paths the
// session's turns changed as they are now, and nothing else the user has
// staged or changed.
func commitInPlace(ctx context.Context, s Session, o CommitOptions) (*CommitResult, error) {
	r := git.New(s.Worktree)
	if err := identity(ctx, r); err != nil {
		return nil, err
	}
	if err := CheckIdle(ctx, s.Worktree, true); err != nil {
		return nil, err
	}
	out, err := r.Run(ctx, "symbolic-ref", "-q", "--short", "HEAD")
	if err != nil {
		return nil, fmt.Errorf("%w: %s is on no branch (detached HEAD), so a commit would belong to no branch; switch to a branch first (nothing was committed)", ErrBranchMoved, s.Worktree)
	}
	branch := git.Trim(out)
	cur, err := s.Engine.Capture(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("capture the checkout's files: %w", err)
	}
	head, err := treeOf(ctx, r, "HEAD")
	if err != nil {
		return nil, err
	}
	ch, err := s.Engine.Diff(ctx, head, cur.Tree)
	if err != nil {
		return nil, err
	}
	mine := make(map[string]bool, len(s.Paths))
	for _, p := range s.Paths {
		mine[p] = true
	}
	var paths []string
	for _, c := range ch {
		if mine[c.Path] && !blocked(c.Path) {
			paths = append(paths, c.Path)
		}
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%w: the paths session %s's turns changed equal %s's last commit", ErrNothingToCommit, s.ID, branch)
	}
	in := []byte(strings.Join(paths, "\x00") + "\x00")
	lit := r.With("GIT_LITERAL_PATHSPECS=1")
	if _, err := lit.RunInput(ctx, in, "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
		return nil, fmt.Errorf("stage the session's paths: %w", err)
	}
	msg := o.Message
	if strings.TrimSpace(msg) == "" {
		msg = defaultMessage(s)
	}
	// --only with the paths: what else is staged stays staged, uncommitted.
	msgFile, err := os.CreateTemp("", "yolop-commit-msg-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(msgFile.Name())
	if _, err := msgFile.WriteString(msg); err != nil {
		msgFile.Close()
		return nil, err
	}
	if err := msgFile.Close(); err != nil {
		return nil, err
	}
	args := []string{"commit", "-q", "--no-edit", "-F", msgFile.Name(), "--only"}
	if o.NoVerify {
		// No hook at all, as in a worktree session: --no-verify alone
		// still runs prepare-commit-msg, post-commit and the rest.
		none, err := os.MkdirTemp("", "yolop-no-hooks-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(none)
		args = append([]string{"-c", "core.hooksPath=" + none}, append(args, "--no-verify")...)
	}
	args = append(args, "--pathspec-from-file=-", "--pathspec-file-nul")
	if _, err := lit.WithUserHooks().RunInput(ctx, in, args...); err != nil {
		var ge *git.Error
		if errors.As(err, &ge) && ge.ExitCode == 1 {
			return nil, &HookError{Output: ge.Stderr}
		}
		return nil, fmt.Errorf("commit: %w", err)
	}
	sha, err := r.Run(ctx, "rev-parse", "HEAD")
	if err != nil {
		return nil, err
	}
	files, err := r.Run(ctx, "diff-tree", "--no-commit-id", "--name-only", "-r", "-z", "HEAD")
	if err != nil {
		return nil, err
	}
	return &CommitResult{SessionID: s.ID, Branch: branch, Commit: git.Trim(sha), Files: len(git.SplitZ(files)), Message: msg, InPlace: true}, nil
}
