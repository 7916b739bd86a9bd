package worktree

import (
	"fmt"

	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/session"
)

// RecordGitDirs makes sure ws records its worktree's administrative
// directory and the seal of its git configuration (what its
// config.worktree and info/sparse-checkout held), which every git process
// yolop runs for the session is pinned to and checked against. A session
// made before they were recorded gets them from the repository's own
// records (never from the worktree's .git link), once: changed says ws
// got them, and the caller saves workspace.json unless the session is
// read-only (it is then only used in memory). An error wraps
// git.ErrNoWorktreeRecord when the repository has no record of the
// worktree.
func RecordGitDirs(ws *session.Workspace) (changed bool, err error) {
	wt := ws.Worktree
	if wt == nil || ws.CommonDir == "" || (wt.GitDir != "" && wt.Seal != nil) {
		return false, nil
	}
	admin := wt.GitDir
	if admin == "" {
		a, err := git.AdminDirOf(wt.Path, ws.CommonDir)
		if err != nil {
			return false, err
		}
		admin = a
	}
	seal, err := git.ReadSeal(admin)
	if err != nil {
		return false, fmt.Errorf("record the git configuration of %s: %w", admin, err)
	}
	cp := *wt
	cp.GitDir = admin
	if cp.Seal == nil {
		s := session.Seal(seal)
		cp.Seal = &s
	}
	ws.Worktree = &cp
	return true, nil
}

// SealOf is the seal wt records, as git's type (nil when it records none).
func SealOf(wt *session.Worktree) *git.Seal {
	if wt == nil || wt.Seal == nil {
		return nil
	}
	s := git.Seal(*wt.Seal)
	return &s
}

// RecordSeal records in wt what a session keeps of info, the worktree as
// Start made or claimed it: its administrative directory and its seal.
func RecordSeal(wt *session.Worktree, info Info) {
	wt.GitDir = info.GitDir
	if info.Seal != nil {
		s := session.Seal(*info.Seal)
		wt.Seal = &s
	}
}

// InfoOf names the worktree ws records to the Manager (ws.Worktree must be
// set).
func InfoOf(ws session.Workspace) Info {
	return Info{Path: ws.Worktree.Path, Branch: ws.Worktree.Branch, Base: ws.Worktree.Base, RepoRoot: ws.RepoRoot, CommonDir: ws.CommonDir}
}
