package app

import (
	"fmt"

	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// recordGitDirs makes sure workspace.json records the worktree's
// administrative directory and the seal of its git configuration (what
// its config.worktree and info/sparse-checkout held), which every git
// process yolop runs for the session is pinned to and checked against. A
// session made before they were recorded gets them from the repository's
// own records (never from the worktree's .git link), once; save is false
// for a session opened read-only (it is then only used in memory).
func recordGitDirs(sess *session.Session, ws *session.Workspace, save bool) error {
	wt := ws.Worktree
	if wt == nil || ws.CommonDir == "" || (wt.GitDir != "" && wt.Seal != nil) {
		return nil
	}
	admin := wt.GitDir
	if admin == "" {
		a, err := git.AdminDirOf(wt.Path, ws.CommonDir)
		if err != nil {
			return err
		}
		admin = a
	}
	seal, err := git.ReadSeal(admin)
	if err != nil {
		return fmt.Errorf("record the git configuration of %s: %w", admin, err)
	}
	cp := *wt
	cp.GitDir = admin
	if cp.Seal == nil {
		s := session.Seal(seal)
		cp.Seal = &s
	}
	ws.Worktree = &cp
	if !save || sess == nil {
		return nil
	}
	return sess.SaveWorkspace(*ws)
}

// gitSeal is the seal recorded in workspace.json as git's type (nil when
// none is).
func gitSeal(wt *session.Worktree) *git.Seal {
	if wt == nil || wt.Seal == nil {
		return nil
	}
	s := git.Seal(*wt.Seal)
	return &s
}

// sealedWorktree is the part of a worktree.Info a session records.
func sealedWorktree(wt *session.Worktree, info worktree.Info) {
	wt.GitDir = info.GitDir
	if info.Seal != nil {
		s := session.Seal(*info.Seal)
		wt.Seal = &s
	}
}
