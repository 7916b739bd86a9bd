package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/fault"
)

func ptr(s string) *string { return &s }

// streamingSession answers every prompt with text deltas, a tool call and a
// notice, and counts the checkpoint it created.
func streamingSession() *fakeSession {
	f := &fakeSession{info: baseInfo()}
	f.info.Checkpoints = 0
	f.prompt = func(ctx context.Context, text string, on func(agent.Update)) (app.TurnResult, error) {
		tool := &agent.ToolInfo{ID: "t1", Name: "write_file", Kind: "edit", Title: "write_file a.txt", Status: "in_progress", Path: "a.txt", NewText: ptr("hello\n")}
		on(agent.Update{Kind: agent.UpdateReasoning, Text: "plan: write "})
		on(agent.Update{Kind: agent.UpdateReasoning, Text: "the file"})
		on(agent.Update{Kind: agent.UpdateToolStart, Tool: tool})
		done := *tool
		done.Status, done.Result = "completed", "wrote 6 bytes to a.txt\nline two\nline three"
		on(agent.Update{Kind: agent.UpdateToolEnd, Tool: &done})
		on(agent.Update{Kind: agent.UpdateText, Text: "done: 1 "})
		on(agent.Update{Kind: agent.UpdateText, Text: "action\nhello — ünïcødé 世界"})
		f.mu.Lock()
		f.info.Checkpoints++
		f.mu.Unlock()
		return app.TurnResult{CheckpointID: "cp1", Status: "completed", Text: "done: 1 action\nhello — ünïcødé 世界"}, nil
	}
	return f
}

func TestPromptStreamsIntoTranscript(t *testing.T) {
	t.Parallel()
	f := streamingSession()
	m, _ := newTestModel(t, f)
	typeText(t, m, "write a.txt\nhello\nEOF")
	press(t, m, "enter")

	want := []string{
		"user:write a.txt\nhello\nEOF",
		"reasoning:plan: write the file",
		"tool:write_file:completed",
		"assistant:done: 1 action\nhello — ünïcødé 世界",
	}
	if got := entryTexts(m); !slices.Equal(got, want) {
		t.Fatalf("entries:\n%q\nwant\n%q", got, want)
	}
	if m.turn != nil || m.busy() {
		t.Fatal("the turn is still marked running after its result")
	}
	if m.info.Checkpoints != 1 {
		t.Fatalf("status bar checkpoints = %d, want 1 (re-read after the turn)", m.info.Checkpoints)
	}
	if m.composer.Value() != "" {
		t.Fatalf("composer not cleared after sending: %q", m.composer.Value())
	}
	golden(t, "transcript", screen(m))
}

func TestComposerNewlineDoesNotSend(t *testing.T) {
	t.Parallel()
	f := streamingSession()
	m, _ := newTestModel(t, f)
	typeText(t, m, "line one")
	press(t, m, "alt+enter")
	typeText(t, m, "line two")
	m.Update(tea.KeyPressMsg{Code: 'j', Mod: tea.ModCtrl})
	if got := m.composer.Value(); got != "line one\nline two\n" {
		t.Fatalf("composer = %q, want two lines and a trailing newline", got)
	}
	if len(m.entries) != 0 {
		t.Fatalf("Alt+Enter/Ctrl+J sent the prompt: %q", entryTexts(m))
	}
}

