// Package print is yolop's one-shot host: `yolop -p PROMPT` runs one turn
// or one slash command and prints the result as text or as exactly one JSON
// object on one line.
package print

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/fault"
)

// Session is what print mode needs from a live session.
type Session interface {
	ID() string
	Exists() bool
	Info() app.Info
	Prompt(ctx context.Context, text string, onUpdate func(agent.Update)) (app.TurnResult, error)
	Exec(ctx context.Context, cmd command.Command) (command.Result, error)
}

// Options configures one print-mode run.
type Options struct {
	Prompt string
	JSON   bool
	Stdout io.Writer
	Stderr io.Writer
	// ConfirmPrefix is the command line that reaches this session again,
	// e.g. "yolop --session s_123"; a preview prints it with `-p '<cmd>'`.
	ConfirmPrefix string
	// Starting, when set, is told on stderr in text mode before the first
	// turn of a new session creates it (e.g. what a slow checkout is for).
	Starting string
}

// Run executes the prompt or slash command and returns the code of its
// failure ("" when it succeeded), which is already reported; its exit
// status is the code's in fault's table.
func Run(ctx context.Context, s Session, o Options) fault.Code {
	p := &printer{o: o, sid: s.ID(), s: s}
	if s.Exists() {
		// Repairs made when the session was opened (an interrupted restore
		// rolled back, an interrupted turn closed) are told once: on
		// stderr in text mode, as "repairs" in the JSON object.
		p.repairs = s.Info().Repairs
		if !o.JSON {
			for _, r := range p.repairs {
				fmt.Fprintln(o.Stderr, "yolop: repaired:", r)
			}
			p.textWarnings()
		}
		p.notices(s)
	}
	if command.IsCommand(o.Prompt) {
		return p.command(ctx, s)
	}
	p.o.Prompt = command.Prompt(o.Prompt)
	return p.turn(ctx, s)
}

type printer struct {
	o       Options
	sid     string
	s       Session
	repairs []string
	noticed bool
	warned  bool
}

// notices tells the session's setup problems (an MCP server that did not
// start) once, on stderr in both modes: they are not the result.
func (p *printer) notices(s Session) {
	if p.noticed {
		return
	}
	p.noticed = true
	for _, n := range s.Info().Notices {
		fmt.Fprintln(p.o.Stderr, "yolop:", n)
	}
}

// warnings are what the user must be told once about the session (what
// the sandbox does not confine); empty after the first call and before
// the session exists.
func (p *printer) warnings() []string {
	if p.warned || !p.s.Exists() {
		return nil
	}
	p.warned = true
	return p.s.Info().Warnings
}

func (p *printer) textWarnings() {
	for _, w := range p.warnings() {
		fmt.Fprintln(p.o.Stderr, "yolop: warning:", w)
	}
}

func (p *printer) json(v any) {
	if m, ok := v.(map[string]any); ok && len(p.repairs) > 0 {
		m["repairs"] = p.repairs
	}
	if m, ok := v.(map[string]any); ok {
		if w := p.warnings(); len(w) > 0 {
			// After a turn's own warnings, when it has some.
			prev, _ := m["warnings"].([]string)
			m["warnings"] = append(append([]string(nil), prev...), w...)
		}
	}
	b, err := JSONLine(v)
	if err != nil {
		b, _ = JSONLine(map[string]string{"error": err.Error(), "code": string(fault.Internal)})
	}
	fmt.Fprint(p.o.Stdout, string(b))
}

