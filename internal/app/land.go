package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/fsutil"
	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/land"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/snapshot"
	"github.com/yolop-dev/yolop/internal/timeline"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// landSession describes this session to the land package.
func (s *Session) landSession(ctx context.Context) (land.Session, error) {
	p := s.Parts()
	if p == nil {
		return land.Session{}, fmt.Errorf("%w: this session has no turns yet, so there is nothing to bring home", land.ErrNoWorkspace)
	}
	ws := p.Session.Workspace()
	ls := land.Session{ID: p.Session.ID, Title: ws.Title, DataDir: s.opts.DataDir, Checkout: ws.RepoRoot, WorktreeOwner: worktreeOwner(s.opts.DataDir)}
	eng, err := p.engine(ctx)
	if err != nil {
		return ls, err
	}
	if eng == nil && p.git != nil && errors.Is(p.git.Cause(), git.ErrConfigChanged) {
		return ls, p.git.Cause()
	}
	if ws.Kind == session.KindInPlace && eng != nil {
		ls.InPlace, ls.Worktree, ls.Engine, ls.Folder = true, eng.Root(), eng, ws.Folder
		// git commit runs confined (the user's hooks may be the agent's),
		// in a scratch git directory the sandbox lets it write.
		ls.Confine, ls.ConfineDir = confineWith(p.Tasks), p.Session.Path(tools.SessionTmpDir)
		rows, err := p.Controller.List(ctx, false)
		if err != nil {
			return ls, err
		}
		for i := len(rows) - 1; i >= 0; i-- {
			ls.Prompts = append(ls.Prompts, rows[i].Prompt)
		}
		var turns []land.Turn
		for _, t := range p.Controller.TurnTrees() {
			turns = append(turns, land.Turn{Start: t.Start, End: t.End})
		}
		return land.InPlaceWork(ctx, ls, turns)
	}
	if ws.Worktree == nil || eng == nil {
		return ls, nil // land explains: conversation only
	}
	ls.Worktree, ls.Branch, ls.Base, ls.Engine = eng.Root(), ws.Worktree.Branch, ws.Worktree.Base, eng
	ls.Confine = confineWith(p.Tasks)
	if rows, err := p.Controller.List(ctx, false); err == nil {
		for i := len(rows) - 1; i >= 0; i-- {
			ls.Prompts = append(ls.Prompts, rows[i].Prompt)
		}
	}
	// An editor (ACP) applies to its project directory, the session's cwd;
	// a slash command run in another checkout of the same repository
	// applies there. A directory of another repository does not count.
	if !s.homeFixed && s.opts.Dir != "" {
		if top, ok := checkoutOf(ctx, s.opts.Dir, ws.CommonDir); ok && !fsutil.SameDir(top, ls.Worktree) {
			ls.Checkout = top
		}
	}
	return ls, nil
}

// worktreeOwner tells land which session a worktree belongs to.
func worktreeOwner(dataDir string) func(string) string {
	return func(dir string) string { return catalog.SessionOfWorktree(dataDir, dir) }
}

// checkoutOf returns the top level of dir's checkout when it belongs to the
// repository whose common git dir is common.
func checkoutOf(ctx context.Context, dir, common string) (string, bool) {
	if common == "" {
		return "", false
	}
	out, err := git.New(dir).Run(ctx, "rev-parse", "--show-toplevel", "--git-common-dir")
	if err != nil {
		return "", false
	}
	f := strings.Split(git.Trim(out), "\n")
	if len(f) != 2 || f[0] == "" {
		return "", false
	}
	c := f[1]
	if !filepath.IsAbs(c) {
		c = filepath.Join(dir, c)
	}
	return f[0], fsutil.SameDir(c, common)
}