func TestBadInputStaysUsable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, input, want string
	}{
		{"unknown command", "/frobnicate", "unknown command /frobnicate"},
		{"ambiguous prefix", "/re", "unknown command /re"},
		{"bad checkpoint", "/rewind banana", `"banana" is not a checkpoint id`},
		{"bad mode", "/rewind cp2 sideways", `unknown mode "sideways"`},
		{"extra args", "/undo now", "usage: /undo [--confirm token]"},
		{"bad token", "/redo --confirm a!b", "is not a confirmation token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := streamingSession()
			m, _ := newTestModel(t, f)
			typeText(t, m, tt.input)
			press(t, m, "enter")
			got := entryTexts(m)
			if len(got) != 2 || !strings.HasPrefix(got[1], "error:") || !strings.Contains(got[1], tt.want) {
				t.Fatalf("entries %q: want a usage error containing %q", got, tt.want)
			}
			if log := f.execLog(); len(log) != 0 {
				t.Fatalf("a malformed command reached the session: %q", log)
			}
			// Still usable: the next prompt runs.
			typeText(t, m, "hello")
			press(t, m, "enter")
			if last := entryTexts(m); !strings.HasPrefix(last[len(last)-1], "assistant:done: 1 action") {
				t.Fatalf("after a bad command the next prompt did not run: %q", last)
			}
		})
	}
}

func TestProviderErrorMidStream(t *testing.T) {
	t.Parallel()
	f := &fakeSession{info: baseInfo()}
	f.prompt = func(ctx context.Context, text string, on func(agent.Update)) (app.TurnResult, error) {
		if text == "fail" {
			on(agent.Update{Kind: agent.UpdateText, Text: "partial "})
			on(agent.Update{Kind: agent.UpdateError, Text: "provider: sim: injected failure"})
			return app.TurnResult{CheckpointID: "cp4", Status: "failed", Error: "provider: sim: injected failure"}, nil
		}
		return app.TurnResult{Status: "completed", Text: "echo " + text}, nil
	}
	m, _ := newTestModel(t, f)
	typeText(t, m, "fail")
	press(t, m, "enter")
	want := []string{"user:fail", "assistant:partial ", "error:provider: sim: injected failure"}
	if got := entryTexts(m); !slices.Equal(got, want) {
		t.Fatalf("entries %q, want %q (the failure shown once)", got, want)
	}
	typeText(t, m, "again")
	press(t, m, "enter")
	if got := entryTexts(m); got[len(got)-1] != "assistant:echo again" {
		t.Fatalf("session not usable after a failed turn: %q", got)
	}

	// A Go error from Prompt (infrastructure) is shown too.
	f.prompt = func(ctx context.Context, text string, on func(agent.Update)) (app.TurnResult, error) {
		return app.TurnResult{}, fmt.Errorf("%w: disk full", fault.Plain("session: append event"))
	}
	typeText(t, m, "x")
	press(t, m, "enter")
	if got := entryTexts(m); got[len(got)-1] != "error:append event: disk full" { // a sentinel's package prefix is not shown
		t.Fatalf("infrastructure error not shown: %q", got)
	}
}

func TestCtrlCCancelsTurnThenQuits(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	f := &fakeSession{info: baseInfo()}
	f.prompt = func(ctx context.Context, text string, on func(agent.Update)) (app.TurnResult, error) {
		on(agent.Update{Kind: agent.UpdateText, Text: "working"})
		close(started)
		<-ctx.Done()
		return app.TurnResult{Status: "cancelled"}, nil
	}
	m, _ := newTestModel(t, f)
	typeText(t, m, "sleep 100000")
	_, cmd := m.Update(keyMsg("enter"))
	batch := cmd().(tea.BatchMsg)
	promptDone := make(chan tea.Msg)
	go func() { promptDone <- batch[0]() }()
	<-started

	// Enter while running keeps the text and explains.
	typeText(t, m, "next")
	press(t, m, "enter")
	if m.composer.Value() != "next" {
		t.Fatalf("text typed during a turn was lost: %q", m.composer.Value())
	}
	if quit := press(t, m, "ctrl+c"); quit {
		t.Fatal("Ctrl+C during a turn quit instead of cancelling")
	}
	<-promptDone
	drive(t, m, batch[1])
	got := entryTexts(m)
	if got[len(got)-1] != "notice:turn cancelled" || m.turn != nil {
		t.Fatalf("entries after cancel %q (turn running: %v)", got, m.turn != nil)
	}
	if !slices.Contains(got, "error:a turn is running: wait for it or press Ctrl+C to cancel it (your text stays in the composer)") {
		t.Fatalf("no message for Enter during a turn: %q", got)
	}

	// Idle: the first Ctrl+C clears the composer, the second quits.
	if quit := press(t, m, "ctrl+c"); quit || m.composer.Value() != "" {
		t.Fatalf("first idle Ctrl+C: quit=%v composer=%q", quit, m.composer.Value())
	}
	if !strings.Contains(screen(m), "press Ctrl+C again to quit") {
		t.Fatal("no hint after the first idle Ctrl+C")
	}
	_, cmd = m.Update(keyMsg("ctrl+c"))
	if cmd == nil {
		t.Fatal("second idle Ctrl+C did not quit")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("second idle Ctrl+C did not quit")
	}
}

