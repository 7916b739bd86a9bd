package acp

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/command"
)

// turnOut turns one turn's live updates into session/update notifications.
type turnOut struct {
	s       *server
	session string
	root    string // active root, to make tool paths absolute

	mu       sync.Mutex // serializes updates; guards the fields below
	started  map[string]bool
	finished bool
	sawError bool
}

func (t *turnOut) update(u agent.Update) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.finished {
		// The response has been (or is being) sent; a late update would
		// arrive after the turn ended.
		t.s.log.Warn("dropping an update that arrived after the turn ended", "session", t.session, "kind", u.Kind)
		return
	}
	switch u.Kind {
	case agent.UpdateError:
		t.sawError = true
	case agent.UpdateSetup:
		// The worktree's setup command is shown as a command: its first
		// update starts the call, later ones update it.
		if u.Tool == nil {
			return
		}
		u.Kind = agent.UpdateToolEnd
		if !t.started[u.Tool.ID] {
			u.Kind = agent.UpdateToolStart
			t.started[u.Tool.ID] = true
		}
	case agent.UpdateToolStart:
		if u.Tool != nil {
			t.started[u.Tool.ID] = true
		}
	}
	for _, su := range liveUpdate(u, t.root, t.started) {
		t.s.send(t.session, su)
	}
}

// finish stops forwarding updates and reports whether an error was shown.
func (t *turnOut) finish() (sawError bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.finished = true
	return t.sawError
}

// liveUpdate maps one live update. started holds the tool calls already
// announced; an end without a start is announced whole.
func liveUpdate(u agent.Update, root string, started map[string]bool) []sdk.SessionUpdate {
	switch u.Kind {
	case agent.UpdateText:
		if u.Text != "" {
			return []sdk.SessionUpdate{sdk.UpdateAgentMessageText(u.Text)}
		}
	case agent.UpdateReasoning:
		if u.Text != "" {
			return []sdk.SessionUpdate{sdk.UpdateAgentThoughtText(u.Text)}
		}
	case agent.UpdateToolStart:
		if u.Tool != nil {
			return []sdk.SessionUpdate{toolCall(u.Tool, root, false)}
		}
	case agent.UpdateToolEnd:
		if u.Tool != nil {
			if started[u.Tool.ID] {
				return []sdk.SessionUpdate{toolCallUpdate(u.Tool, root)}
			}
			return []sdk.SessionUpdate{toolCall(u.Tool, root, true)}
		}
	case agent.UpdateNotice:
		return []sdk.SessionUpdate{sdk.UpdateAgentMessageText(noticeText(u.Text))}
	case agent.UpdateWarning:
		return []sdk.SessionUpdate{sdk.UpdateAgentMessageText("Warning: " + u.Text + "\n\n")}
	case agent.UpdateError:
		return []sdk.SessionUpdate{sdk.UpdateAgentMessageText(errorText(u.Text))}
	}
	return nil
}

func noticeText(s string) string { return "\n" + s + "\n" }
func errorText(s string) string  { return "\nError: " + s + "\n" }

// replay maps the active branch's transcript for session/load.
func replay(items []agent.Item, root string) []sdk.SessionUpdate {
	var out []sdk.SessionUpdate
	for _, it := range items {
		switch it.Kind {
		case agent.ItemUser:
			out = append(out, sdk.UpdateUserMessageText(it.Text))
		case agent.ItemAssistant:
			if it.Text != "" {
				out = append(out, sdk.UpdateAgentMessageText(it.Text))
			}
		case agent.ItemReasoning:
			if it.Text != "" {
				out = append(out, sdk.UpdateAgentThoughtText(it.Text))
			}
		case agent.ItemTool:
			if it.Tool != nil {
				out = append(out, toolCall(it.Tool, root, true))
			}
		case agent.ItemNotice:
			out = append(out, sdk.UpdateAgentMessageText(noticeText(it.Text)))
		case agent.ItemError:
			out = append(out, sdk.UpdateAgentMessageText(errorText(it.Text)))
		}
	}
	return out
}

