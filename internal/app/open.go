package app

import (
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/mcp"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/snapshot"
)

// Env is what every session a process opens shares.
type Env struct {
	DataDir  string
	Dir      string // where yolop was started (-C); "" is the working directory
	Provider provider.Config
	// MCP are the settings' MCP servers, EditorMCP those an editor (ACP)
	// configured for its project directory: the session says where they
	// work.
	MCP, EditorMCP []mcp.Server
	Sandbox        string // the --sandbox level ("" = the settings' or write)
	Spares         config.Spares
	// PrepareSpare, when set, starts a detached, low-priority preparation
	// of a spare worktree for the checkout at repoRoot, without waiting.
	PrepareSpare func(repoRoot string)
	Life         Life
	Hooks        Hooks // test and fault-injection seams; zero in the product
}

// Life is how long the opening process lives: it decides how captures
// learn what changed and what turns warn about.
type Life int

const (
	// Brief: a command that opens a session and leaves (listings,
	// landing, tests); every capture walks the tree.
	Brief Life = iota
	// OneTurn: print mode. The first capture's walk arms a file watcher
	// for the end of the turn, and the turn warns about background tasks,
	// which end with the process.
	OneTurn
	// LongLived: the TUI and ACP; a watcher armed in the background tells
	// each capture what changed.
	LongLived
)

// Request names the session Open opens: New, Resume, Continue or Read.
type Request interface{ request() }

// New prepares a new session in Env.Dir. Mode is where it works
// (config.WorkspaceWorktree, the default, WorkspaceInPlace or
// WorkspaceNone); Explicit says the command line chose it (in place in
// $HOME or / needs that).
type New struct {
	Mode     string
	Explicit bool
	Start    Start
}

// Start is when a new session is made.
type Start int

const (
	// AtFirstPrompt: its first prompt creates it (print mode).
	AtFirstPrompt Start = iota
	// Early: its worktree is claimed or checked out as soon as it opens,
	// while the host waits for a prompt (the TUI, ACP's session/new); the
	// first prompt makes its branch, and one closed unused leaves nothing.
	Early
	// Now: it is created on disk at once.
	Now
)

// Resume opens the session with this id.
type Resume struct{ ID string }

// Continue opens the session of Env.Dir's repository used last (or the
// one whose worktree Env.Dir is).
type Continue struct{}

// Read opens the session with this id (for "", the one Continue opens) to
// list it: for reading only when it cannot be opened for writing (a
// read-only directory, another process holds it, its worktree is
// missing), every turn and restore then refused with the reason.
type Read struct{ ID string }

func (New) request()      {}
func (Resume) request()   {}
func (Continue) request() {}
func (Read) request()     {}

// options are an Env with its request resolved.
type options struct {
	Env
	sessionID        string // "" for a new session
	cont, forReading bool
	mode             string
	explicit         bool
	start            Start
	// base is the commit a fork's worktree starts from, workBase the one
	// its work counts from (see Fork).
	base, workBase string
	// knownClean: the new session's worktree was just proved clean by its
	// claim and nothing ran in it since; knownWalk is the walk made when
	// it was parked, knownWatch the watcher armed before that proof.
	knownClean bool
	knownWalk  *snapshot.Walk
	knownWatch *snapshot.Prewatch
	// look is git's answer about an in-place checkout, asked while the
	// session was being made (snapshot.LookAhead).
	look *snapshot.Look
	// turnNext: a turn follows the assembly at once (the session is
	// being made by its first prompt).
	turnNext bool
}

func (e Env) with(req Request) options {
	o := options{Env: e, mode: config.WorkspaceWorktree}
	switch r := req.(type) {
	case New:
		o.explicit, o.start = r.Explicit, r.Start
		if r.Mode != "" {
			o.mode = r.Mode
		}
	case Resume:
		o.sessionID = r.ID
	case Continue:
		o.cont = true
	case Read:
		o.sessionID, o.forReading, o.cont = r.ID, true, r.ID == ""
	}
	return o
}

func (o options) watch() bool   { return o.Life != Brief }
func (o options) oneShot() bool { return o.Life == OneTurn }

// servers are the session's MCP servers, the settings' and the editor's.
func (o options) servers() []mcp.Server {
	return append(append([]mcp.Server(nil), o.MCP...), o.EditorMCP...)
}
