package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/agent/system"
	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/mcp"
	"github.com/yolop-dev/yolop/internal/provider"
	_ "github.com/yolop-dev/yolop/internal/provider/sim" // the offline one; the binary links all (internal/cli)
	"github.com/yolop-dev/yolop/internal/resume"
	"github.com/yolop-dev/yolop/internal/sandbox"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/snapshot"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// Session is a live session, as hosts see it. Before its first prompt it
// may not exist on disk yet (TUI, print): its state is then a draft, and
// the first prompt creates it.
type Session struct {
	opts options
	prov provider.Provider

	// create serializes materialize: one draft becomes one session.
	create sync.Mutex
	// homeFixed makes apply target the checkout the session was started
	// from rather than the directory it was opened in (`yolop apply`).
	homeFixed bool
	// start gives a new session its worktree and prepares a spare after
	// the first turn; notices are what the user is told before it.
	start   *worktree.Starter
	notices worktree.StartNotices

	mu sync.Mutex // guards the fields below
	// state is a *draft until the session exists on disk, then its *Parts.
	state state
	// closed refuses new calls once Close has begun; turns are the
	// cancel funcs of the turns in progress. Close cancels them and waits
	// on calls (every Prompt and Exec in progress) before it releases
	// anything, so no turn or restore writes after the lock is gone.
	closed bool
	turns  map[*context.CancelFunc]struct{}
	calls  sync.WaitGroup
}

// state is what a session is before and after it exists on disk.
type state interface {
	command.Target
	info(prov provider.Provider) Info
	id() string
}

// draft is a session that does not exist on disk yet.
type draft struct {
	ws session.Workspace
	// expectWS/expectWhy say whether its first prompt will give it a
	// worktree, for status bars.
	expectWS  bool
	expectWhy string
	mode      string // the workspace mode its first prompt gives it
	dir       string
	ctl       *checkpoint.Controller // over no turns: answers every request itself
	// contextWindow is the model's context window (0 when unknown).
	contextWindow int
	sandbox       sandbox.Status // what its commands will run under
	notices       []string       // what the user should know before the first prompt
	// repo is the repository found for dir, kept for a process whose
	// first turn follows at once (nil otherwise).
	repo *worktree.Repo
	// look is the in-place engine's question to git about dir, asked
	// beside the repository's detection for such a process (nil
	// otherwise); its engine takes the answer if dir is in the checkout
	// it opens on.
	look *snapshot.Look
}

func (d *draft) id() string                       { return d.ws.SessionID }
func (d *draft) Checkpoints() command.Checkpoints { return d.ctl }
func (d *draft) Background() command.Tasks        { return tools.NoTasks{} }
func (d *draft) ContextReport() string {
	return "The session starts with your first prompt.\n" + system.Instructions(d.ws)().Report()
}
func (d *draft) info(prov provider.Provider) Info {
	in := Info{SessionID: d.ws.SessionID, ActiveRoot: d.dir, Provider: prov.Name(), Model: prov.Model(), Workspace: d.expectWS, WorkspaceReason: d.expectWhy, ContextWindow: d.contextWindow, Notices: d.notices, WorkspaceMode: d.mode}
	sandboxInfo(&in, d.sandbox)
	return in
}

func (p *Parts) id() string                       { return p.Session.ID }
func (p *Parts) Checkpoints() command.Checkpoints { return p.Controller }
func (p *Parts) Background() command.Tasks        { return p.Tasks }
func (p *Parts) ContextReport() string {
	return system.Instructions(p.Session.Workspace())().Report() + p.Agent.UsageReport(p.contextWindow)
}
func (p *Parts) info(prov provider.Provider) Info {
	ws := p.Session.Workspace()
	in := diskInfo(prov, p.Session.ID, ws, p.Controller)
	in.WorkspaceMode = session.Mode(ws.Kind)
	if in.Workspace {
		if why := p.git.Unavailable(); why != "" {
			in.Workspace, in.WorkspaceReason = false, why
		}
	}
	// The running turn's checkpoint, once journaled, is on the active
	// branch already (ActiveCount counts it).
	in.Running = p.Controller.RunningCheckpoint()
	in.Repairs, in.Notices = p.Notes, p.Notices
	in.Usage, in.ContextTokens = p.Agent.Usage()
	in.ContextWindow = p.contextWindow
	sandboxInfo(&in, p.Sandbox)
	in.Warnings = append(in.Warnings, p.Warnings...)
	return in
}

