package app

import (
	"context"

	"github.com/yolop-dev/yolop/internal/worktree"
)

// Spares configures recycled worktrees: a new session claims a parked
// spare of its repository instead of checking out the whole tree, and a
// spare is prepared in the background for the next session.
type Spares struct {
	// Limit is how many spares a repository keeps ([worktree] spares);
	// zero turns recycling and preparation off.
	Limit int
	// Keeps is what a parked worktree keeps of its ignored files
	// (worktree.KeepDependencies or worktree.KeepNothing).
	Keeps string
	// Prepare, when set, starts a detached, low-priority process that
	// prepares a spare for the repository whose checkout is at repoRoot.
	// It must not wait for that process.
	Prepare func(repoRoot string)
}

// manager returns the worktree manager of the session's data directory
// with its spare settings.
func (o Options) manager() *worktree.Manager {
	return &worktree.Manager{DataDir: o.DataDir, Spares: o.Spares.Limit, SpareKeeps: o.Spares.Keeps}
}

// startWorktree gives a new session its worktree: a recycled spare when one
// is ready, else a fresh checkout.
func (s *Session) startWorktree(ctx context.Context, repo *worktree.Repo, sessionID, title string) (*worktree.Started, error) {
	return s.opts.manager().Start(ctx, repo, sessionID, title)
}

// afterStart notes that a spare should be prepared for the repository at
// repoRoot; prepareSpare starts it once the first turn is over, so that the
// checkout never competes with the turn that is being waited for.
func (s *Session) afterStart(repoRoot string) {
	s.mu.Lock()
	s.spareFor = repoRoot
	s.mu.Unlock()
}

// prepareSpare starts the background preparation of a spare noted by
// afterStart when the repository has fewer than its limit, so that the next
// session there starts without a checkout.
func (s *Session) prepareSpare() {
	s.mu.Lock()
	repoRoot := s.spareFor
	s.spareFor = ""
	s.mu.Unlock()
	sp := s.opts.Spares
	if sp.Prepare == nil || sp.Limit <= 0 || repoRoot == "" {
		return
	}
	repo, err := worktree.Detect(context.Background(), repoRoot)
	if err != nil || !s.opts.manager().SparesWanted(repo) {
		return
	}
	sp.Prepare(repoRoot)
}
