package setup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/fsutil"
)

// File records, in the session directory, that the worktree's setup
// command ([worktree] setup) was started for the session, and how it
// ended: it runs once per session, before the first turn, and never again
// (not on -c, not after a crash in the middle of it).
const File = "setup.json"

// record is File.
type record struct {
	Command  string     `json:"command"`
	Started  time.Time  `json:"started"`
	Ended    *time.Time `json:"ended,omitempty"`
	ExitCode int        `json:"exit_code"`
	// Failure says why it did not succeed ("" when it did or while it
	// runs).
	Failure string `json:"failure,omitempty"`
}

// toolID names the setup's live updates, which hosts show like a command
// the agent ran.
const toolID = "setup"

// Started reports whether the setup was started for the session whose
// directory is dir (its record exists, or cannot be told apart from one
// that does): it never runs again.
func Started(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, File))
	return !errors.Is(err, fs.ErrNotExist)
}

// Session is what a run needs of its session.
type Session struct {
	Dir      string       // the session directory, where the record is kept
	Worktree string       // where the command runs
	Tasks    *tools.Tasks // runs it like a foreground command of the agent's
	// Note tells the model (a notice its first turn reads).
	Note func(agent.NoticeData) error
}

// Run runs command, the settings' [worktree] setup, in the session's
// worktree before its first turn (nothing when there is none or one was
// started already), under the session's sandbox; its output
// goes to onUpdate (nil: nowhere) as a command's would. Its failure is
// never fatal: it is told to the user (the returned warning) and to the
// model (a notice its first turn reads). An error is returned only when
// the session's own files could not be written, or ctx was cancelled
// (the turn then does not run).
func Run(ctx context.Context, s Session, command string, onUpdate func(agent.Update)) (warning string, err error) {
	if command == "" || Started(s.Dir) {
		return "", nil
	}
	defer func() {
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("the worktree's setup command was interrupted, so the turn did not run (the setup is not run again; send the prompt again to start the turn): %w", err)
		}
	}()
	if onUpdate == nil {
		onUpdate = func(agent.Update) {}
	}
	rec := record{Command: command, Started: time.Now().UTC(), ExitCode: -1}
	// Recorded before it starts: a crash in the middle of it does not
	// make the next process run it again over what it left.
	if err := writeRecord(s.Dir, rec); err != nil {
		return "", err
	}
	info := &agent.ToolInfo{ID: toolID, Name: "setup", Kind: "execute", Title: "setup: " + command, Args: mustJSON(map[string]string{"command": command}), Status: "in_progress"}
	onUpdate(agent.Update{Kind: agent.UpdateSetup, Tool: copyInfo(info)})
	var shown strings.Builder
	res, runErr := s.Tasks.RunSetup(ctx, command, s.Worktree, func(chunk string) {
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
	werr := writeRecord(s.Dir, rec)
	took := ""
	if res.Elapsed >= time.Second {
		took = " after " + res.Elapsed.Round(100*time.Millisecond).String()
	}
	var note agent.NoticeData
	if res.Failure == "" {
		note = agent.NoticeData{Kind: "setup", Text: fmt.Sprintf("The worktree's setup command `%s` ran before the first turn%s.", command, strings.Replace(took, " after ", ", in ", 1))}
	} else {
		warning = fmt.Sprintf("the worktree's setup command `%s` failed (%s)%s; the session goes on without it: what it should have prepared may be missing", command, res.Failure, took)
		text := fmt.Sprintf("The worktree's setup command `%s` ([worktree] setup in the user's settings) failed before this session's first turn (%s). What it should have prepared (dependencies, generated files) may be missing from the worktree.", command, res.Failure)
		if out := strings.TrimSpace(res.Output); out != "" {
			if len(out) > 2<<10 {
				out = "…" + out[len(out)-2<<10:]
			}
			text += " The end of its output:\n" + out
		}
		note = agent.NoticeData{Kind: "setup_failed", Model: true, Text: text}
	}
	nerr := s.Note(note)
	if err := errors.Join(werr, nerr); err != nil {
		return warning, fmt.Errorf("record the worktree setup: %w", err)
	}
	return warning, runErr
}

func writeRecord(dir string, rec record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(filepath.Join(dir, File), append(b, '\n'), 0o600)
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