func TestEscEscOpensPickerOnlyWhenQuick(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		gap  time.Duration
		open bool
	}{
		{"quick", 400 * time.Millisecond, true},
		{"slow", 1500 * time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := rewindSession(nil)
			m, clk := newTestModel(t, f)
			press(t, m, "esc")
			clk.advance(tt.gap)
			press(t, m, "esc")
			if (m.picker != nil) != tt.open {
				t.Fatalf("picker open = %v, want %v", m.picker != nil, tt.open)
			}
			if tt.open && !slices.Equal(f.execLog(), []string{"/rewind"}) {
				t.Fatalf("execs %q, want the list", f.execLog())
			}
		})
	}
}

func TestPickerRewindRestoresConversation(t *testing.T) {
	t.Parallel()
	f := rewindSession(nil)
	m, c := newTestModel(t, f)
	m.entries = append(m.entries, entry{kind: kindUser, text: "rm a.txt"}) // on screen before the restore
	press(t, m, "esc")
	press(t, m, "esc")
	if m.picker == nil || m.picker.stage != stageList {
		t.Fatal("Esc Esc did not open the list")
	}
	golden(t, "picker", screen(m))

	press(t, m, "down") // cp2
	press(t, m, "enter")
	if m.picker == nil || m.picker.stage != stageConfirm {
		t.Fatal("Enter on a checkpoint did not show its preview")
	}
	golden(t, "preview", screen(m))

	// Enter does not confirm, and y does not either right away.
	press(t, m, "enter")
	press(t, m, "esc")
	press(t, m, "y")
	if got := f.execLog(); len(got) != 2 {
		t.Fatalf("a stray key confirmed: %q", got)
	}
	confirmKey(t, m, c)
	wantExecs := []string{"/rewind", "/rewind cp2 both", "/rewind cp2 both --confirm k3F9x2"}
	if got := f.execLog(); !slices.Equal(got, wantExecs) {
		t.Fatalf("execs %q, want %q", got, wantExecs)
	}
	if m.picker != nil {
		t.Fatal("picker still open after the restore")
	}
	if got := m.composer.Value(); got != "write b.txt\nsecond file\nEOF" {
		t.Fatalf("composer = %q, want turn 2's prompt back (not sent)", got)
	}
	want := []string{
		"user:write a.txt", "assistant:done: 1 action",
		"notice:Rewound to cp2 (conversation and workspace): 2 turns left the active conversation, 2 paths restored.",
	}
	if got := entryTexts(m); !slices.Equal(got, want) {
		t.Fatalf("transcript after restore %q, want the branch plus one notice %q", got, want)
	}
	if !m.info.RedoAvailable || m.info.Checkpoints != 1 {
		t.Fatalf("status not refreshed: %+v", m.info)
	}
	golden(t, "restored", screen(m))
}

