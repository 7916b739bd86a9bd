package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/fsutil"
	"github.com/yolop-dev/yolop/internal/session"
)

// SetupFile records, in the session directory, that the worktree's setup
// command ([worktree] setup) was started for the session, and how it
// ended: it runs once per session, before the first turn, and never again
// (not on -c, not after a crash in the middle of it).
const SetupFile = "setup.json"

// setupRecord is SetupFile.
type setupRecord struct {
	Command  string     `json:"command"`
	Started  time.Time  `json:"started"`
	Ended    *time.Time `json:"ended,omitempty"`
	ExitCode int        `json:"exit_code"`
	// Failure says why it did not succeed ("" when it did or while it
	// runs).
	Failure string `json:"failure,omitempty"`
}

// setupToolID names the setup's live updates, which hosts show like a
// command the agent ran.
const setupToolID = "setup"

// setupPending reports whether session p still has its setup to run: a
// worktree session, a setup command in the settings, no record of an
// earlier start and no turn yet.
func setupPending(p *Parts) bool {
	if p.setup == "" || p.Session.Workspace().Kind != session.KindWorktree || p.Controller.ReadOnly() != "" {
		return false
	}
	if _, err := os.Lstat(p.Session.Path(SetupFile)); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	return len(p.Timeline.State().Order) == 0
}

// runSetup runs the session's setup command in its worktree, before its
// first turn, under the session's sandbox; its output goes to onUpdate
// as a command's would. Its failure is never fatal: it is told to the
// user (the returned warning) and to the model (a notice its first turn
// reads). An error is returned only when the session's own files could
// not be written, or ctx was cancelled.
func runSetup(ctx context.Context, p *Parts, onUpdate func(agent.Update)) (warning string, err error) {
	if onUpdate == nil {
		onUpdate = func(agent.Update) {}
	}
	ws := p.Session.Workspace()
	dir := ws.Worktree.Path
	rec := setupRecord{Command: p.setup, Started: time.Now().UTC(), ExitCode: -1}
	// Recorded before it starts: a crash in the middle of it does not
	// make the next process run it again over what it left.
	if err := writeSetupRecord(p, rec); err != nil {
		return "", err
	}
	info := &agent.ToolInfo{ID: setupToolID, Name: "setup", Kind: "execute", Title: "setup: " + p.setup, Args: mustJSON(map[string]string{"command": p.setup}), Status: "in_progress"}
	onUpdate(agent.Update{Kind: agent.UpdateSetup, Tool: copyInfo(info)})
	var shown strings.Builder
	res, runErr := p.Tasks.RunSetup(ctx, p.setup, dir, func(chunk string) {
		shown.WriteString(chunk)
		if shown.Len() > 64<<10 {
			s := shown.String()
			shown.Reset()
			shown.WriteString(s[len(s)-32<<10:])
		}
		i := copyInfo(info)
		i.Result = shown.String()
		onUpdate(agent.Update{Kind: agent.UpdateSetup, Text: chunk, Tool: i})
	})
	end := time.Now().UTC()
	rec.Ended, rec.ExitCode, rec.Failure = &end, res.ExitCode, res.Failure
	info.Result = res.Output
	info.Status, info.IsError = "completed", res.Failure != ""
	if info.IsError {
		info.Status = "failed"
	}
	onUpdate(agent.Update{Kind: agent.UpdateSetup, Tool: copyInfo(info)})
	werr := writeSetupRecord(p, rec)
	took := ""
	if res.Elapsed >= time.Second {
		took = " after " + res.Elapsed.Round(100*time.Millisecond).String()
	}
	var note agent.NoticeData
	if res.Failure == "" {
		note = agent.NoticeData{Kind: "setup", Text: fmt.Sprintf("The worktree's setup command `%s` ran before the first turn%s.", p.setup, strings.Replace(took, " after ", ", in ", 1))}
	} else {
		warning = fmt.Sprintf("the worktree's setup command `%s` failed (%s)%s; the session goes on without it: what it should have prepared may be missing", p.setup, res.Failure, took)
		text := fmt.Sprintf("The worktree's setup command `%s` ([worktree] setup in the user's settings) failed before this session's first turn (%s). What it should have prepared (dependencies, generated files) may be missing from the worktree.", p.setup, res.Failure)
		if out := strings.TrimSpace(res.Output); out != "" {
			if len(out) > 2<<10 {
				out = "…" + out[len(out)-2<<10:]
			}
			text += " The end of its output:\n" + out
		}
		note = agent.NoticeData{Kind: "setup_failed", Model: true, Text: text}
	}
	nerr := p.Agent.Note(p.Controller.Head(), note)
	if err := errors.Join(werr, nerr); err != nil {
		return warning, fmt.Errorf("record the worktree setup: %w", err)
	}
	return warning, runErr
}

func writeSetupRecord(p *Parts, rec setupRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(p.Session.Path(SetupFile), append(b, '\n'), 0o600)
}

func copyInfo(i *agent.ToolInfo) *agent.ToolInfo {
	c := *i
	return &c
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "{}"
	}
	return string(b)
}
