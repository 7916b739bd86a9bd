package app

import (
	"context"

	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/failpoint"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// managerFor is the worktree manager of dataDir with the spare settings.
func managerFor(dataDir string, sp config.Spares, hit func(string)) *worktree.Manager {
	if hit == nil {
		hit = failpoint.Hit
	}
	return &worktree.Manager{DataDir: dataDir, Spares: sp.Limit, SpareKeeps: sp.Keeps, Share: sp.Share, Failpoint: hit}
}

// manager returns the worktree manager of the session's data directory
// with its spare settings.
func (o Options) manager() *worktree.Manager {
	return managerFor(o.DataDir, o.Spares, o.Hooks.Failpoint)
}

// earlyStart is the worktree of a session that is open without a prompt
// yet, being claimed or checked out in the background.
type earlyStart struct {
	done chan struct{}
	st   *worktree.Started
	err  error
}

// startEarly claims a spare (or checks out a worktree) for the new session
// as soon as it opens, with no branch yet, so that the first prompt does
// not wait for it. The session directory is still made by the first prompt.
func (s *Session) startEarly(sessionID string) {
	e := &earlyStart{done: make(chan struct{})}
	s.early = e
	o := s.opts
	go func() {
		defer close(e.done)
		ctx := context.Background()
		repo, err := worktree.Detect(ctx, o.Dir)
		if err != nil {
			e.err = err
			return
		}
		if o.Base != "" {
			repo.Head = o.Base
		}
		m := o.manager()
		m.Notify = s.startNotice
		e.st, e.err = m.StartDetached(ctx, repo, sessionID)
	}()
}

// startNotice tells what the session's start waits for to the prompt that
// waits for the start, or keeps it for the prompt that comes while the
// early start still waits (takeEarly).
func (s *Session) startNotice(msg string) {
	s.mu.Lock()
	sink := s.folderNotice
	if sink == nil {
		s.earlyNotice = msg
	}
	s.mu.Unlock()
	if sink != nil {
		sink(msg)
	}
}

// takeEarly waits for the early worktree and gives it the session branch
// at repo.Head (the user's HEAD at the first prompt). It returns nil when
// there is none or it cannot be used; the caller then starts one as usual.
func (s *Session) takeEarly(ctx context.Context, repo *worktree.Repo, sessionID, title string) *worktree.Started {
	s.mu.Lock()
	e := s.early
	s.early = nil
	s.mu.Unlock()
	if e == nil {
		return nil
	}
	select {
	case <-e.done:
	default:
		// Still under way: what it waits for, if it said so before this
		// prompt came, is told now.
		s.mu.Lock()
		msg, sink := s.earlyNotice, s.folderNotice
		s.earlyNotice = ""
		s.mu.Unlock()
		if msg != "" && sink != nil {
			sink(msg)
		}
	}
	select {
	case <-e.done:
	case <-ctx.Done():
		go func() { <-e.done; s.opts.manager().Abandon(context.Background(), e.st) }()
		return nil
	}
	if e.err != nil || e.st == nil {
		return nil
	}
	if err := e.st.MakeBranch(ctx, title, sessionID, repo.Head); err != nil {
		s.opts.manager().Abandon(context.WithoutCancel(ctx), e.st)
		return nil
	}
	return e.st
}

// dropEarly gives back the early worktree of a session closed unused.
func (s *Session) dropEarly() {
	s.mu.Lock()
	e := s.early
	s.early = nil
	s.mu.Unlock()
	if e == nil {
		return
	}
	<-e.done
	s.opts.manager().Abandon(context.Background(), e.st)
}

// startWorktree gives a new session its worktree: the one prepared when the
// session opened, else a recycled spare when one is ready, else a fresh
// checkout.
func (s *Session) startWorktree(ctx context.Context, repo *worktree.Repo, sessionID, title string) (*worktree.Started, error) {
	if st := s.takeEarly(ctx, repo, sessionID, title); st != nil {
		return st, nil
	}
	m := s.opts.manager()
	m.Notify = s.startNotice
	return m.Start(ctx, repo, sessionID, title)
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
	if s.opts.PrepareSpare == nil || s.opts.Spares.Limit <= 0 || repoRoot == "" {
		return
	}
	repo, err := worktree.Detect(context.Background(), repoRoot)
	if err != nil || !s.opts.manager().SparesWanted(repo) {
		return
	}
	s.opts.PrepareSpare(repoRoot)
}