func TestPickerModeChoice(t *testing.T) {
	t.Parallel()
	f := rewindSession(nil)
	f.exec = func(c command.Command) (command.Result, error) {
		if c.Target == "" {
			r := rows()
			r[0].Workspace, r[0].Reason = false, "repository lock held"
			return command.Result{Kind: command.ResultList, Rows: r}, nil
		}
		return command.Result{Kind: command.ResultPreview, Preview: preview(c.Target, c.Mode)}, nil
	}
	m, _ := newTestModel(t, f)
	typeText(t, m, "/rewind")
	press(t, m, "enter")
	// cp3 has no workspace snapshot: only conversation, and the list says why.
	if _, mode, _ := m.picker.selected(); mode != checkpoint.ModeConversation {
		t.Fatalf("default mode for a conversation-only checkpoint = %q", mode)
	}
	if s := screen(m); !strings.Contains(s, "conversation only: repository lock held") {
		t.Fatalf("the list does not say why cp3 is conversation only:\n%s", s)
	}
	press(t, m, "tab")
	if _, mode, _ := m.picker.selected(); mode != checkpoint.ModeConversation {
		t.Fatalf("Tab offered %q on a conversation-only checkpoint", mode)
	}
	press(t, m, "down")
	modes := []checkpoint.Mode{}
	for range 3 {
		_, mode, _ := m.picker.selected()
		modes = append(modes, mode)
		press(t, m, "right")
	}
	if !slices.Equal(modes, []checkpoint.Mode{checkpoint.ModeBoth, checkpoint.ModeConversation, checkpoint.ModeWorkspace}) {
		t.Fatalf("modes cycled %q", modes)
	}
	// Back on both; pick workspace and preview: the pane names it.
	press(t, m, "left")
	press(t, m, "enter")
	if got := f.execLog(); got[len(got)-1] != "/rewind cp2 workspace" {
		t.Fatalf("preview asked for %q", got[len(got)-1])
	}
	if s := screen(m); !strings.Contains(s, "· workspace only") || !strings.Contains(s, "deleted      b.txt") {
		t.Fatalf("preview does not name the mode or the paths:\n%s", s)
	}
	// Esc goes back to the list, Esc again closes; nothing confirmed.
	press(t, m, "esc")
	if m.picker == nil || m.picker.stage != stageList {
		t.Fatal("Esc in the preview did not go back to the list")
	}
	press(t, m, "esc")
	if m.picker != nil {
		t.Fatal("Esc in the list did not close the picker")
	}
	for _, c := range f.execLog() {
		if strings.Contains(c, "--confirm") {
			t.Fatalf("cancelled picker confirmed: %q", f.execLog())
		}
	}
}

func TestWorkspaceOnlyRestoreKeepsTranscript(t *testing.T) {
	t.Parallel()
	f := &fakeSession{info: baseInfo()}
	f.exec = func(c command.Command) (command.Result, error) {
		if !c.Confirm {
			return command.Result{Kind: command.ResultPreview, Preview: preview("cp2", checkpoint.ModeWorkspace)}, nil
		}
		return command.Result{Kind: command.ResultRestored, Restored: &checkpoint.Restored{
			Action: checkpoint.ActionRewind, Target: "cp2", Mode: checkpoint.ModeWorkspace, PathsChanged: 2,
			Notice: "files restored to before cp2 (workspace only): 2 paths changed",
		}}, nil
	}
	m, c := newTestModel(t, f)
	m.entries = []entry{{kind: kindUser, text: "one"}, {kind: kindAssistant, text: "two"}}
	typeText(t, m, "/rewind 2 workspace")
	press(t, m, "enter")
	confirmKey(t, m, c)
	want := []string{"user:one", "assistant:two", "user:/rewind 2 workspace", "notice:files restored to before cp2 (workspace only): 2 paths changed"}
	if got := entryTexts(m); !slices.Equal(got, want) {
		t.Fatalf("entries %q, want %q", got, want)
	}
	if m.composer.Value() != "" {
		t.Fatalf("workspace-only restore filled the composer: %q", m.composer.Value())
	}
}