// errClosed is returned by calls made after Close.
var errClosed = fault.Plain("app: the session is closed")

// begin registers a call; a turn's context is cancelled by Close. The
// returned func ends the call.
func (s *Session) begin(ctx context.Context, turn bool) (context.Context, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, errClosed
	}
	s.calls.Add(1)
	if !turn {
		return ctx, s.calls.Done, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	if s.turns == nil {
		s.turns = map[*context.CancelFunc]struct{}{}
	}
	s.turns[&cancel] = struct{}{}
	return ctx, func() {
		cancel()
		s.mu.Lock()
		delete(s.turns, &cancel)
		s.mu.Unlock()
		s.calls.Done()
	}, nil
}

// Open opens the session req names (Resume, Continue, Read) or prepares
// a new one (New), with what env gives every session of the process.
func Open(ctx context.Context, env Env, req Request) (*Session, error) {
	switch r := req.(type) {
	case Resume:
		if r.ID == "" {
			return nil, errNoID
		}
	case nil:
		return nil, errors.New("app: Open needs a request (New, Resume, Continue or Read)")
	}
	return open(ctx, env.with(req))
}

var errNoID = fmt.Errorf("no session id given; `yolop sessions` lists them (%w)", session.ErrNotFound)

func open(ctx context.Context, o options) (*Session, error) {
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	prov, err := provider.New(o.Provider)
	if err != nil {
		return nil, err
	}
	moved, err := o.which(ctx)
	if err != nil {
		return nil, err
	}
	m := o.Spares.Manager(o.DataDir, o.Hooks.failpoint())
	if w, err := config.Watch(); err == nil && o.watch() {
		// A claimed spare is watched from before its proof; a bad
		// YOLOP_WATCH_BUDGET is reported when the engine opens.
		m.Watch = &w
	}
	s := &Session{opts: o, prov: prov, start: worktree.NewStarter(*m, o.PrepareSpare)}
	if o.sessionID == "" {
		err = s.newDraft(ctx)
	} else {
		s.state, err = openExisting(ctx, o, prov, moved)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// resolve checks a new session's mode and fills in the directory yolop
// works in.
func (o options) resolve() (options, error) {
	if err := config.CheckWorkspaceMode(o.mode); err != nil {
		return o, err
	}
	dir, err := config.WorkDir(o.Dir)
	o.Dir = dir
	return o, err
}

// which names the session o opens when it names none: the one whose
// worktree yolop runs in, or with Continue the latest of Dir's
// repository. The notes say what following moved sessions did.
func (o *options) which(ctx context.Context) ([]string, error) {
	if sid := catalog.SessionOfWorktree(o.DataDir, o.Dir); sid != "" && o.sessionID == "" {
		// Inside a session's own worktree (the directory yolop prints
		// after each turn): -c continues that session; a new session
		// would start from it as if it were the user's repository.
		if !o.cont {
			return nil, &checkpoint.Error{Code: string(fault.SessionWorktree), Msg: fmt.Sprintf("%s is the worktree of session %s, not your repository: continue that session with `yolop -c` (or --session %s), or start a new one from your repository's directory", o.Dir, sid, sid)}
		}
		o.sessionID = sid
	}
	if !o.cont || o.sessionID != "" {
		return nil, nil
	}
	id, notes, err := catalog.LatestFor(ctx, o.DataDir, o.Dir)
	o.sessionID = id
	return notes, err
}

// openExisting opens session o.sessionID for writing; for reading only
// when o.forReading and it cannot be opened for writing (another process
// holds it, its directory is read-only, its worktree is missing), or when
// its repository is gone. moved are the notes of following a moved
// repository.
func openExisting(ctx context.Context, o options, prov provider.Provider, moved []string) (state, error) {
	if o.forReading {
		// Reading must not re-create a worktree that is gone (a resume
		// does, and says so).
		if why := catalog.MissingWorktree(ctx, o.DataDir, o.sessionID); why != "" {
			return openView(o, why, nil)
		}
	}
	sess, kept, err := resume.Open(o.DataDir, o.sessionID)
	if err != nil {
		if why := session.ReadableOnly(err); o.forReading && why != "" {
			return openView(o, why, err)
		}
		return nil, err
	}
	p, err := assemble(ctx, sess, prov, o, kept)
	if errors.Is(err, worktree.ErrRepoGone) {
		// Run from the repository's new place, the session follows it.
		notes, ferr := catalog.FollowMoved(ctx, o.DataDir, o.Dir, o.sessionID)
		if ferr != nil {
			return nil, errors.Join(err, ferr)
		}
		if len(notes) > 0 {
			moved = append(moved, notes...)
			if sess, err = session.Open(o.DataDir, o.sessionID); err != nil {
				return nil, err
			}
			// The failed assemble applied records to the resume file's
			// state: replay the logs this time.
			p, err = assemble(ctx, sess, prov, o, nil)
		}
	}
	if errors.Is(err, worktree.ErrRepoGone) || errors.Is(err, worktree.ErrBranchGone) {
		// The repository deleted (or moved, and yolop run from
		// elsewhere), or nothing left to add the worktree again on: its
		// conversation can still be listed and replayed; turns and
		// restores are refused with the reason.
		why := worktree.GoneReason(err)
		return openView(o, why, err, "session "+o.sessionID+" is opened for reading only: "+why+". Listing and replay work; turns and restores are refused")
	}
	if err != nil {
		return nil, err
	}
	p.Notes = append(moved, p.Notes...)
	p.contextWindow = o.Provider.ContextWindow
	return p, nil
}

// newDraft prepares a new session: it is created on disk by its first
// prompt (or now: Start Now), its worktree started early when the host
// waits for that prompt (Start Early).
func (s *Session) newDraft(ctx context.Context) error {
	o := s.opts
	if err := config.CheckDataDir(o.DataDir, o.Dir); err != nil {
		return err
	}
	d := &draft{ws: session.Workspace{SessionID: session.NewID(), Kind: session.KindConversation, ActiveRoot: o.Dir, Provider: s.prov.Name(), Model: s.prov.Model()}, dir: o.Dir, contextWindow: o.Provider.ContextWindow}
	if o.oneShot() && o.mode == config.WorkspaceInPlace {
		// Its first turn follows at once, its engine opens in the
		// checkout: what the engine asks git first is asked now, beside
		// the detection and the making of the session.
		d.look = snapshot.LookAhead(ctx, o.Dir)
	}
	why, notRepo, repo := worktree.Unavailable(ctx, o.Dir, o.mode == config.WorkspaceNone)
	if o.oneShot() {
		// Its first turn follows at once: the repository is not asked
		// for again when the session is made.
		d.repo = repo
	}
	d.expectWS, d.expectWhy, d.mode = why == "", why, config.WorkspaceNone
	// Outside any repository: a folder of its own, in place.
	folder := d.expectWS && notRepo
	switch {
	case folder:
		d.mode = config.WorkspaceInPlace
	case d.expectWS:
		d.mode = o.mode
	}
	d.ctl = checkpoint.NewUnstarted(d.ws.SessionID, d.expectWhy)
	if len(o.EditorMCP) > 0 && d.expectWS {
		// Said as soon as the editor opens the session, not only once the
		// first prompt has made it.
		d.notices = append(d.notices, mcp.WorktreeNote)
	}
	// A settings error is left for the first turn to report.
	if sb, err := config.SandboxStatus(o.Sandbox); err == nil {
		d.sandbox = sb
	}
	s.state = d
	if o.start == Now {
		if _, err := s.materialize(ctx, "", nil, nil); err != nil {
			return err
		}
		s.start.PrepareSpare()
	} else if o.start == Early && d.expectWS && !folder && config.SessionKind(d.mode) == session.KindWorktree {
		// Only a worktree session has a worktree to start, and a
		// worktree's view of the checkout to warn about: an in-place
		// one works in the checkout as it is.
		s.start.Early(o.Dir, o.base, d.ws.SessionID)
		s.notices.Draft(worktree.CheckCheckoutOf(o.Dir, agent.InstructionsFile))
	}
	return nil
}

// materialize creates a draft session on disk (and its worktree); it does
// nothing for a session that exists. fill, when set, fills the new
// worktree before the session directory is created (a fork copies its
// files there); materialize returns what it returned. notice, when set,
// is told the progress of a folder's first capture and what a worktree's
// start waits for.
func (s *Session) materialize(ctx context.Context, title string, fill func(ctx context.Context, dir, stateDir string) (int, error), notice func(string)) (int, error) {
	s.create.Lock()
	defer s.create.Unlock()
	d, ok := s.current().(*draft)
	if !ok {
		return 0, nil
	}
	ws := d.ws
	ws.Title = title
	o := s.opts
	ch, err := worktree.Choose(ctx, &ws, worktree.Choice{DataDir: o.DataDir, Dir: o.Dir, Kind: config.SessionKind(o.mode), Explicit: o.explicit,
		Base: o.base, WorkBase: o.workBase, Owner: catalog.WorktreeOwner(o.DataDir), FolderLimits: config.Folder,
		Starter: s.start, Notice: notice, Instructions: agent.InstructionsFile, Detected: d.repo})
	if err != nil {
		return 0, refusal(err)
	}
	// The mark of a start in progress goes once the session directory
	// exists or what this call made is undone.
	defer ch.Started.Done()
	if ws.Kind == session.KindInPlace {
		// Its commands get read-only paths: the check that they can is
		// made while the session directory is written (assemble plans
		// the sandbox).
		sandbox.ProbeEarly(o.DataDir)
	}
	// A session that cannot be opened must not be left behind half made.
	filled := 0
	if fill != nil && ws.Worktree != nil {
		if filled, err = fill(ctx, ws.Worktree.Path, o.DataDir); err != nil {
			return 0, ch.Undo(ctx, err)
		}
	}
	// On disk in the background: the first capture waits for it before
	// its ref names the session, the first turn before it returns.
	sess, err := session.Start(o.DataDir, ws)
	if err != nil {
		return 0, ch.Undo(ctx, err)
	}
	dir := sess.Dir
	if ws.Worktree != nil {
		// A worktree's start is marked until its session is complete:
		// the mark lets the next start put back the worktree and branch
		// of one that died before (worktree.Manager.adoptOrphan).
		if err := sess.Durable(); err != nil {
			if cerr := sess.Close(); cerr != nil && !errors.Is(cerr, err) {
				err = errors.Join(err, cerr)
			}
			if rmErr := os.RemoveAll(dir); rmErr != nil {
				err = fmt.Errorf("%w (and removing the half-made session %s failed: %v)", err, dir, rmErr)
			}
			return 0, ch.Undo(ctx, err)
		}
	}
	// The claim's proof that the worktree is clean stands for the first
	// capture only if nothing writes there before it: not a fork's copy,
	// not an MCP server started with the session.
	ao := o
	ao.turnNext, ao.look = true, d.look
	if ch.Started != nil {
		ao.knownClean = ch.Started.KnownClean && fill == nil && len(o.servers()) == 0
		ao.knownWalk, ao.knownWatch = ch.Started.Walk, ch.Started.Watch
	}
	p, err := assemble(ctx, sess, s.prov, ao, nil)
	if err != nil {
		if rmErr := os.RemoveAll(dir); rmErr != nil {
			err = fmt.Errorf("%w (and removing the half-made session %s failed: %v)", err, dir, rmErr)
		}
		return 0, ch.Undo(ctx, err)
	}
	p.contextWindow = o.Provider.ContextWindow
	p.Notes = append(p.Notes, ch.Notes...)
	s.notices.Started(ch.Check, ch.Notices)
	s.mu.Lock()
	s.state = p
	s.mu.Unlock()
	if ws.Worktree != nil {
		s.start.Started(ws.RepoRoot)
	}
	return filled, nil
}

// current is the session's state now.
func (s *Session) current() state {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// ID returns the session id.
func (s *Session) ID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.id()
}

// Exists reports whether the session is on disk (opened for writing, or
// for reading only).
func (s *Session) Exists() bool {
	_, isDraft := s.current().(*draft)
	return !isDraft
}

// Parts returns the opened parts of a session that exists on disk, nil
// before its first prompt. Tests and benchmarks use it to reach the parts
// the product assembled.
func (s *Session) Parts() *Parts {
	p, _ := s.current().(*Parts)
	return p
}

// Info describes the session.
func (s *Session) Info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.state.info(s.prov)
	in.ProviderNotice = s.opts.Provider.NoKeyNotice(in.Provider)
	return in
}

// Exec runs a slash command through the command registry.
func (s *Session) Exec(ctx context.Context, cmd command.Command) (command.Result, error) {
	ctx, end, err := s.begin(ctx, false)
	if err != nil {
		return command.Result{}, err
	}
	defer end()
	st := s.current()
	if p, ok := st.(*Parts); ok && cmd.Confirm {
		// A restore in place writes the checkout: one writer at a time.
		release, err := p.holdCheckout(ctx, false, false, nil)
		if err != nil {
			return command.Result{}, err
		}
		defer release()
	}
	return command.Run(ctx, landTarget{st, s}, cmd)
}

// PreviewDiff returns the diff of one path that confirming the preview
// with token would restore (current files to the target). It changes
// nothing.
func (s *Session) PreviewDiff(ctx context.Context, token, path string) (*checkpoint.PathDiff, error) {
	ctx, end, err := s.begin(ctx, false)
	if err != nil {
		return nil, err
	}
	defer end()
	p := s.Parts()
	if p == nil {
		return nil, fmt.Errorf("unknown preview token %q: this session has no previews yet", token)
	}
	return p.Controller.PreviewDiff(ctx, token, path)
}

// Transcript returns the active branch's transcript (nothing before the
// first prompt).
func (s *Session) Transcript() []agent.Item {
	if p := s.Parts(); p != nil {
		return p.Agent.Transcript()
	}
	return nil
}

// TranscriptParts is Transcript for a host that draws the newest part
// first (agent.Agent.TranscriptParts).
func (s *Session) TranscriptParts() ([]agent.Item, func() []agent.Item) {
	if p := s.Parts(); p != nil {
		return p.Agent.TranscriptParts()
	}
	return nil, nil
}

// StartNotices waits (until ctx ends) for what a new session's host shows
// before the first prompt, each notice once: the checkout's uncommitted
// changes and submodules its worktree will not have (the first turn does
// not repeat them unless they changed).
func (s *Session) StartNotices(ctx context.Context) []string {
	return s.notices.Early(ctx)
}

// Close cancels a running turn and waits for every call in progress (the
// turn is journaled as cancelled), then releases the session's parts in
// the reverse order they were opened. Later calls fail.
func (s *Session) Close() error {
	defer s.start.Drop()
	if s.opts.oneShot() {
		// A process that lives for one turn asks for the next session's
		// spare as it ends: the checkout would otherwise slow its own
		// last steps (the index update it waits for, the journal's
		// syncs), which no turns lock covers.
		defer s.start.PrepareSpare()
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for cancel := range s.turns {
		(*cancel)()
	}
	s.mu.Unlock()
	s.calls.Wait()
	if p := s.Parts(); p != nil {
		return p.Close()
	}
	if v, _ := s.current().(*view); v != nil {
		return v.sess.Close()
	}
	return nil
}

// refusal gives the workspace's refusals (a folder's, a checkout another
// session holds) the type hosts show as a refusal (ACP: "Refused (code):
// …"), with their code.
func refusal(err error) error {
	var fe *worktree.FolderError
	var ie *worktree.CheckoutInUseError
	switch {
	case errors.As(err, &fe):
		return &checkpoint.Error{Code: string(fe.Code), Msg: fe.Msg, Err: fe.Err}
	case errors.As(err, &ie):
		return &checkpoint.Error{Code: string(fault.CheckoutInUse), Msg: ie.Error(), Err: err}
	}
	return err
}