// toolCall announces a tool call; final includes its outcome.
func toolCall(ti *agent.ToolInfo, root string, final bool) sdk.SessionUpdate {
	tc := sdk.SessionUpdateToolCall{
		ToolCallId: sdk.ToolCallId(ti.ID),
		Title:      toolTitle(ti),
		Kind:       toolKind(ti.Kind),
		RawInput:   rawArgs(ti.Args),
		Locations:  toolLocations(ti, root),
	}
	if final {
		tc.Status = finalStatus(ti)
		tc.Content = toolContent(ti, root, true)
	} else {
		tc.Status = sdk.ToolCallStatusInProgress
		if ti.Status == string(sdk.ToolCallStatusPending) {
			tc.Status = sdk.ToolCallStatusPending
		}
		tc.Content = toolContent(ti, root, false)
	}
	return sdk.SessionUpdate{ToolCall: &tc}
}

// toolCallUpdate reports a finished tool call. Its content replaces what
// the start announced, so it repeats the diff.
func toolCallUpdate(ti *agent.ToolInfo, root string) sdk.SessionUpdate {
	st := finalStatus(ti)
	tu := sdk.SessionToolCallUpdate{
		ToolCallId: sdk.ToolCallId(ti.ID),
		Status:     &st,
		Content:    toolContent(ti, root, true),
		Locations:  toolLocations(ti, root),
	}
	if ti.Title != "" {
		tu.Title = sdk.Ptr(ti.Title)
	}
	return sdk.SessionUpdate{ToolCallUpdate: &tu}
}

func toolTitle(ti *agent.ToolInfo) string {
	if ti.Title != "" {
		return ti.Title
	}
	return ti.Name
}

func toolKind(k string) sdk.ToolKind {
	switch sdk.ToolKind(k) {
	case sdk.ToolKindRead, sdk.ToolKindEdit, sdk.ToolKindDelete, sdk.ToolKindMove,
		sdk.ToolKindSearch, sdk.ToolKindExecute, sdk.ToolKindThink, sdk.ToolKindFetch:
		return sdk.ToolKind(k)
	}
	return sdk.ToolKindOther
}

func finalStatus(ti *agent.ToolInfo) sdk.ToolCallStatus {
	switch {
	case ti.IsError || ti.Refused != "" || ti.Status == string(sdk.ToolCallStatusFailed):
		return sdk.ToolCallStatusFailed
	case ti.Status == string(sdk.ToolCallStatusInProgress):
		// A call still running whose output so far is shown (the
		// worktree's setup command).
		return sdk.ToolCallStatusInProgress
	}
	return sdk.ToolCallStatusCompleted
}

// rawArgs passes JSON arguments through as JSON, anything else as text.
func rawArgs(args string) any {
	switch {
	case args == "":
		return nil
	case json.Valid([]byte(args)):
		return json.RawMessage(args)
	}
	return args
}

// absPath makes a tool path absolute: ACP locations and diffs name files
// by absolute path.
func absPath(p, root string) string {
	if p == "" || filepath.IsAbs(p) || root == "" {
		return p
	}
	return filepath.Join(root, p)
}

func toolLocations(ti *agent.ToolInfo, root string) []sdk.ToolCallLocation {
	if ti.Path == "" {
		return nil
	}
	return []sdk.ToolCallLocation{{Path: absPath(ti.Path, root)}}
}

// toolContent is the diff of a file edit (ACP renders it natively) and,
// once the call has finished, what the tool returned.
func toolContent(ti *agent.ToolInfo, root string, final bool) []sdk.ToolCallContent {
	var out []sdk.ToolCallContent
	if ti.Path != "" && (ti.OldText != nil || ti.NewText != nil) {
		newText := ""
		if ti.NewText != nil {
			newText = *ti.NewText // a deletion shows as the file emptied
		}
		d := sdk.ToolCallContentDiff{Type: "diff", Path: absPath(ti.Path, root), NewText: newText, OldText: ti.OldText}
		out = append(out, sdk.ToolCallContent{Diff: &d})
	}
	if final && ti.Refused != "" {
		// First, and in the user's words: an editor shows the content,
		// and a long output would bury the refusal.
		out = append(out, sdk.ToolContent(sdk.TextBlock("Refused by the sandbox: "+ti.Refused)))
	}
	if final && ti.Result != "" {
		out = append(out, sdk.ToolContent(sdk.TextBlock(ti.Result)))
	}
	return out
}