func TestRefusedConfirmations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		err      error
		want     string
		reviewed bool // Enter previews again
	}{
		{"writer active", &checkpoint.Error{Code: checkpoint.CodeWriterActive, Msg: "a shell command is still running (task t1)"}, "stop it first (/tasks lists running tasks", false},
		{"stale preview", &checkpoint.Error{Code: checkpoint.CodeStalePreview, Msg: "workspace changed since the preview; run the preview again"}, "press Enter for a fresh preview", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := rewindSession(tt.err)
			m, c := newTestModel(t, f)
			typeText(t, m, "/rewind cp2")
			press(t, m, "enter")
			confirmKey(t, m, c)
			if m.picker == nil {
				t.Fatal("a refused restore closed the picker")
			}
			if !strings.Contains(m.picker.err, tt.want) || !strings.Contains(screen(m), "✗ "+tt.err.Error()[:20]) {
				t.Fatalf("picker error %q, want it to contain %q\n%s", m.picker.err, tt.want, screen(m))
			}
			if tt.name == "writer active" {
				golden(t, "refused", screen(m))
			}
			n := len(f.execLog())
			press(t, m, "enter")
			last := f.execLog()[len(f.execLog())-1]
			if len(f.execLog()) != n+1 || last != "/rewind cp2" {
				t.Fatalf("Enter after a refusal ran %q, want a fresh preview /rewind cp2", f.execLog())
			}
			if m.picker == nil || m.picker.preview == nil || m.picker.err != "" {
				t.Fatal("the fresh preview is not shown")
			}
		})
	}
}

func TestPendingPreviewFromTurn(t *testing.T) {
	t.Parallel()
	f := rewindSession(nil)
	pv := &checkpoint.Preview{Action: checkpoint.ActionUndo, Target: "cp3", Mode: checkpoint.ModeBoth,
		TurnsLeaving: []checkpoint.TurnRef{{ID: "cp4", Prompt: "undo the last turn"}, {ID: "cp3", Prompt: "rm a.txt"}},
		Paths:        []checkpoint.PathChange{{Path: "a.txt", Change: "added"}}, Token: "tok_1", Command: "/undo --confirm tok_1"}
	f.prompt = func(ctx context.Context, text string, on func(agent.Update)) (app.TurnResult, error) {
		return app.TurnResult{CheckpointID: "cp4", Status: "completed", Text: "done: 1 action", Pending: pv}, nil
	}
	var confirmed command.Command
	f.exec = func(c command.Command) (command.Result, error) {
		confirmed = c
		return command.Result{Kind: command.ResultRestored, Restored: &checkpoint.Restored{Action: checkpoint.ActionUndo, Target: "cp3", Mode: checkpoint.ModeBoth, Prompt: "rm a.txt", Notice: "undid cp3 and cp4"}}, nil
	}
	m, c := newTestModel(t, f)
	typeText(t, m, "undo the last turn")
	press(t, m, "enter")
	if m.picker == nil || m.picker.stage != stageConfirm || m.picker.preview != pv {
		t.Fatal("a pending preview did not open the confirmation")
	}
	if len(f.execLog()) != 0 {
		t.Fatal("the pending preview was applied without confirmation")
	}
	golden(t, "pending", screen(m))
	confirmKey(t, m, c)
	if confirmed.Name != "undo" || confirmed.Token != "tok_1" || !confirmed.Confirm {
		t.Fatalf("confirmed %+v, want /undo --confirm tok_1", confirmed)
	}
	if m.composer.Value() != "rm a.txt" {
		t.Fatalf("composer = %q after undo", m.composer.Value())
	}
}

