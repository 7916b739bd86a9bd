package tui

import (
	"context"

	tea "charm.land/bubbletea/v2"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/command"
)

// updateMsg carries one live event of the running turn and the session's
// state at that moment (the running turn's checkpoint, redo cleared).
type updateMsg struct {
	u    agent.Update
	info app.Info
}

// infoMsg is the session's state, polled while a turn runs.
type infoMsg struct {
	info app.Info
	gen  int // the turn it was polled for
}

// diffDoneMsg carries the diff of one path of a preview.
type diffDoneMsg struct {
	diff *checkpoint.PathDiff
	err  error
}

// diffCmd fetches the diff of path in the preview with token.
func diffCmd(ctx context.Context, s Session, c *calls, token, path string) tea.Cmd {
	c.wg.Add(1)
	return func() tea.Msg {
		defer c.wg.Done()
		d, err := s.PreviewDiff(ctx, token, path)
		return diffDoneMsg{diff: d, err: err}
	}
}

// turnDoneMsg ends a turn. It is the last message of its stream.
type turnDoneMsg struct {
	res  app.TurnResult
	err  error
	info app.Info
}

// execDoneMsg is the outcome of a slash command run through Session.Exec.
type execDoneMsg struct {
	cmd  command.Command
	res  command.Result
	err  error
	info app.Info
	// transcript is the active branch re-read after a restore that moved
	// the conversation; nil otherwise.
	transcript []agent.Item
	// hadTranscript tells an empty branch apart from "not re-read".
	hadTranscript bool
}

// turnStream delivers a turn's updates and its final turnDoneMsg in order.
// The turn runs in one command; another command reads the stream one message
// at a time and is re-armed by Update after each update.
type turnStream struct {
	ch chan tea.Msg
}

// promptCmd runs the turn and pushes its events into st. It returns no
// message itself: turnDoneMsg travels through the stream after the last
// update so that nothing overtakes it.
func promptCmd(ctx context.Context, s Session, c *calls, st turnStream, text string) tea.Cmd {
	c.wg.Add(1)
	return func() tea.Msg {
		defer c.wg.Done()
		deliver := func(msg tea.Msg) {
			select {
			case st.ch <- msg:
			case <-c.quit:
			}
		}
		res, err := s.Prompt(ctx, text, func(u agent.Update) {
			if u.Tool != nil {
				// The agent may reuse the ToolInfo it hands out; keep a copy.
				t := *u.Tool
				u.Tool = &t
			}
			deliver(updateMsg{u: u, info: s.Info()})
		})
		deliver(turnDoneMsg{res: res, err: err, info: s.Info()})
		close(st.ch)
		return nil
	}
}

// waitStream returns the next message of a turn's stream.
func waitStream(st turnStream) tea.Cmd {
	return func() tea.Msg {
		msg, ok := <-st.ch
		if !ok {
			return nil
		}
		return msg
	}
}

// execCmd runs one slash command and re-reads what the result invalidates.
func execCmd(ctx context.Context, s Session, c *calls, cmd command.Command) tea.Cmd {
	c.wg.Add(1)
	return func() tea.Msg {
		defer c.wg.Done()
		res, err := s.Exec(ctx, cmd)
		msg := execDoneMsg{cmd: cmd, res: res, err: err, info: s.Info()}
		if err == nil && res.Kind == command.ResultRestored && res.Restored != nil && restoresConversation(res.Restored) {
			msg.transcript = s.Transcript()
			msg.hadTranscript = true
		}
		return msg
	}
}

// restoresConversation reports whether a restore replaced the active
// branch, so the transcript must be re-read.
func restoresConversation(r *checkpoint.Restored) bool {
	return r.Prompt != "" || r.Mode.HasConversation()
}
