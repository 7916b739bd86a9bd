package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/yolop-dev/yolop/internal/fsutil"
)

// The reasons a session gets conversation-only checkpoints, as
// workspace.json records them (no_workspace_reason; any other value is an
// error's text). Sessions on disk hold these words: never change them.
const (
	ReasonNotRepo   = "not a git repository"
	ReasonNoCommits = "the repository has no commits yet"
	ReasonBare      = "bare repository"
	// ReasonOff: the session was made with --workspace none.
	ReasonOff = "file checkpoints are off (--workspace none)"
)

// NoRepoReason names why a directory gets conversation-only checkpoints,
// from Detect's error.
func NoRepoReason(err error) string {
	switch {
	case errors.Is(err, ErrNotRepo):
		return ReasonNotRepo
	case errors.Is(err, ErrNoCommits):
		return ReasonNoCommits
	case errors.Is(err, ErrBare):
		return ReasonBare
	}
	return err.Error()
}

// Unavailable predicts why a new session in dir would have no workspace
// snapshots ("" when it will have them); off says the user turned them off
// (--workspace none). notRepo reports that dir is in no repository (a
// session there works in the folder itself). repo is the repository it
// found, when it found one with a commit (Choice.Detected).
func Unavailable(ctx context.Context, dir string, off bool) (why string, notRepo bool, repo *Repo) {
	if off {
		return ReasonOff, false, nil
	}
	repo, err := Detect(ctx, dir)
	if err != nil && !errors.Is(err, ErrNotRepo) {
		return NoRepoReason(err), false, nil
	}
	if err != nil {
		return "", true, nil
	}
	return "", false, repo
}

// CheckInPlaceRoot refuses to work in place in the home directory or the
// file system's root unless the user asked for in place explicitly: a
// checkout there holds far more than a project.
func CheckInPlaceRoot(root string, explicit bool) error {
	if explicit {
		return nil
	}
	home, _ := os.UserHomeDir()
	for _, broad := range []string{"/", home} {
		if broad != "" && fsutil.SameDir(root, broad) {
			return fmt.Errorf("%s is a git checkout as broad as your home directory or /: yolop does not work in place there unless you say so (--workspace in-place), or use a worktree session (--workspace worktree)", root)
		}
	}
	return nil
}
