package app

import (
	"context"
	"fmt"

	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// ChecksOutWorktree reports whether a new session of o checks out a
// worktree of its own at its first prompt (so a host can say what the
// wait is for): false too when a spare is ready to be claimed.
func ChecksOutWorktree(ctx context.Context, o Options) bool {
	return (o.Workspace == "" || o.Workspace == config.WorkspaceWorktree) && o.manager().ChecksOut(ctx, o.Dir)
}

// Fork starts a new session from plan: it carries the old session's
// active conversation as its history, in a fresh worktree that Fill gives
// the old session's files. The files are copied and verified before the
// new session exists, so a crash never leaves a session with half its
// files; the orphaned worktree it may leave is removed by `yolop worktree
// prune`.
func Fork(ctx context.Context, o Options, plan catalog.ForkPlan) (catalog.ForkReport, error) {
	var rep catalog.ForkReport
	o.Dir, o.Base, o.WorkBase, o.Workspace = plan.Dir, plan.Base, plan.WorkBase, plan.Workspace
	o.Create, o.SessionID, o.Continue = false, "", false
	// In place, the old session works in that checkout already: $HOME or
	// / was asked for when it started.
	o.WorkspaceExplicit = o.WorkspaceExplicit || plan.Workspace == config.WorkspaceInPlace
	s, err := Open(ctx, o)
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

// manager is the worktree manager of the session's data directory with
// its spare settings.
func (o Options) manager() *worktree.Manager {
	return &worktree.Manager{DataDir: o.DataDir, Spares: o.Spares.Limit, SpareKeeps: o.Spares.Keeps, Share: o.Spares.Share, Failpoint: o.Hooks.failpoint()}
}