// refuseWhileRunning refuses to apply or commit files a turn is still
// changing.
func (s *Session) refuseWhileRunning(what string) error {
	p := s.Parts()
	if p == nil {
		return nil
	}
	if id := p.Controller.Running(); id != "" {
		return &checkpoint.Error{Code: checkpoint.CodeTurnRunning, Msg: fmt.Sprintf("turn %s is still changing the files; %s after it ends", id, what)}
	}
	return nil
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
	if refuse != "" {
		if err := s.refuseWhileRunning(refuse); err != nil {
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
	return withLand(s, ctx, "commit", func(ctx context.Context, ls land.Session) (*land.CommitResult, error) {
		if ls.Folder {
			return nil, fmt.Errorf("%w: session %s works in %s, which is not in a git repository, so there is no branch to commit to; its files are already there (`yolop diff %s` shows the changes; run `git init` there first to start a repository of your own)", ErrFolderNoGit, ls.ID, ls.Worktree, ls.ID)
		}
		return land.Commit(ctx, ls, o)
	})
}

// ErrFolderNoGit refuses `yolop commit` for a session in a folder outside
// git.
var ErrFolderNoGit = fault.New(fault.NotARepository, "no git repository to commit to")

// peek opens what diff and apply need of a session that another process
// holds open (its lock is taken): they only read its worktree, through a
// throwaway snapshot state (a first capture hashes every file once). Close
// the returned func when done.
func peek(ctx context.Context, dataDir, id string) (land.Session, func(), error) {
	sess, err := session.OpenReadOnly(dataDir, id)
	if err != nil {
		return land.Session{}, nil, err
	}
	ws := sess.Workspace()
	ls := land.Session{ID: id, Title: ws.Title, DataDir: dataDir, Checkout: ws.RepoRoot, WorktreeOwner: worktreeOwner(dataDir)}
	if recs, err := timeline.ReadRecords(sess.Path(session.TimelineFile)); err == nil {
		for _, cp := range timeline.Build(recs).ActiveChain() {
			ls.Prompts = append(ls.Prompts, cp.Prompt)
		}
	}
	sess.Close()
	if ws.Worktree == nil {
		return ls, func() {}, nil
	}
	// Pinned to the session's records like every other git process of
	// the session: the agent may be rewriting the worktree's .git link
	// (or its git configuration) while its turn runs.
	if _, err := worktree.RecordGitDirs(&ws); err != nil {
		return land.Session{}, nil, fmt.Errorf("read the files of session %s: %w", id, err)
	}
	state, err := os.MkdirTemp("", "yolop-peek-")
	if err != nil {
		return land.Session{}, nil, err
	}
	eng, err := snapshot.Open(ctx, snapshot.Options{Worktree: ws.Worktree.Path, SessionID: id, StateDir: state, CommonDir: ws.CommonDir, GitDir: ws.Worktree.GitDir, Seal: worktree.SealOf(ws.Worktree)})
	if err != nil {
		os.RemoveAll(state)
		return land.Session{}, nil, fmt.Errorf("read the files of session %s: %w", id, err)
	}
	ls.Worktree, ls.Branch, ls.Base, ls.Engine = eng.Root(), ws.Worktree.Branch, ws.Worktree.Base, eng
	return ls, func() { eng.Wait(); os.RemoveAll(state) }, nil
}

// confineWith runs a commit's git processes through the session's command
// runner: under the spawn helper and the session's sandbox.
func confineWith(t *tools.Tasks) land.Confine {
	if t == nil {
		return nil
	}
	return func(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
		res, err := t.RunConfined(ctx, dir, env, args...)
		if err != nil {
			return nil, err
		}
		if res.ExitCode != 0 {
			return res.Stdout, &git.Error{Args: args[1:], ExitCode: res.ExitCode, Stderr: string(res.Stderr)}
		}
		return res.Stdout, nil
	}
}

// repairApplies settles an interrupted apply or undo in the session's
// checkout (notes for the host), as every other repair happens at open.
func repairApplies(ctx context.Context, dataDir string, ws session.Workspace) []string {
	if ws.Worktree == nil || ws.RepoRoot == "" {
		return nil
	}
	notes, err := land.Repair(ctx, dataDir, ws.SessionID, ws.RepoRoot)
	if err != nil && !errors.Is(err, land.ErrLocked) {
		return []string{"an interrupted apply to " + ws.RepoRoot + " could not be repaired yet: " + err.Error()}
	}
	return notes
}

// landTarget gives the command registry's /diff, /apply and /commit the
// session's land operations next to its checkpoints and tasks.
type landTarget struct {
	command.Target
	s *Session
}

func (t landTarget) Land() command.Land { return t.s }

// Lander is what `yolop diff|apply|commit` use of a session.
type Lander interface {
	ID() string
	Diff(ctx context.Context, o land.DiffOptions) (*land.DiffResult, error)
	Apply(ctx context.Context, o land.ApplyOptions) (*land.ApplyResult, error)
	UndoApply(ctx context.Context, o land.UndoOptions) (*land.UndoResult, error)
	Commit(ctx context.Context, o land.CommitOptions) (*land.CommitResult, error)
	// Repairs are what opening the session repaired (an interrupted
	// apply rolled back, an interrupted turn closed): the command must
	// tell them, whatever it does next.
	Repairs() []string
	Close() error
}

// Repairs are the repairs made when the session was opened.
func (s *Session) Repairs() []string { return s.Info().Repairs }

// OpenLand opens a session (o.SessionID, or the latest of o.Dir's
// repository with o.Continue) for diff, apply and commit. When another
// process holds the session open, diff, apply and undo still work (they
// only read its worktree); commit is refused.
func OpenLand(ctx context.Context, o Options) (Lander, error) {
	s, err := Open(ctx, o)
	if err == nil {
		// The subcommands apply to the checkout the session was started
		// from (--to names another), wherever they are run.
		s.homeFixed = true
		return s, nil
	}
	if !errors.Is(err, session.ErrLocked) {
		return nil, err
	}
	id := o.SessionID
	if id == "" {
		// Open, which failed on the lock just now, already brought moved
		// sessions up to date and said so; nothing is left to note here.
		latest, _, lerr := catalog.LatestFor(ctx, o.DataDir, absDir(o.Dir))
		if lerr != nil {
			return nil, lerr
		}
		id = latest
	}
	ls, done, perr := peek(ctx, o.DataDir, id)
	if perr != nil {
		return nil, perr
	}
	return &peeked{ls: ls, done: done, lockErr: err}, nil
}

func absDir(d string) string {
	if w, err := config.WorkDir(d); err == nil {
		return w
	}
	return d
}

// peeked is a session another process holds open.
type peeked struct {
	ls      land.Session
	done    func()
	lockErr error
}

func (p *peeked) ID() string { return p.ls.ID }
func (p *peeked) Diff(ctx context.Context, o land.DiffOptions) (*land.DiffResult, error) {
	return land.Diff(ctx, p.ls, o)
}
func (p *peeked) Apply(ctx context.Context, o land.ApplyOptions) (*land.ApplyResult, error) {
	return land.Apply(ctx, p.ls, o)
}
func (p *peeked) UndoApply(ctx context.Context, o land.UndoOptions) (*land.UndoResult, error) {
	return land.Undo(ctx, p.ls, o)
}
func (p *peeked) Commit(context.Context, land.CommitOptions) (*land.CommitResult, error) {
	return nil, fmt.Errorf("%w; commit from there with /commit, or after it exits", p.lockErr)
}
func (p *peeked) Close() error { p.done(); return nil }

// Repairs is empty: the process holding the session repairs it.
func (p *peeked) Repairs() []string { return nil }
