package tui

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/command"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// fakeSession scripts a session: prompt and exec decide the answers, and
// every Exec call is recorded.
type fakeSession struct {
	mu     sync.Mutex
	info   app.Info
	items  []agent.Item
	execs  []command.Command
	prompt func(ctx context.Context, text string, on func(agent.Update)) (app.TurnResult, error)
	exec   func(cmd command.Command) (command.Result, error)
	diff   func(token, path string) (*checkpoint.PathDiff, error)
}

func (f *fakeSession) Info() app.Info {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.info
}

func (f *fakeSession) Transcript() []agent.Item {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]agent.Item(nil), f.items...)
}

func (f *fakeSession) Prompt(ctx context.Context, text string, on func(agent.Update)) (app.TurnResult, error) {
	if f.prompt == nil {
		return app.TurnResult{Status: "completed", Text: "ok"}, nil
	}
	return f.prompt(ctx, text, on)
}

func (f *fakeSession) Exec(ctx context.Context, cmd command.Command) (command.Result, error) {
	f.mu.Lock()
	f.execs = append(f.execs, cmd)
	fn := f.exec
	f.mu.Unlock()
	if fn == nil {
		return command.Result{}, errors.New("unexpected command /" + cmd.Name)
	}
	return fn(cmd)
}

func (f *fakeSession) PreviewDiff(ctx context.Context, token, path string) (*checkpoint.PathDiff, error) {
	f.mu.Lock()
	fn := f.diff
	f.mu.Unlock()
	if fn == nil {
		return nil, errors.New("unexpected diff of " + path)
	}
	return fn(token, path)
}

func (f *fakeSession) execLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.execs {
		out = append(out, rawCommand(c))
	}
	return out
}

// t0 is the injected clock's time: views never read the wall clock.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func baseInfo() app.Info {
	return app.Info{
		SessionID: "s_01jfz8k2m3", Branch: "yolop/demo-k2m3", Provider: "sim", Model: "sim-1",
		Workspace: true, Checkpoints: 3,
	}
}

func newTestModel(t *testing.T, f *fakeSession) (*model, *clock) {
	t.Helper()
	c := &clock{t: t0}
	m := newModel(context.Background(), f, f.Info(), f.Transcript(), true, c.now, time.UTC)
	m.pollEvery = 0
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	t.Cleanup(m.shutdown)
	return m, c
}

// drive runs cmd and feeds what it produces back into the model until
// nothing is left, the way the program would. Session calls complete
// synchronously here; a quit is reported.
func drive(t *testing.T, m *model, cmd tea.Cmd) (quit bool) {
	t.Helper()
	queue := []tea.Cmd{cmd}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		switch msg := c().(type) {
		case nil:
		case tea.BatchMsg:
			queue = append(queue, msg...)
		case tea.QuitMsg:
			quit = true
		case updateMsg, turnDoneMsg, execDoneMsg, diffDoneMsg, infoMsg:
			_, next := m.Update(msg)
			queue = append(queue, next)
		default:
			// Cursor blinks and other widget chatter are not part of the
			// behaviour under test.
		}
	}
	return quit
}

func keyMsg(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "alt+enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter, Mod: tea.ModAlt}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	case "left":
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "pgdown":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	case "end":
		return tea.KeyPressMsg{Code: tea.KeyEnd}
	case "home":
		return tea.KeyPressMsg{Code: tea.KeyHome}
	case "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	case "ctrl+o":
		return tea.KeyPressMsg{Code: 'o', Mod: tea.ModCtrl}
	}
	r := []rune(s)
	if len(r) != 1 {
		panic("keyMsg: unknown " + s)
	}
	return tea.KeyPressMsg{Code: r[0], Text: s}
}

// press sends one key and runs what it started.
func press(t *testing.T, m *model, k string) bool {
	t.Helper()
	_, cmd := m.Update(keyMsg(k))
	return drive(t, m, cmd)
}

