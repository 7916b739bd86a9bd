package catalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/snapshot"
)

// ForkPlan is what a fork carries over from the old session, read and
// decided before anything of the new session exists.
type ForkPlan struct {
	// From is the old session's id, Title its title.
	From, Title string
	// Dir is where the fork belongs: the old session's checkout, so -c
	// and `sessions show` find it there.
	Dir string
	// Workspace is the old session's workspace mode, which the fork
	// keeps: in place it works in the same checkout (whose files are the
	// old session's), conversation only stays conversation only.
	Workspace string
	// Base is the commit the fork's worktree starts from, WorkBase the
	// one its work counts from ("" for both without a worktree).
	Base, WorkBase string
	// History is the old session's active branch, turn by turn.
	History checkpoint.ForkHistory
	// Fill gives the new worktree the old session's files before the new
	// session directory exists, and returns the number of paths it
	// changed; nil when the worktree keeps the files of Base.
	Fill func(ctx context.Context, dir, stateDir string) (int, error)
	// Note says where the files came from when not from the old
	// session's worktree ("" when they did).
	Note string
}

// ForkReport says what a fork made from a ForkPlan carried over.
type ForkReport struct {
	SessionID string // the new session
	Events    int    // events of the old active branch carried over
	Turns     int    // turns carried over (listed and rewindable in the fork)
	Files     int    // paths copied over the commit the new worktree starts from
	HasFiles  bool   // the old session's files were copied
	// Note says where the files came from when not from the old
	// session's worktree ("" when they did).
	Note string
}

// PlanFork reads session id for a fork: its active conversation (up to
// any corruption), its workspace mode and checkout, and where its files
// are. A fork's worktree starts from the old worktree's commit and holds
// exactly the old worktree's files (uncommitted changes included), and it
// keeps the old session's base: the commit its work started from. When
// the old worktree is gone, the files come from the session's newest
// snapshot that is left; when none is, the fork is refused.
func PlanFork(ctx context.Context, dataDir, id string) (ForkPlan, error) {
	old, err := session.OpenReadOnly(dataDir, id)
	if err != nil {
		return ForkPlan{}, err
	}
	defer old.Close()
	ctl, err := readController(old)
	if err != nil {
		return ForkPlan{}, fmt.Errorf("fork %s: %w", id, err)
	}
	ws := old.Workspace()
	plan := ForkPlan{From: id, Title: ws.Title, Dir: ws.ActiveRoot, Workspace: config.WorkspaceWorktree}
	switch ws.Kind {
	case session.KindInPlace:
		plan.Workspace, plan.Dir = config.WorkspaceInPlace, ws.RepoRoot
	case session.KindConversation:
		plan.Workspace = config.WorkspaceNone
	}
	if ws.Worktree != nil && ws.RepoRoot != "" {
		plan.Dir = ws.RepoRoot
		// The fork's work counts from where the old session's did, so its
		// diff, apply and commit carry what the old session had already
		// committed on its branch too.
		plan.Base, plan.WorkBase = ws.Worktree.Base, ws.Worktree.Base
		if _, err := os.Stat(ws.Worktree.Path); err == nil {
			src := ws.Worktree.Path
			// A command may have pointed the worktree's .git elsewhere;
			// reading that repository's commit would fork the wrong base.
			if ws.CommonDir != "" {
				if _, err := git.CheckWorktreeLink(src, ws.CommonDir); err != nil && !errors.Is(err, git.ErrNoWorktreeRecord) {
					return ForkPlan{}, fmt.Errorf("fork %s: %w", id, err)
				}
			}
			out, err := git.New(src).Run(ctx, "rev-parse", "--verify", "HEAD^{commit}")
			if err != nil {
				return ForkPlan{}, fmt.Errorf("fork %s: read the commit of its worktree: %w", id, err)
			}
			plan.Base = git.Trim(out)
			plan.Fill = func(ctx context.Context, dir, stateDir string) (int, error) {
				n, err := copyFiles(ctx, src, dir, stateDir)
				if err != nil {
					return 0, fmt.Errorf("copy the files of %s: %w", src, err)
				}
				return n, nil
			}
		} else if errors.Is(err, fs.ErrNotExist) && !repoGone(ws) {
			// The worktree was deleted: its files are in the session's
			// snapshots, its commits on its branch (if that is left).
			fromBase := false
			r := git.New(ws.CommonDir)
			if out, err := r.Run(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+ws.Worktree.Branch+"^{commit}"); err == nil {
				plan.Base = git.Trim(out)
			} else {
				fromBase = true
			}
			snap, _ := ctl.NewestFiles(ctx, ws.CommonDir)
			if snap.Tree == "" {
				what := "the files committed on its branch " + ws.Worktree.Branch
				if fromBase {
					what = "the files of the commit its work started from (its branch " + ws.Worktree.Branch + " is gone too)"
				}
				return ForkPlan{}, fmt.Errorf("fork %s: its worktree %s is missing and no snapshot of its files is left in the repository, so a fork would hold only %s, not what the session left; resume it instead (`yolop --session %s` adds the worktree again), or start a new session", id, ws.Worktree.Path, what, id)
			}
			plan.Fill = func(ctx context.Context, dir, stateDir string) (int, error) {
				n, err := restoreFiles(ctx, snap.Tree, dir, stateDir)
				if err != nil {
					return 0, fmt.Errorf("put the files of its snapshot %s in the new worktree: %w", snap.Tree, err)
				}
				return n, nil
			}
			plan.Note = fmt.Sprintf("its worktree %s is missing: the fork has its files from its newest snapshot, %s", ws.Worktree.Path, snap.What)
			if fromBase {
				plan.Note += fmt.Sprintf(", over the commit its work started from (its branch %s is gone too: what it had committed is there as uncommitted changes)", ws.Worktree.Branch)
			}
			if len(snap.Missing) > 0 {
				plan.Note += fmt.Sprintf("; the end of %s was never captured, so anything changed then is not in the fork", strings.Join(snap.Missing, ", "))
			}
		}
	}
	plan.History = ctl.Fork()
	return plan, nil
}

// restoreFiles makes the worktree dst hold exactly the files of the
// snapshot tree (of dst's repository) and verifies the result. It returns
// the number of paths changed.
func restoreFiles(ctx context.Context, tree, dst, stateDir string) (int, error) {
	tmp, err := os.MkdirTemp(stateDir, "fork-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	to, err := snapshot.Open(ctx, snapshot.Options{Worktree: dst, SessionID: "fork", StateDir: tmp + "/dst"})
	if err != nil {
		return 0, err
	}
	defer to.Wait()
	cur, err := to.Capture(ctx, "")
	if err != nil {
		return 0, err
	}
	res, err := to.Restore(ctx, cur, tree)
	if err != nil {
		return 0, err
	}
	return len(res.Changes), nil
}

// copyFiles makes the worktree dst hold exactly the captured files of src
// (another worktree of the same repository: tracked and untracked, ignored
// and blocklisted paths excluded), and verifies the result. It returns the
// number of paths changed.
func copyFiles(ctx context.Context, src, dst, stateDir string) (int, error) {
	tmp, err := os.MkdirTemp(stateDir, "fork-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	from, err := snapshot.Open(ctx, snapshot.Options{Worktree: src, SessionID: "fork", StateDir: tmp + "/src"})
	if err != nil {
		return 0, err
	}
	defer from.Wait()
	want, err := from.Capture(ctx, "")
	if err != nil {
		return 0, err
	}
	return restoreFiles(ctx, want.Tree, dst, tmp)
}