func TestUndoRedoFromComposerCanBeCancelled(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"undo", "redo"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := &fakeSession{info: baseInfo()}
			f.exec = func(c command.Command) (command.Result, error) {
				pv := preview("cp3", checkpoint.ModeBoth)
				pv.Action, pv.Command = checkpoint.Action(c.Name), "/"+c.Name+" --confirm k3F9x2"
				return command.Result{Kind: command.ResultPreview, Preview: pv}, nil
			}
			m, _ := newTestModel(t, f)
			typeText(t, m, "/"+name)
			press(t, m, "enter")
			if m.picker == nil || m.picker.stage != stageConfirm {
				t.Fatalf("/%s did not show its preview", name)
			}
			// A key confirms here: the token is not shown.
			if s := screen(m); strings.Contains(s, "k3F9x2") || !strings.Contains(s, "y confirm") {
				t.Fatalf("the preview shows the token or no confirm key:\n%s", s)
			}
			press(t, m, "esc")
			if m.picker != nil {
				t.Fatal("Esc did not cancel")
			}
			got := entryTexts(m)
			if got[len(got)-1] != "notice:restore cancelled: nothing was changed" || len(f.execLog()) != 1 {
				t.Fatalf("after Esc: entries %q execs %q", got, f.execLog())
			}
		})
	}
}

func TestLocalCommands(t *testing.T) {
	t.Parallel()
	f := &fakeSession{info: baseInfo()}
	f.exec = func(c command.Command) (command.Result, error) {
		if c.Name == "tasks" {
			return command.Result{Kind: command.ResultTasks, Text: "no background tasks"}, nil
		}
		return command.Result{Kind: command.ResultList}, nil
	}
	m, _ := newTestModel(t, f)
	typeText(t, m, "/help")
	press(t, m, "enter")
	if m.pager == nil {
		t.Fatal("/help opened no help view")
	}
	if s := strings.Join(m.pager.lines, "\n"); !strings.Contains(s, "/rewind [checkpoint]") || !strings.Contains(s, "/quit") {
		t.Fatalf("/help does not list the registry:\n%s", s)
	}
	press(t, m, "esc")
	typeText(t, m, "/tasks")
	press(t, m, "enter")
	if got := entryTexts(m); got[len(got)-1] != "info:no background tasks" {
		t.Fatalf("/tasks output %q", got)
	}
	typeText(t, m, "/rewind")
	press(t, m, "enter")
	if got := entryTexts(m); m.picker != nil || !strings.HasPrefix(got[len(got)-1], "notice:no checkpoints yet") {
		t.Fatalf("/rewind with no checkpoints: %q", got)
	}
	typeText(t, m, "/clear")
	press(t, m, "enter")
	if len(m.entries) != 0 {
		t.Fatalf("/clear left %q", entryTexts(m))
	}
	if got := f.execLog(); !slices.Equal(got, []string{"/tasks", "/rewind"}) {
		t.Fatalf("display-only commands reached the session: %q", got)
	}
	typeText(t, m, "/quit")
	_, cmd := m.Update(keyMsg("enter"))
	if !drive(t, m, cmd) {
		t.Fatal("/quit did not quit")
	}
}

func TestCompletion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		typed string
		shown []string // commands listed
		tabs  []string // composer after each Tab
	}{
		{"/re", []string{"/rewind", "/redo", "/resume"}, []string{"/rewind", "/redo", "/resume", "/rewind"}},
		{"/u", []string{"/undo"}, []string{"/undo "}},
		{"/co", []string{"/compact", "/context", "/commit"}, []string{"/compact", "/context", "/commit"}},
		{"/", allTUICommands(), nil},
		{"/zz", nil, []string{"/zz"}},
	}
	for _, tt := range tests {
		t.Run(tt.typed, func(t *testing.T) {
			t.Parallel()
			m, _ := newTestModel(t, &fakeSession{info: baseInfo()})
			typeText(t, m, tt.typed)
			var shown []string
			for _, d := range m.completions() {
				shown = append(shown, "/"+d.Name)
			}
			if !slices.Equal(shown, tt.shown) {
				t.Fatalf("completions %q, want %q", shown, tt.shown)
			}
			if len(tt.shown) == 0 && !strings.Contains(screen(m), "no command matches "+tt.typed) {
				t.Fatalf("no message for an unknown prefix:\n%s", screen(m))
			}
			for i, want := range tt.tabs {
				press(t, m, "tab")
				if got := m.composer.Value(); got != want {
					t.Fatalf("after Tab %d composer = %q, want %q", i+1, got, want)
				}
			}
		})
	}
	m, _ := newTestModel(t, &fakeSession{info: baseInfo()})
	typeText(t, m, "/re")
	golden(t, "completion", screen(m))
}

