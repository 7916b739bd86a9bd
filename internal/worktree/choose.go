package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/session"
)

// Choice is what a new session's workspace is chosen from.
type Choice struct {
	DataDir string
	Dir     string // where yolop was started
	// Kind is the mode asked for: session.KindWorktree (a worktree of
	// the repository holding Dir, the folder itself outside git),
	// KindInPlace (the checkout holding Dir, or the folder) or
	// KindConversation (no file checkpoints).
	Kind string
	// Explicit says the user chose the mode on the command line: in
	// place in $HOME or /, and a folder over max_files, need it.
	Explicit bool
	// Base is the commit a new worktree starts from instead of the
	// checkout's HEAD (a fork), WorkBase the commit its work counts
	// from ("" = Base).
	Base, WorkBase string
	// Owner names the session whose worktree a directory is (nil: none
	// known).
	Owner func(dir string) string
	// FolderLimits reads a folder's limits, for a folder outside git.
	FolderLimits func() (FolderLimits, error)
	// Starter starts the worktree; Notice (nil: nobody) is told what the
	// start, or a folder's first capture, waits for.
	Starter *Starter
	Notice  func(string)
	// Instructions is the project instructions file the checkout check
	// names when the worktree will not have the user's changes to it.
	Instructions string
	// Detected, when set, is what Detect found for Dir moments before
	// (a print-mode process prepares its session and creates it at
	// once): it is not asked again.
	Detected *Repo
}

// Chosen is what choosing a new session's workspace made.
type Chosen struct {
	// Started is the session's new worktree (nil without one). Its Done
	// must be called once the session exists or the worktree is removed.
	Started *Started
	// Check looks for the checkout's uncommitted changes the new worktree
	// does not have (nil for a fork, or without a worktree).
	Check *CheckoutCheck
	// Notes are what the worktree's start did; Notices what the user must
	// know before the first turn (the worktree lacks the directory they
	// were in).
	Notes, Notices []string

	dataDir string
	ws      session.Workspace // as Choose left it, when it made a worktree
}

// Undo removes the worktree Choose made when the session cannot be made
// after all (the branch stays, like every branch yolop makes), and returns
// cause, with the removal's failure when it failed too.
func (c Chosen) Undo(ctx context.Context, cause error) error {
	if c.Started != nil {
		c.Started.Watch.Close()
	}
	if c.ws.Worktree == nil {
		return cause
	}
	m := &Manager{DataDir: c.dataDir}
	if _, err := m.Remove(context.WithoutCancel(ctx), InfoOf(c.ws), c.ws.SessionID, true); err != nil {
		return fmt.Errorf("%w (and removing its new worktree %s failed: %v)", cause, c.ws.Worktree.Path, err)
	}
	return cause
}

// Choose fills ws, a new session's workspace, with where the session works:
// a worktree of its own in a repository, the user's checkout in place, a
// folder outside git in place (its private repository prepared with its
// first capture; a *FolderError refuses it where it would do harm), or no
// file checkpoints, with the reason. Nothing but the worktree or the
// folder's repository is made.
func Choose(ctx context.Context, ws *session.Workspace, c Choice) (Chosen, error) {
	if c.Kind == session.KindConversation {
		ws.NoWorkspaceReason = ReasonOff
		return Chosen{}, nil
	}
	repo, err := c.Detected, error(nil)
	if repo == nil {
		repo, err = Detect(ctx, c.Dir)
	} else {
		r := *repo // Choose writes the base into its copy
		repo = &r
	}
	switch {
	case errors.Is(err, ErrNotRepo):
		// Outside git a session works in place, in the folder itself.
		return Chosen{}, c.folder(ctx, ws)
	case err != nil:
		ws.NoWorkspaceReason = NoRepoReason(err)
		if repo != nil {
			ws.RepoRoot = repo.Root
		}
		return Chosen{}, nil
	case c.Kind == session.KindInPlace:
		if err := CheckInPlaceRoot(repo.Root, c.Explicit); err != nil {
			return Chosen{}, err
		}
		ws.Kind = session.KindInPlace
		ws.RepoRoot, ws.CommonDir, ws.ActiveRoot = repo.Root, repo.CommonDir, repo.Root
		return Chosen{}, nil
	}
	var ch Chosen
	if c.Base != "" {
		repo.Head = c.Base
	} else {
		ch.Check = CheckCheckout(ctx, repo.Root, repo.Head, c.Instructions)
	}
	started, err := c.Starter.Start(ctx, repo, ws.SessionID, ws.Title, c.Notice)
	if err != nil {
		return ch, fmt.Errorf("create session worktree: %w", err)
	}
	ch.Started, ch.Notes = started, started.Notes
	info := started.Info
	ws.Recycled = started.Recycled
	ws.Kind = session.KindWorktree
	ws.RepoRoot, ws.CommonDir = repo.Root, repo.CommonDir
	ws.Worktree = &session.Worktree{Path: info.Path, Branch: info.Branch, Base: info.Base}
	RecordSeal(ws.Worktree, info)
	if c.Base != "" && c.WorkBase != "" {
		ws.Worktree.Base = c.WorkBase
	}
	// Work in the same subdirectory of the worktree as the user was in.
	ws.ActiveRoot = info.Path
	if rel, err := filepath.Rel(repo.Root, c.Dir); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		if st, err := os.Stat(filepath.Join(info.Path, rel)); err == nil && st.IsDir() {
			ws.ActiveRoot = filepath.Join(info.Path, rel)
		} else if c.Base == "" {
			ch.Notices = append(ch.Notices, fmt.Sprintf("%s is not in your last commit (it holds no committed file), so the session's worktree has no such directory: the agent works at the top of the worktree, where a file you ask for \"here\" would land", git.DisplayPath(rel)))
		}
	}
	ch.dataDir, ch.ws = c.DataDir, *ws
	return ch, nil
}

// folder makes ws an in-place session of the folder c.Dir, outside git:
// refused where it would do harm (CheckFolder), its private repository
// prepared with the folder's first capture. An explicit in-place mode
// counts for $HOME, / and max_files.
func (c Choice) folder(ctx context.Context, ws *session.Workspace) error {
	folder := c.Dir
	if r, err := filepath.EvalSymlinks(folder); err == nil {
		folder = r
	}
	explicit := c.Kind == session.KindInPlace && c.Explicit
	if err := CheckFolder(c.DataDir, folder, explicit, c.Owner); err != nil {
		return err
	}
	lim, err := c.FolderLimits()
	if err != nil {
		return err
	}
	if explicit {
		lim.MaxFiles = 0
	}
	gitDir, err := PrepareFolder(ctx, c.DataDir, folder, lim.MaxFiles, lim.MaxFileSize, c.Notice)
	if err != nil {
		return err
	}
	ws.Kind, ws.Folder = session.KindInPlace, true
	ws.RepoRoot, ws.ActiveRoot, ws.CommonDir = folder, folder, gitDir
	return nil
}
