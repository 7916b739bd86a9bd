// Package acp serves yolop as an Agent Client Protocol agent (protocol
// version 1) over newline-delimited JSON-RPC on stdio, for editors such as
// Zed. The coder/acp-go-sdk stays inside this package.
//
// Every turn's output becomes session/update notifications: streamed text
// (agent_message_chunk), reasoning (agent_thought_chunk) and tool calls
// (tool_call / tool_call_update, file edits as diffs). Slash commands arrive
// as prompt text. Because ACP has no rewind picker, a restore takes two
// prompts: the first (/rewind cp2 both, /undo, /redo) answers with the
// preview, its token and the exact command that confirms it; the second
// (that command) applies it. Refusals are agent messages and the turn ends
// normally, so editors show them; JSON-RPC errors are kept for protocol
// misuse (unknown session, a prompt during a running turn) and failures.
package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/buildinfo"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/mcp"
)

// Session is one open yolop session, as the ACP host uses it.
type Session interface {
	ID() string
	Info() app.Info
	// Prompt runs one turn. onUpdate receives the turn's live output; it
	// may be called from any goroutine until Prompt returns. Cancelling ctx
	// (session/cancel) ends the turn with TurnResult.Status "cancelled".
	Prompt(ctx context.Context, text string, onUpdate func(agent.Update)) (app.TurnResult, error)
	// Exec runs a slash command. A refusal is a *checkpoint.Error or a
	// *command.UsageError.
	Exec(ctx context.Context, cmd command.Command) (command.Result, error)
	// Transcript is the active branch, replayed by session/load.
	Transcript() []agent.Item
	Close() error
}

// Opener creates and opens sessions.
type Opener interface {
	// New creates a session for cwd with the client's MCP servers.
	New(ctx context.Context, cwd string, mcp []mcp.Server) (Session, error)
	// Load opens an existing session. A session locked by another process
	// is an error whose message says so ("locked").
	Load(ctx context.Context, sessionID, cwd string, mcp []mcp.Server) (Session, error)
}

// Serve speaks ACP on in/out until the client disconnects or ctx is
// cancelled. out carries protocol messages only; diagnostics go to log
// (nil discards them). When it returns, every running turn has been
// cancelled and every session it opened has been closed. It returns nil
// after the client disconnects, ctx's error after a cancellation, and the
// errors of sessions that failed to close.
func Serve(ctx context.Context, in io.Reader, out io.Writer, opener Opener, log io.Writer) error {
	if log == nil {
		log = io.Discard
	}
	lg := slog.New(slog.NewTextHandler(log, nil)).With("component", "acp")
	base, stop := context.WithCancel(ctx)
	defer stop()

	s := &server{
		opener:   opener,
		log:      lg,
		base:     base,
		out:      newOutbound(out),
		sessions: make(map[string]*live),
		ready:    make(chan struct{}),
	}
	// The connection starts reading at once; handlers wait for ready so
	// they never see s.conn unset.
	s.conn = sdk.NewConnection(s.handle, s.out, newInbound(in, s.out, lg))
	s.conn.SetLogger(lg)
	close(s.ready)

	var result error
	select {
	case <-s.conn.Done():
		lg.Info("client disconnected")
	case <-ctx.Done():
		lg.Info("stopping", "cause", context.Cause(ctx))
		result = ctx.Err()
	}
	stop() // ends every running turn
	return errors.Join(result, s.shutdown())
}

// server is one ACP connection.
type server struct {
	opener Opener
	log    *slog.Logger
	base   context.Context // cancelled when Serve stops: ends every turn
	out    *outbound
	conn   *sdk.Connection // set before ready is closed
	ready  chan struct{}

	mu       sync.Mutex // guards sessions and closing; wg.Add happens under it
	sessions map[string]*live
	closing  bool
	wg       sync.WaitGroup // running handlers
}

// live is an open session and its running turn, if any.
type live struct {
	sess Session

	mu      sync.Mutex         // guards cancel, done and retired
	cancel  context.CancelFunc // cancels the running turn; nil when idle
	done    chan struct{}      // closed when the running turn ends
	retired bool               // closed by session/close or shutdown: no more turns
}

var (
	errBusy    = errors.New("a turn is running")
	errRetired = errors.New("the session was closed")
)

// begin marks a turn as running.
func (l *live) begin(cancel context.CancelFunc) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.retired:
		return errRetired
	case l.cancel != nil:
		return errBusy
	}
	l.cancel, l.done = cancel, make(chan struct{})
	return nil
}

func (l *live) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cancel()
	close(l.done)
	l.cancel, l.done = nil, nil
}

// cancelTurn cancels the running turn, if any.
func (l *live) cancelTurn() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel == nil {
		return false
	}
	l.cancel()
	return true
}

// retire refuses further turns, cancels the running one and returns a
// channel closed when it has ended (nil when idle).
func (l *live) retire() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.retired = true
	if l.cancel == nil {
		return nil
	}
	l.cancel()
	return l.done
}

func (l *live) running() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cancel != nil
}

// enter registers a running handler; false once the server is stopping.
func (s *server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.wg.Add(1)
	return true
}

// shutdown stops new work, cancels running turns, waits for every handler
// and closes every session.
func (s *server) shutdown() error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	for _, l := range s.snapshot() {
		l.retire()
	}
	s.wg.Wait()

	s.mu.Lock()
	open := s.sessions
	s.sessions = map[string]*live{}
	s.mu.Unlock()
	ids := make([]string, 0, len(open))
	for id := range open {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var errs []error
	for _, id := range ids {
		if err := open[id].sess.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close session %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

func (s *server) snapshot() []*live {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*live, 0, len(s.sessions))
	for _, l := range s.sessions {
		out = append(out, l)
	}
	return out
}

// version names this build for initialize's agentInfo: the one
// `yolop version` prints.
func version() string { return buildinfo.Version() }