// typeText types s into the composer, one key per rune.
func typeText(t *testing.T, m *model, s string) {
	t.Helper()
	for _, r := range s {
		if r == '\n' {
			m.Update(keyMsg("alt+enter"))
			continue
		}
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

// screen is the rendered view as plain text with trailing blanks trimmed.
func screen(m *model) string {
	lines := strings.Split(ansi.Strip(m.render()), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden %s: %v (run go test ./internal/host/tui -update to create it)", path, err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (run with -update if the change is intended)\n--- got ---\n%s--- want ---\n%s", path, got, want)
	}
}

func entryTexts(m *model) []string {
	var out []string
	for _, e := range m.entries {
		switch e.kind {
		case kindTool:
			out = append(out, "tool:"+e.tool.Name+":"+e.tool.Status)
		case kindUser:
			out = append(out, "user:"+e.text)
		case kindAssistant:
			out = append(out, "assistant:"+e.text)
		case kindNotice:
			out = append(out, "notice:"+e.text)
		case kindError:
			out = append(out, "error:"+e.text)
		case kindReasoning:
			out = append(out, "reasoning:"+e.text)
		default:
			out = append(out, "info:"+e.text)
		}
	}
	return out
}

func rows() []checkpoint.Row {
	return []checkpoint.Row{
		{ID: "cp3", Prompt: "rm a.txt", CreatedAt: t0.Add(-2 * time.Minute), Status: "completed", FilesChanged: 1, Workspace: true},
		{ID: "cp2", Prompt: "write b.txt\nsecond file\nEOF", CreatedAt: t0.Add(-5 * time.Minute), Status: "completed", FilesChanged: 1, Workspace: true},
		{ID: "cp1", Prompt: "write a.txt", CreatedAt: t0.Add(-3 * time.Hour), Status: "failed", FilesChanged: 1, Workspace: true},
	}
}

func preview(target string, mode checkpoint.Mode) *checkpoint.Preview {
	if mode == "" {
		mode = checkpoint.ModeBoth
	}
	pv := &checkpoint.Preview{
		Action: checkpoint.ActionRewind, Target: target, Mode: mode,
		Token: "k3F9x2", Recovery: "r1",
		Command: "/rewind " + target + " " + string(mode) + " --confirm k3F9x2",
	}
	if mode.HasConversation() {
		pv.TurnsLeaving = []checkpoint.TurnRef{{ID: "cp3", Prompt: "rm a.txt"}, {ID: "cp2", Prompt: "write b.txt\nsecond file\nEOF"}}
	}
	if mode.HasWorkspace() {
		pv.Paths = []checkpoint.PathChange{{Path: "a.txt", Change: "added"}, {Path: "b.txt", Change: "deleted"}}
		pv.Warnings = []checkpoint.Warning{{Kind: "changed_outside_turns", Path: "notes.md"}}
	}
	return pv
}

// rewindSession answers the picker's calls: list, preview, confirm.
func rewindSession(confirmErr error) *fakeSession {
	f := &fakeSession{info: baseInfo()}
	f.items = []agent.Item{
		{Kind: agent.ItemUser, Turn: "cp1", Text: "write a.txt"},
		{Kind: agent.ItemAssistant, Turn: "cp1", Text: "done: 1 action"},
	}
	f.exec = func(c command.Command) (command.Result, error) {
		switch {
		case c.Name == "rewind" && c.Target == "":
			return command.Result{Kind: command.ResultList, Rows: rows()}, nil
		case c.Name == "rewind" && !c.Confirm:
			return command.Result{Kind: command.ResultPreview, Preview: preview(c.Target, c.Mode)}, nil
		case c.Name == "rewind" && c.Confirm:
			if confirmErr != nil {
				return command.Result{}, confirmErr
			}
			if c.Token != "k3F9x2" {
				return command.Result{}, &checkpoint.Error{Code: checkpoint.CodeUnknownToken, Msg: "unknown token"}
			}
			f.mu.Lock()
			f.info.Checkpoints, f.info.RedoAvailable = 1, true
			f.items = append(f.items, agent.Item{Kind: agent.ItemNotice, Turn: "cp1", Text: "Rewound to cp2 (conversation and workspace): 2 turns left the active conversation, 2 paths restored."})
			f.mu.Unlock()
			return command.Result{Kind: command.ResultRestored, Restored: &checkpoint.Restored{
				Action: checkpoint.ActionRewind, Target: c.Target, Mode: c.Mode, PathsChanged: 2,
				Prompt: "write b.txt\nsecond file\nEOF",
				Notice: "Rewound to cp2 (conversation and workspace): 2 turns left the active conversation, 2 paths restored.",
			}}, nil
		}
		return command.Result{}, errors.New("unexpected /" + c.Name)
	}
	return f
}
