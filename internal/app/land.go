package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/land"
	"github.com/yolop-dev/yolop/internal/session"
)

// landSession describes this session to the land package.
func (s *Session) landSession(ctx context.Context) (land.Session, error) {
	p := s.Parts()
	if p == nil {
		return land.Session{}, fmt.Errorf("%w: this session has no turns yet, so there is nothing to bring home", land.ErrNoWorkspace)
	}
	ws := p.Session.Workspace()
	ls := land.Session{ID: p.Session.ID, Title: ws.Title, DataDir: s.opts.DataDir, Checkout: ws.RepoRoot, WorktreeOwner: catalog.WorktreeOwner(s.opts.DataDir)}
	eng, err := p.git.Get(ctx)
	if err != nil {
		return ls, err
	}
	if eng == nil && errors.Is(p.git.Cause(), git.ErrConfigChanged) {
		return ls, p.git.Cause()
	}
	inPlace := ws.Kind == session.KindInPlace
	if eng == nil || (!inPlace && ws.Worktree == nil) {
		return ls, nil // land explains: conversation only
	}
	// git commit runs confined: the user's hooks may be the agent's.
	ls.Worktree, ls.Engine, ls.Confine = eng.Root(), eng, p.Tasks.RunGit
	prompts, err := p.Controller.Prompts(ctx)
	if inPlace {
		if err != nil {
			return ls, err
		}
		// In a scratch git directory the sandbox lets it write.
		ls.InPlace, ls.Folder, ls.Prompts, ls.ConfineDir = true, ws.Folder, prompts, p.Session.Path(tools.SessionTmpDir)
		var turns []land.Turn
		for _, t := range p.Controller.TurnTrees() {
			turns = append(turns, land.Turn{Start: t.Start, End: t.End})
		}
		return land.InPlaceWork(ctx, ls, turns)
	}
	ls.Branch, ls.Base, ls.Prompts = ws.Worktree.Branch, ws.Worktree.Base, prompts
	if !s.homeFixed {
		ls.ApplyFrom(ctx, s.opts.Dir, ws.CommonDir)
	}
	return ls, nil
}

// withLand runs one landing operation as a call of the session: refused
// after Close, and while a turn runs when it writes (refuse names it).
func withLand[T any](s *Session, ctx context.Context, refuse string, op func(context.Context, land.Session) (T, error)) (T, error) {
	var zero T
	ctx, end, err := s.begin(ctx, false)
	if err != nil {
		return zero, err
	}
	defer end()
	if p := s.Parts(); p != nil && refuse != "" {
		if err := p.Controller.RefuseWhileRunning(refuse); err != nil {
			return zero, err
		}
	}
	ls, err := s.landSession(ctx)
	if err != nil {
		return zero, err
	}
	return op(ctx, ls)
}

// Diff shows the session's work against its base or a checkpoint.
func (s *Session) Diff(ctx context.Context, o land.DiffOptions) (*land.DiffResult, error) {
	return withLand(s, ctx, "", func(ctx context.Context, ls land.Session) (*land.DiffResult, error) { return land.Diff(ctx, ls, o) })
}

// Apply merges the session's work into its checkout (or o.To).
func (s *Session) Apply(ctx context.Context, o land.ApplyOptions) (*land.ApplyResult, error) {
	return withLand(s, ctx, "apply", func(ctx context.Context, ls land.Session) (*land.ApplyResult, error) { return land.Apply(ctx, ls, o) })
}

// UndoApply takes the session's last apply back out of the checkout.
func (s *Session) UndoApply(ctx context.Context, o land.UndoOptions) (*land.UndoResult, error) {
	return withLand(s, ctx, "", func(ctx context.Context, ls land.Session) (*land.UndoResult, error) { return land.Undo(ctx, ls, o) })
}

// Commit commits the session's files on its branch.
func (s *Session) Commit(ctx context.Context, o land.CommitOptions) (*land.CommitResult, error) {
	return withLand(s, ctx, "commit", func(ctx context.Context, ls land.Session) (*land.CommitResult, error) { return land.Commit(ctx, ls, o) })
}

// landTarget gives the command registry's /diff, /apply and /commit the
// session's land operations next to its checkpoints and tasks.
type landTarget struct {
	command.Target
	s *Session
}

func (t landTarget) Land() command.Land { return t.s }

// Repairs are the repairs made when the session was opened.
func (s *Session) Repairs() []string { return s.Info().Repairs }

// OpenLand opens a session (Resume, or Continue: the latest of env.Dir's
// repository) for diff, apply and commit. When another process holds the
// session open, diff, apply and undo still work (they only read its
// worktree); commit is refused.
func OpenLand(ctx context.Context, env Env, req Request) (land.Lander, error) {
	s, err := Open(ctx, env, req)
	if err == nil {
		// The subcommands apply to the checkout the session was started
		// from (--to names another), wherever they are run.
		s.homeFixed = true
		return s, nil
	}
	id := ""
	if r, ok := req.(Resume); ok {
		id = r.ID
	}
	pk, err := catalog.PeekHeld(ctx, env.DataDir, env.Dir, id, err)
	if err != nil {
		return nil, err
	}
	return pk, nil
}
