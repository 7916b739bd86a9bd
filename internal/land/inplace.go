package land

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// Turn is a turn on a session's active branch as the work in place is
// told from it: the trees of its start and end captures (End "" when its
// end was not captured).
type Turn struct {
	Start, End string
}

// InPlaceWork fills in s, a session in place whose Engine is set, from
// its turns on the active branch, oldest first: Base, the tree of the
// first one's start, and Paths, every path a turn changed from its start
// to its end capture (a turn without an end capture changed nothing a
// snapshot holds).
func InPlaceWork(ctx context.Context, s Session, turns []Turn) (Session, error) {
	seen := map[string]bool{}
	for _, t := range turns {
		if s.Base == "" {
			s.Base = t.Start
		}
		if t.End == "" {
			continue
		}
		ch, err := s.Engine.Diff(ctx, t.Start, t.End)
		if err != nil {
			return s, err
		}
		for _, c := range ch {
			if !seen[c.Path] {
				seen[c.Path] = true
				s.Paths = append(s.Paths, c.Path)
			}
		}
	}
	return s, nil
}

// applyInPlace is Apply's answer for a session in place.
func applyInPlace(s Session) error {
	if s.Folder {
		return fmt.Errorf("%w: session %s works in %s itself, so its changes are already there; `yolop diff %s` shows them", ErrInPlace, s.ID, s.Worktree, s.ID)
	}
	return fmt.Errorf("%w: session %s works in %s itself, so its changes are already there; `yolop diff %s` shows them and `yolop commit %s` commits the paths its turns changed", ErrInPlace, s.ID, s.Worktree, s.ID, s.ID)
}

// commitInPlace commits, on the checkout's current branch, the paths the
// session's turns changed as they are now, and nothing else the user has
// staged or changed. git add and git commit (with the user's hooks and
// filters, which the agent may have written) run confined, in a scratch
// git directory (see scratchGit); yolop then publishes the commit.
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
	ch, err := s.changesSinceHead(ctx, r, "the checkout's files")
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
	headCommit, err := r.Run(ctx, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return nil, fmt.Errorf("resolve %s's HEAD: %w", branch, err)
	}
	old := git.Trim(headCommit)
	msg := o.Message
	if strings.TrimSpace(msg) == "" {
		msg = defaultMessage(s)
	}
	if s.ConfineDir != "" {
		if err := os.MkdirAll(s.ConfineDir, 0o700); err != nil {
			return nil, err
		}
	}
	scratch, err := os.MkdirTemp(s.ConfineDir, "yolop-commit-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	g, err := newScratchGit(ctx, r, scratch, s.Worktree, branch, old)
	if err != nil {
		return nil, err
	}
	list := filepath.Join(scratch, "paths")
	if err := os.WriteFile(list, []byte(strings.Join(paths, "\x00")+"\x00"), 0o600); err != nil {
		return nil, err
	}
	msgFile := filepath.Join(scratch, "message")
	if err := os.WriteFile(msgFile, []byte(msg), 0o600); err != nil {
		return nil, err
	}
	env := append(g.env(), "GIT_LITERAL_PATHSPECS=1")
	// confined runs one git command of the commit in the scratch git
	// directory, the way the agent's commands run (see scratchGit).
	confined := func(hooks bool, args ...string) error {
		if s.Confine == nil {
			rr := r.With(env...)
			if hooks {
				rr = rr.WithUserHooks()
			}
			_, err := rr.Run(ctx, args...)
			return err
		}
		_, err := s.Confine(ctx, s.Worktree, append(git.PinnedEnv(), env...), git.Argv(hooks, args...)...)
		return err
	}
	// The scratch index is a copy of the user's; what else is staged
	// there stays out of the commit (--only) and staged in the user's.
	if err := confined(false, "add", "-A", "--pathspec-from-file="+list, "--pathspec-file-nul"); err != nil {
		return nil, fmt.Errorf("stage the session's paths: %w", err)
	}
	args := []string{"commit", "-q", "--no-edit", "-F", msgFile, "--only"}
	if o.NoVerify {
		// No hook at all, as in a worktree session: --no-verify alone
		// still runs prepare-commit-msg, post-commit and the rest.
		none := filepath.Join(scratch, "no-hooks")
		if err := os.Mkdir(none, 0o700); err != nil {
			return nil, err
		}
		args = append([]string{"-c", "core.hooksPath=" + none}, append(args, "--no-verify")...)
	}
	args = append(args, "--pathspec-from-file="+list, "--pathspec-file-nul")
	if err := confined(!o.NoVerify, args...); err != nil {
		var ge *git.Error
		if errors.As(err, &ge) && ge.ExitCode == 1 {
			return nil, &HookError{Output: ge.Stderr}
		}
		return nil, fmt.Errorf("commit: %w", err)
	}
	subject, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
	var only map[string]bool
	if o.NoVerify {
		only = make(map[string]bool, len(paths))
		for _, p := range paths {
			only[p] = true
		}
	}
	sha, notes, err := g.publish(ctx, r, branch, old, subject, only)
	if err != nil {
		return nil, err
	}
	files, err := committedFiles(ctx, r, sha)
	if err != nil {
		return nil, err
	}
	return &CommitResult{SessionID: s.ID, Branch: branch, Commit: sha, Files: files, Message: msg, InPlace: true, Notes: notes}, nil
}
