// Package tui is yolop's terminal user interface: a scrolling transcript, a
// multiline composer, a status bar, slash-command completion and the rewind
// picker. It renders what the session returns and never re-implements what a
// command does: every restore goes through Session.Exec with the preview's
// confirmation token.
//
// One root model owns all state. Session calls (turns, commands) run inside
// tea.Cmd goroutines and come back as messages, so Update never blocks on IO.
package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/fault"
)

// Session is the part of a live session the TUI drives.
type Session interface {
	Info() app.Info
	// Prompt runs one turn. Cancelling ctx cancels the turn (Ctrl+C).
	// onUpdate is called from the turn's goroutine for every live event.
	Prompt(ctx context.Context, text string, onUpdate func(agent.Update)) (app.TurnResult, error)
	// Exec runs a slash command: rewind list/preview/confirm, undo, redo,
	// compact, tasks.
	Exec(ctx context.Context, cmd command.Command) (command.Result, error)
	// PreviewDiff is the diff of one path that confirming the preview
	// with token restores (current files to the target).
	PreviewDiff(ctx context.Context, token, path string) (*checkpoint.PathDiff, error)
	// Transcript is the active branch, for the first render and after a
	// conversation restore.
	Transcript() []agent.Item
}

// ErrInterrupted is returned by Run when the process got SIGINT from outside
// the terminal (kill -INT); the caller maps it to exit code 130. Ctrl+C typed
// in the UI is a key, not a signal.
var ErrInterrupted = fault.Plain("tui: interrupted")

// Options are the terminal streams and display preferences.
type Options struct {
	In      io.Reader // nil: standard input (or the controlling TTY)
	Out     io.Writer // nil: standard output
	NoColor bool      // NO_COLOR: no colors, plain attributes only
	// Back, for the picker: the session /resume was typed in, which Esc
	// goes back to ("" for yolop -r: Esc quits).
	Back string
	// Note, for the picker: why the session chosen last did not open.
	Note string
}

// Run shows the TUI for s until the user quits or ctx is cancelled. It
// returns nil on a normal quit. It prints nothing after the UI closes; the
// caller prints how to resume the session. Run returns only after every
// session call it started has returned, so the caller may close the session.
func Run(ctx context.Context, s Session, o Options) error {
	if s == nil {
		return errors.New("tui: no session")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	items, earlier := transcriptOf(s)
	m := newModel(ctx, s, s.Info(), items, o.NoColor, time.Now, time.Local)
	m.earlier = earlier
	opts := []tea.ProgramOption{tea.WithContext(ctx)}
	if o.In != nil {
		opts = append(opts, tea.WithInput(o.In))
	}
	if o.Out != nil {
		opts = append(opts, tea.WithOutput(o.Out))
	}
	if o.NoColor {
		opts = append(opts, tea.WithColorProfile(colorprofile.Ascii))
	}
	p := tea.NewProgram(m, opts...)
	_, err := p.Run()

	// Stop a turn still running (the terminal went away, ctx was cancelled)
	// and wait for every session call so the log is flushed before the
	// caller closes the session.
	m.shutdown()
	switch {
	case err == nil && m.resume:
		return ErrResume
	case err == nil:
		return nil
	case errors.Is(err, tea.ErrInterrupted):
		return ErrInterrupted
	case errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("tui: %w", err)
}

// partedTranscript is a session that gives its newest transcript items
// without reading its older history (app.Session).
type partedTranscript interface {
	TranscriptParts() ([]agent.Item, func() []agent.Item)
}

// transcriptOf returns what the first screen shows and, for a long
// session, the loader of the items before it (drawn when loaded).
func transcriptOf(s Session) ([]agent.Item, func() []agent.Item) {
	if p, ok := s.(partedTranscript); ok {
		return p.TranscriptParts()
	}
	return s.Transcript(), nil
}

// calls tracks session calls started by the model so Run can wait for them.
type calls struct {
	wg sync.WaitGroup
	// quit is closed when the program has ended; a turn's goroutine then
	// stops delivering updates nobody reads.
	quit     chan struct{}
	quitOnce sync.Once
}

func newCalls() *calls { return &calls{quit: make(chan struct{})} }

func (c *calls) stop() { c.quitOnce.Do(func() { close(c.quit) }) }