// availableCommands advertises the slash commands offered to editors.
func availableCommands() sdk.SessionUpdate {
	cmds := []sdk.AvailableCommand{}
	for _, d := range command.For(command.HostACP) {
		c := sdk.AvailableCommand{Name: d.Name, Description: d.Description}
		if d.Hint != "" {
			c.Input = &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: d.Hint}}
		}
		cmds = append(cmds, c)
	}
	return sdk.SessionUpdate{AvailableCommandsUpdate: &sdk.SessionAvailableCommandsUpdate{AvailableCommands: cmds}}
}

func acpCommandNames() string {
	var n []string
	for _, d := range command.For(command.HostACP) {
		n = append(n, "/"+d.Name)
	}
	return strings.Join(n, ", ")
}

// sessionNotes is what a client is told once about a freshly opened
// session: repairs made on open and why it cannot run turns.
func sessionNotes(info app.Info) string {
	var b strings.Builder
	if len(info.Repairs) > 0 {
		b.WriteString("yolop repaired this session when opening it:\n")
		for _, r := range info.Repairs {
			fmt.Fprintf(&b, "- %s\n", r)
		}
	}
	if info.ReadOnly {
		fmt.Fprintf(&b, "This session is read-only: %s\n", info.ReadOnlyReason)
	}
	for _, n := range info.Notices {
		if info.ReadOnly && info.ReadOnlyReason != "" && strings.Contains(n, info.ReadOnlyReason) {
			continue // said above
		}
		fmt.Fprintf(&b, "%s\n", n)
	}
	for _, w := range info.Warnings {
		fmt.Fprintf(&b, "Warning: %s\n", w)
	}
	return b.String()
}

func plural(n int, one, many string) string { return checkpoint.Plural(n, one, many) }

// previewText presents a restore preview and the exact text that confirms
// it.
func previewText(p *checkpoint.Preview) string {
	return command.PreviewText(p) + fmt.Sprintf("\nConfirmation token: %s\nTo confirm, send exactly:\n%s\n\nTo cancel, send anything else.", p.Token, p.Command)
}

// resultText presents a command result.
func resultText(r command.Result) string {
	switch r.Kind {
	case command.ResultList:
		return listText(r.Rows) + command.RetainedText(r.Retained)
	case command.ResultPreview:
		if r.Preview != nil {
			return previewText(r.Preview)
		}
	case command.ResultRestored:
		if r.Restored != nil {
			return restoredText(r.Restored)
		}
	case command.ResultDiff:
		if strings.HasPrefix(r.Text, "diff ") {
			return fenced("diff", r.Text)
		}
	}
	return r.Text
}

func listText(rows []checkpoint.Row) string {
	return checkpoint.ListText(rows, checkpoint.WhenLocal)
}

func restoredText(r *checkpoint.Restored) string {
	var b strings.Builder
	if r.Notice != "" {
		// The controller's summary, the same words print mode shows.
		fmt.Fprintf(&b, "%s\n", r.Notice)
	} else {
		verb := map[checkpoint.Action]string{checkpoint.ActionUndo: "Undone", checkpoint.ActionRedo: "Redone", checkpoint.ActionBranch: "Switched branch"}[r.Action]
		if verb == "" {
			verb = "Rewound"
		}
		if r.Action == checkpoint.ActionBranch {
			fmt.Fprintf(&b, "%s: restored the %s of branch %s as it was left", verb, r.Mode.Describe(), r.Target)
		} else {
			fmt.Fprintf(&b, "%s: restored the %s to before %s", verb, r.Mode.Describe(), r.Target)
		}
		if r.Mode.HasWorkspace() {
			fmt.Fprintf(&b, "; %s changed", plural(r.PathsChanged, "path", "paths"))
		}
		b.WriteString(".\n")
	}
	if r.Mode.HasConversation() {
		b.WriteString("Turns shown above this point that were rewound are no longer part of the conversation; the model will not see them.\n")
	}
	if r.Prompt != "" {
		fmt.Fprintf(&b, "\nRestored prompt (edit and resend):\n%s\n", r.Prompt)
	}
	if r.Warning != "" {
		fmt.Fprintf(&b, "\nWarning: %s\n", r.Warning)
	}
	return b.String()
}

// fenced wraps text in a Markdown code fence longer than any run of
// backticks inside it (a diff of a Markdown file holds fences too).
func fenced(lang, text string) string {
	longest, run := 0, 0
	for _, c := range text {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	return fence + lang + "\n" + strings.TrimRight(text, "\n") + "\n" + fence
}