// JSONLine encodes v as one line of JSON for scripts: no HTML escaping
// (a prompt's <, > and & stay as they are), newline-terminated.
func JSONLine(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// fail reports an error in the selected format and returns its code.
func (p *printer) fail(err error, ctx context.Context) fault.Code {
	code := fault.Of(err)
	if code != fault.Usage && ctx.Err() != nil {
		// Ctrl+C: whatever was stopped was rolled back (the message says
		// so); the code says it was the user's doing.
		code = fault.Interrupted
	}
	if p.o.JSON {
		p.json(map[string]any{"error": command.ErrorText(err), "code": code})
	} else {
		fmt.Fprintln(p.o.Stderr, "yolop:", command.ErrorText(err))
	}
	return code
}

func (p *printer) confirmLine(cmd string) string {
	return fmt.Sprintf("%s -p '%s'", p.o.ConfirmPrefix, cmd)
}

func (p *printer) command(ctx context.Context, s Session) fault.Code {
	cmd, err := command.Parse(p.o.Prompt)
	if err != nil {
		return p.fail(err, ctx)
	}
	if d, _ := command.Lookup(cmd.Name); d.Hosts&command.HostPrint == 0 {
		return p.fail(&command.UsageError{Msg: fmt.Sprintf("/%s is only available in the interactive terminal UI", cmd.Name)}, ctx)
	}
	if !s.Exists() && cmd.Name != "help" {
		return p.fail(&command.UsageError{Msg: fmt.Sprintf("/%s needs a session: add --session <id> (see `yolop sessions`) or -c for the most recent one", cmd.Name)}, ctx)
	}
	res, err := s.Exec(ctx, cmd)
	if err != nil {
		return p.fail(err, ctx)
	}
	switch res.Kind {
	case command.ResultList:
		if p.o.JSON {
			out := map[string]any{"session_id": p.sid, "checkpoints": res.Rows}
			if res.Retained != nil {
				out["retained"] = res.Retained
			}
			p.json(out)
			return ""
		}
		p.printRows(res.Rows)
		fmt.Fprint(p.o.Stdout, command.RetainedText(res.Retained))
	case command.ResultBranches:
		if p.o.JSON {
			p.json(map[string]any{"session_id": p.sid, "branches": res.Branches})
			return ""
		}
		fmt.Fprint(p.o.Stdout, res.Text)
	case command.ResultPreview:
		if p.o.JSON {
			p.json(map[string]any{"session_id": p.sid, "preview": res.Preview, "token": res.Preview.Token, "confirm": p.confirmLine(res.Preview.Command)})
			return ""
		}
		p.printPreview(res.Preview)
	case command.ResultRestored:
		r := res.Restored
		if p.o.JSON {
			p.json(map[string]any{"session_id": p.sid, "restored": r})
			return ""
		}
		fmt.Fprintln(p.o.Stdout, r.Notice)
		if r.Warning != "" {
			fmt.Fprintln(p.o.Stderr, "yolop: warning:", r.Warning)
		}
		if r.Prompt != "" {
			fmt.Fprintf(p.o.Stdout, "\nRestored prompt (edit it and send it again if you like):\n%s\n", indent(r.Prompt))
		}
	default:
		if p.o.JSON && res.Data != nil {
			// /diff, /apply, /commit: the same object as the subcommands.
			p.json(res.Data)
			return ""
		}
		if p.o.JSON {
			p.json(map[string]any{"session_id": p.sid, "result": string(res.Kind), "text": res.Text})
			return ""
		}
		fmt.Fprintln(p.o.Stdout, strings.TrimRight(res.Text, "\n"))
		if res.Confirm != "" {
			fmt.Fprintf(p.o.Stdout, "From a shell:\n  %s\n", p.confirmLine(res.Confirm))
		}
	}
	return ""
}

func (p *printer) printRows(rows []checkpoint.Row) {
	fmt.Fprint(p.o.Stdout, checkpoint.ListText(rows, checkpoint.WhenLocal))
}

// PreviewText renders a preview for humans.
func PreviewText(pv *checkpoint.Preview) string { return command.PreviewText(pv) }

func (p *printer) printPreview(pv *checkpoint.Preview) {
	fmt.Fprint(p.o.Stdout, command.PreviewText(pv))
	fmt.Fprintf(p.o.Stdout, "\nToken: %s\nConfirm with:\n  %s\n", pv.Token, p.confirmLine(pv.Command))
}

// pendingJSON is a queued preview inside a turn result.
type pendingJSON struct {
	*checkpoint.Preview
	Token   string `json:"token"`
	Confirm string `json:"confirm"`
}

func (p *printer) turn(ctx context.Context, s Session) fault.Code {
	text := !p.o.JSON
	streamed := false
	setupOpen := false // the setup's output did not end its last line
	var early []string // warnings given before the turn ran
	onUpdate := func(u agent.Update) {
		if u.Kind == agent.UpdateWarning {
			if text {
				fmt.Fprintln(p.o.Stderr, "yolop: warning:", u.Text)
			} else {
				early = append(early, u.Text)
			}
			return
		}
		if !text {
			return
		}
		switch u.Kind {
		case agent.UpdateText:
			fmt.Fprint(p.o.Stdout, u.Text)
			streamed = true
		case agent.UpdateToolStart:
			fmt.Fprintf(p.o.Stderr, "→ %s\n", u.Tool.Title)
		case agent.UpdateToolEnd:
			switch {
			case u.Tool.Refused != "":
				// The command's exit code may be 0 (`cmd || true`): the
				// refusal is told whatever it says.
				fmt.Fprintf(p.o.Stderr, "  ⊘ refused by the sandbox: %s\n", u.Tool.Refused)
			case u.Tool.IsError:
				fmt.Fprintf(p.o.Stderr, "  ✗ %s\n", firstLine(u.Tool.Result))
			}
		case agent.UpdateNotice:
			fmt.Fprintln(p.o.Stderr, "yolop:", u.Text)
		case agent.UpdateSetup:
			// The worktree's setup command: its output as it comes, on
			// stderr (a failure is told by the warning that follows).
			switch {
			case u.Text != "":
				fmt.Fprint(p.o.Stderr, u.Text)
				setupOpen = !strings.HasSuffix(u.Text, "\n")
			case u.Tool != nil && u.Tool.Status == "in_progress":
				fmt.Fprintf(p.o.Stderr, "→ %s\n", u.Tool.Title)
			case u.Tool != nil:
				if setupOpen {
					fmt.Fprintln(p.o.Stderr)
				}
				if u.Tool.IsError {
					fmt.Fprintf(p.o.Stderr, "  ✗ %s failed\n", u.Tool.Title)
				}
			}
		}
	}
	if n := s.Info().ProviderNotice; n != "" && text {
		// Before the answer: a reply from the sim is not what a user
		// without a key expects. (A JSON turn names its provider.)
		fmt.Fprintln(p.o.Stderr, "yolop:", n)
	}
	existed := s.Exists()
	if text && p.o.Starting != "" && !existed {
		fmt.Fprintln(p.o.Stderr, "yolop:", p.o.Starting)
	}
	res, err := s.Prompt(ctx, p.o.Prompt, onUpdate)
	if err != nil {
		return p.fail(err, ctx)
	}
	p.sid = s.ID()
	info := s.Info()
	if !existed && s.Exists() {
		// What starting the session found and did (a spare set aside, a
		// failed background preparation, leftovers cleaned up) is told
		// once, like the repairs of an existing session.
		p.repairs = info.Repairs
		if text {
			for _, r := range p.repairs {
				fmt.Fprintln(p.o.Stderr, "yolop:", r)
			}
		}
	}
	p.notices(s)
	code := TurnCode(res.Status)
	if p.o.JSON {
		tools := res.Tools
		if tools == nil {
			tools = []app.ToolCall{}
		}
		out := map[string]any{"session_id": p.sid, "checkpoint_id": res.CheckpointID, "active_root": info.ActiveRoot, "workspace_mode": info.WorkspaceMode, "recycled": info.Recycled, "status": res.Status, "text": res.Text, "pending": nil, "usage": res.Usage, "provider": info.Provider, "model": info.Model, "branch": res.Branch, "tools": tools}
		if res.Error != "" {
			out["error"] = res.Error
		}
		if code != "" {
			// Every failure carries a code, a turn's too.
			out["code"] = code
			if res.Error == "" {
				out["error"] = "turn " + res.CheckpointID + " " + res.Status
			}
		}
		if res.Pending != nil {
			out["pending"] = pendingJSON{Preview: res.Pending, Token: res.Pending.Token, Confirm: p.confirmLine(res.Pending.Command)}
		}
		if w := append(early, res.Warnings...); len(w) > 0 {
			out["warnings"] = w
		}
		p.json(out)
		return code
	}
	if streamed && !strings.HasSuffix(res.Text, "\n") {
		fmt.Fprintln(p.o.Stdout)
	} else if !streamed && res.Text != "" {
		fmt.Fprintln(p.o.Stdout, res.Text)
	}
	switch {
	case res.Error != "":
		fmt.Fprintf(p.o.Stderr, "yolop: turn %s %s: %s\n", res.CheckpointID, res.Status, res.Error)
	case code == fault.Interrupted:
		fmt.Fprintf(p.o.Stderr, "yolop: turn %s cancelled; what it did so far is kept (/undo previews undoing it)\n", res.CheckpointID)
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(p.o.Stderr, "yolop: warning:", w)
	}
	p.textWarnings()
	if res.Pending != nil {
		fmt.Fprintln(p.o.Stdout, "\nThe agent asked for a restore. Nothing has changed yet.")
		p.printPreview(res.Pending)
	}
	fmt.Fprintf(p.o.Stderr, "session %s · checkpoint %s · continue: %s -p '…'\n", p.sid, res.CheckpointID, p.o.ConfirmPrefix)
	if info.Branch != "" && (!existed || info.BranchNote != "") {
		// Where the work is and how to bring it home is said once, on the
		// turn that made the session (and when the branch needs a word),
		// not after every turn.
		branch := info.Branch
		if info.BranchNote != "" {
			branch += ": " + info.BranchNote
		}
		yolop := strings.TrimSuffix(p.o.ConfirmPrefix, " --session "+p.sid)
		if yolop == p.o.ConfirmPrefix || yolop == "" {
			yolop = "yolop"
		}
		fmt.Fprintf(p.o.Stderr, "its files: %s (branch %s) · see them: %s diff %s · bring them home: %s apply %s\n", info.ActiveRoot, branch, yolop, p.sid, yolop, p.sid)
	}
	return code
}

// TurnCode is the JSON code of a turn that did not complete: turn_failed
// (the provider or a tool failed it), interrupted (cancelled, like Ctrl+C
// anywhere else), turn_interrupted (cut off, e.g. by a crash); "" for a
// completed turn.
func TurnCode(status string) fault.Code {
	switch status {
	case agent.StatusCompleted, "":
		return ""
	case agent.StatusCancelled:
		return fault.Interrupted
	case agent.StatusInterrupted:
		return fault.TurnInterrupted
	}
	return fault.TurnFailed
}

func firstLine(s string) string {
	f, _, _ := strings.Cut(s, "\n")
	return f
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
