package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yolop-dev/yolop/internal/git"
)

// git's `worktree add` makes $GIT_COMMON_DIR/worktrees/<id> before it
// writes the files that mark it as being set up, and `git worktree prune`
// deletes an administrative directory without them: a prune run while
// another session's worktree is being added takes that directory away
// under it ("could not open .git/worktrees/<id>/locked for writing").
// yolop's own adds therefore hold the repository's worktrees lock shared
// (they may run side by side; addWorktree retries git's own race between
// them) and its prunes hold it exclusive. The lock file lives in the common
// directory beside the checkout locks, so every data directory sees it, and
// is never deleted.
const worktreesLockName = "worktrees.lock"

// lockWorktrees takes commonDir's worktrees lock, waiting while it is held
// the other way. A wait longer than limit fails.
func lockWorktrees(ctx context.Context, commonDir string, exclusive bool, limit time.Duration) (func(), error) {
	path := filepath.Join(commonDir, "yolop", worktreesLockName)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("worktree: worktrees lock: %w", err)
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	return waitLock(ctx, path, how, limit, "another yolop process is adding a worktree or pruning git's worktree records")
}

// pruneWorktrees runs `git worktree prune` in commonDir once no worktree
// of yolop's is being added there.
func pruneWorktrees(ctx context.Context, commonDir string) error {
	unlock, err := lockWorktrees(ctx, commonDir, true, 5*time.Minute)
	if err != nil {
		return err
	}
	defer unlock()
	_, err = git.New(commonDir).Run(ctx, "worktree", "prune")
	return err
}