func TestRenderFitsAnySize(t *testing.T) {
	t.Parallel()
	f := streamingSession()
	m, _ := newTestModel(t, f)
	typeText(t, m, "write a.txt")
	press(t, m, "enter")
	long := strings.Repeat("wide 世界 text ", 40) + "\n" + strings.Repeat("x", 300)
	m.entries = append(m.entries, entry{kind: kindAssistant, text: long},
		entry{kind: kindTool, tool: &agent.ToolInfo{ID: "t9", Name: "bash", Title: "bash: " + strings.Repeat("echo 很长 ", 30), Status: "failed", IsError: true, Result: strings.Repeat("err ", 100)}})
	for _, size := range [][2]int{{80, 24}, {30, 10}, {41, 12}, {200, 50}, {29, 10}, {80, 5}} {
		m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		lines := strings.Split(m.render(), "\n")
		if len(lines) > size[1] && !m.tooSmall() {
			t.Errorf("%dx%d: %d lines rendered", size[0], size[1], len(lines))
		}
		for _, l := range lines {
			if w := ansi.StringWidth(l); w > size[0] {
				t.Errorf("%dx%d: line %q is %d cells wide", size[0], size[1], ansi.Strip(l), w)
			}
		}
	}
	m.Update(tea.WindowSizeMsg{Width: 25, Height: 8})
	golden(t, "too-small", screen(m))
	// Back to a usable size: the session is intact.
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	if !strings.Contains(screen(m), "s_01jfz8k2m3") {
		t.Fatal("status bar missing after resizing back")
	}
}

func TestScrollback(t *testing.T) {
	t.Parallel()
	m, _ := newTestModel(t, &fakeSession{info: baseInfo()})
	for i := range 60 {
		m.entries = append(m.entries, entry{kind: kindAssistant, text: fmt.Sprintf("line %02d", i)})
	}
	if s := screen(m); !strings.Contains(s, "line 59") || strings.Contains(s, "line 40") {
		t.Fatalf("the bottom is not shown:\n%s", s)
	}
	press(t, m, "pgup")
	if s := screen(m); strings.Contains(s, "line 59") || !strings.Contains(s, "more below (PgDn)") {
		t.Fatalf("PgUp did not scroll:\n%s", s)
	}
	press(t, m, "pgdown")
	if s := screen(m); !strings.Contains(s, "line 59") {
		t.Fatalf("PgDn did not return to the bottom:\n%s", s)
	}
}

func TestEnterExpandsUnambiguousPrefix(t *testing.T) {
	t.Parallel()
	tests := []struct{ typed, ran string }{
		{"/und", "/undo"},
		{"/rew 2 conv", "/rewind cp2 conversation"},
		{"/red", "/redo"},
	}
	for _, tt := range tests {
		t.Run(tt.typed, func(t *testing.T) {
			t.Parallel()
			f := &fakeSession{info: baseInfo()}
			f.exec = func(c command.Command) (command.Result, error) {
				return command.Result{Kind: command.ResultPreview, Preview: preview("cp2", checkpoint.ModeConversation)}, nil
			}
			m, _ := newTestModel(t, f)
			typeText(t, m, tt.typed)
			press(t, m, "enter")
			if got := f.execLog(); !slices.Equal(got, []string{tt.ran}) {
				t.Fatalf("ran %q, want %q", got, tt.ran)
			}
		})
	}
}

// allTUICommands is every command the registry offers in the TUI.
func allTUICommands() []string {
	var out []string
	for _, d := range command.For(command.HostTUI) {
		out = append(out, "/"+d.Name)
	}
	return out
}

