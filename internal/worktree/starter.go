package worktree

import (
	"context"
	"sync"
)

// Starter gives a new session its worktree, and asks for a spare for the
// next session once the first turn is over, so that the checkout never
// competes with the turn being waited for. A host whose process waits for
// the first prompt (the TUI) starts the worktree early, while the user
// types: a spare is claimed, or a worktree checked out, with no branch
// yet; the first prompt gives it its branch, and a session closed unused
// gives it back and leaves nothing.
type Starter struct {
	m Manager
	// prepare starts the detached preparation of a spare for the
	// repository whose checkout is at repoRoot (nil: none).
	prepare func(repoRoot string)

	mu sync.Mutex // guards the fields below
	// early is the worktree being started for a session not on disk yet.
	early *earlyStart
	// sink is told what a start waits for (a turn waits for it);
	// kept is what the early start said while no turn was there to tell.
	sink func(string)
	kept string
	// spareFor is the checkout whose repository gets a spare prepared
	// once the session's start is over.
	spareFor string
}

// earlyStart is a worktree being claimed or checked out in the
// background.
type earlyStart struct {
	done chan struct{}
	st   *Started
	err  error
}

// NewStarter returns the Starter of m's data directory and spare settings;
// prepare, when set, starts a spare's preparation and must not wait for it.
func NewStarter(m Manager, prepare func(repoRoot string)) *Starter {
	return &Starter{m: m, prepare: prepare}
}

// manager is the Starter's Manager, telling what a start waits for.
func (s *Starter) manager() *Manager {
	m := s.m
	m.Notify = s.notice
	return &m
}

// notice tells msg to the turn that waits for the start, or keeps it for
// the turn that comes while the early start still waits (Start).
func (s *Starter) notice(msg string) {
	s.mu.Lock()
	sink := s.sink
	if sink == nil {
		s.kept = msg
	}
	s.mu.Unlock()
	if sink != nil {
		sink(msg)
	}
}

// Early starts the worktree of session id for the checkout holding dir
// (at base instead of its HEAD when base is set) in the background, with
// no branch yet.
func (s *Starter) Early(dir, base, id string) {
	e := &earlyStart{done: make(chan struct{})}
	s.mu.Lock()
	s.early = e
	s.mu.Unlock()
	go func() {
		defer close(e.done)
		ctx := context.Background()
		repo, err := Detect(ctx, dir)
		if err != nil {
			e.err = err
			return
		}
		if base != "" {
			repo.Head = base
		}
		e.st, e.err = s.manager().StartDetached(ctx, repo, id)
	}()
}

// Start gives session id its worktree at repo.Head: the one started early,
// else a recycled spare when one is ready, else a fresh checkout. notice,
// when set, is told what the start waits for.
func (s *Starter) Start(ctx context.Context, repo *Repo, id, title string, notice func(string)) (*Started, error) {
	s.mu.Lock()
	s.sink = notice
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.sink = nil
		s.mu.Unlock()
	}()
	if st := s.takeEarly(ctx, repo, id, title); st != nil {
		return st, nil
	}
	return s.manager().Start(ctx, repo, id, title)
}

// takeEarly waits for the early worktree and gives it the session branch
// at repo.Head (the user's HEAD at the first prompt). It returns nil when
// there is none or it cannot be used; Start then starts one as usual.
func (s *Starter) takeEarly(ctx context.Context, repo *Repo, id, title string) *Started {
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
		msg, sink := s.kept, s.sink
		s.kept = ""
		s.mu.Unlock()
		if msg != "" && sink != nil {
			sink(msg)
		}
	}
	select {
	case <-e.done:
	case <-ctx.Done():
		go func() { <-e.done; s.manager().Abandon(context.Background(), e.st) }()
		return nil
	}
	if e.err != nil || e.st == nil {
		return nil
	}
	if err := e.st.MakeBranch(ctx, title, id, repo.Head); err != nil {
		s.manager().Abandon(context.WithoutCancel(ctx), e.st)
		return nil
	}
	return e.st
}

// Drop gives back the early worktree of a session closed unused.
func (s *Starter) Drop() {
	s.mu.Lock()
	e := s.early
	s.early = nil
	s.mu.Unlock()
	if e == nil {
		return
	}
	<-e.done
	s.manager().Abandon(context.Background(), e.st)
}

// Started notes that a session's worktree of the repository whose
// checkout is at repoRoot was started: PrepareSpare prepares the next one.
func (s *Starter) Started(repoRoot string) {
	s.mu.Lock()
	s.spareFor = repoRoot
	s.mu.Unlock()
}

// PrepareSpare starts the background preparation of a spare noted by
// Started when the repository has fewer than its limit, so that the next
// session there starts without a checkout.
func (s *Starter) PrepareSpare() {
	s.mu.Lock()
	repoRoot := s.spareFor
	s.spareFor = ""
	s.mu.Unlock()
	if s.prepare == nil || s.m.Spares <= 0 || repoRoot == "" {
		return
	}
	repo, err := Detect(context.Background(), repoRoot)
	if err != nil || !s.manager().SparesWanted(repo) {
		return
	}
	s.prepare(repoRoot)
}
