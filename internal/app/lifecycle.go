package app

import (
	"context"
	"fmt"

	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/config"
)

// Fork starts a new session from plan: it carries the old session's
// active conversation as its history, in a fresh worktree that Fill gives
// the old session's files. The files are copied and verified before the
// new session exists, so a crash never leaves a session with half its
// files; the orphaned worktree it may leave is removed by `yolop worktree
// prune`.
func Fork(ctx context.Context, env Env, plan catalog.ForkPlan) (catalog.ForkReport, error) {
	var rep catalog.ForkReport
	env.Dir = plan.Dir
	// In place, the old session works in that checkout already: $HOME or
	// / was asked for when it started.
	o := env.with(New{Mode: plan.Workspace, Explicit: plan.Workspace == config.WorkspaceInPlace})
	o.base, o.workBase = plan.Base, plan.WorkBase
	s, err := open(ctx, o)
	if err != nil {
		return rep, err
	}
	defer s.Close()
	n, err := s.materialize(ctx, plan.Title, plan.Fill, nil)
	if err != nil {
		return rep, fmt.Errorf("fork %s: %w", plan.From, err)
	}
	rep.SessionID, rep.Files, rep.HasFiles, rep.Note = s.ID(), n, plan.Fill != nil, plan.Note
	p := s.Parts()
	// The fork is named to the user as a session to continue: it must be
	// on disk first.
	if err := p.Session.Durable(); err != nil {
		return rep, fmt.Errorf("fork %s: %w", plan.From, err)
	}
	eng, err := p.git.Get(ctx)
	if err != nil {
		return rep, fmt.Errorf("fork %s: %w", plan.From, err)
	}
	rep.Events, err = p.Controller.ImportFork(ctx, plan.History, plan.From, checkpoint.EngineAnchor(eng))
	rep.Turns = len(plan.History.Turns)
	if err != nil {
		return rep, fmt.Errorf("fork %s: copy its conversation: %w", plan.From, err)
	}
	return rep, nil
}