// confirmKey confirms the open preview the way a user does: after the
// grace period, with every line of it shown, y.
func confirmKey(t *testing.T, m *model, c *clock) {
	t.Helper()
	c.advance(confirmGrace)
	press(t, m, "end")
	press(t, m, "y")
}

func TestDiffIsColoredByLine(t *testing.T) {
	t.Parallel()
	m, _ := newTestModel(t, &fakeSession{info: baseInfo()})
	m.st = newStyles(false)
	lines := m.patchLines("diff --git a/x b/x\n@@ -1 +1 @@\n-old\n+new\n context\n")
	if len(lines) != 5 {
		t.Fatalf("lines %q", lines)
	}
	add, del, ctx := lines[3], lines[2], lines[4]
	if !strings.Contains(add, "\x1b[") || !strings.Contains(del, "\x1b[") || add == strings.Replace(del, "-old", "+new", 1) {
		t.Fatalf("added and deleted lines are not colored apart: %q %q", add, del)
	}
	if strings.Contains(ctx, "\x1b[") {
		t.Fatalf("a context line is colored like a change: %q", ctx)
	}
}

func TestPreviewTitleNamesTheAction(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pv   checkpoint.Preview
		want string
	}{
		{checkpoint.Preview{Action: checkpoint.ActionRewind, Target: "cp2"}, "Rewind to before cp2"},
		{checkpoint.Preview{Action: checkpoint.ActionUndo, Target: "cp3"}, "Undo to before cp3"},
		{checkpoint.Preview{Action: checkpoint.ActionRedo}, "Redo"},
		{checkpoint.Preview{Action: checkpoint.ActionBranch, Target: "b1", Branch: "b1", BranchLeft: "b2"}, "Enter branch b1 as it was left, leave b2"},
		{checkpoint.Preview{Action: checkpoint.ActionBranch, Target: "b1", Branch: "b1"}, "Enter branch b1 as it was left, leave the active branch"},
	} {
		if got := previewTitle(&tc.pv); got != tc.want {
			t.Errorf("previewTitle(%s) = %q, want %q", tc.pv.Action, got, tc.want)
		}
	}
}

// The worktree's setup command, run before a new session's first turn, is
// one command entry: its output so far while it runs, then how it ended.
func TestSetupIsShownAsACommand(t *testing.T) {
	t.Parallel()
	f := &fakeSession{info: baseInfo()}
	f.prompt = func(ctx context.Context, text string, on func(agent.Update)) (app.TurnResult, error) {
		ti := agent.ToolInfo{ID: "setup", Name: "setup", Kind: "execute", Title: "setup: npm ci", Status: "in_progress"}
		start, chunk, end := ti, ti, ti
		on(agent.Update{Kind: agent.UpdateSetup, Tool: &start})
		chunk.Result = "installing\n"
		on(agent.Update{Kind: agent.UpdateSetup, Text: "installing\n", Tool: &chunk})
		end.Status, end.Result, end.IsError = "failed", "installing\nregistry unreachable\n", true
		on(agent.Update{Kind: agent.UpdateSetup, Tool: &end})
		on(agent.Update{Kind: agent.UpdateWarning, Text: "the worktree's setup command `npm ci` failed (exit code 1)"})
		on(agent.Update{Kind: agent.UpdateText, Text: "done"})
		return app.TurnResult{CheckpointID: "cp1", Status: "completed", Text: "done"}, nil
	}
	m, _ := newTestModel(t, f)
	typeText(t, m, "hello")
	press(t, m, "enter")
	got := entryTexts(m)
	want := []string{"user:hello", "tool:setup:failed", "notice:warning: the worktree's setup command `npm ci` failed (exit code 1)", "assistant:done"}
	if !slices.Equal(got, want) {
		t.Fatalf("entries:\n%q\nwant\n%q", got, want)
	}
	if s := ansi.Strip(screen(m)); !strings.Contains(s, "registry unreachable") {
		t.Fatalf("the setup's output is not on screen:\n%s", s)
	}
}
