package tui

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/command"
)

var sizes = []struct{ w, h int }{{40, 12}, {60, 20}, {120, 40}}

func resize(m *model, w, h int) { m.Update(tea.WindowSizeMsg{Width: w, Height: h}) }

// longSession has a real session id, many checkpoints with long prompts,
// and a preview with many paths, and answers diffs.
func longSession() *fakeSession {
	f := rewindSession(nil)
	f.info.SessionID = "s_01jfz8k2m3q9v7w5x4y3z2a1b0"
	f.info.ActiveRoot = "/home/dev/.local/share/yolop/worktrees/demo/s_01jfz8k2m3q9v7w5x4y3z2a1b0"
	var rs []checkpoint.Row
	for i := 9; i >= 1; i-- {
		rs = append(rs, checkpoint.Row{ID: fmt.Sprintf("cp%d", i), Prompt: fmt.Sprintf("turn %d: refactor the parser so that every error names the file and the line it came from", i),
			CreatedAt: t0.Add(-time.Duration(i) * time.Minute), Status: "completed", FilesChanged: i % 3, Workspace: true})
	}
	next := f.exec
	f.exec = func(c command.Command) (command.Result, error) {
		switch {
		case c.Name == "rewind" && c.Target == "":
			return command.Result{Kind: command.ResultList, Rows: rs}, nil
		case c.Name == "rewind" && !c.Confirm:
			pv := preview(c.Target, c.Mode)
			pv.TurnsLeaving = nil
			for i := 9; i >= 2; i-- {
				pv.TurnsLeaving = append(pv.TurnsLeaving, checkpoint.TurnRef{ID: fmt.Sprintf("cp%d", i), Prompt: fmt.Sprintf("turn %d: refactor the parser", i)})
			}
			for i := range 6 {
				pv.Paths = append(pv.Paths, checkpoint.PathChange{Path: fmt.Sprintf("internal/parser/very/long/directory/name/file%d.go", i), Change: "modified"})
			}
			return command.Result{Kind: command.ResultPreview, Preview: pv}, nil
		}
		return next(c)
	}
	f.diff = func(token, path string) (*checkpoint.PathDiff, error) {
		if token != "k3F9x2" {
			return nil, fmt.Errorf("unexpected token %q", token)
		}
		if path == "b.txt" {
			return &checkpoint.PathDiff{Path: path, Change: "deleted", From: "r1", To: "cp2", Binary: true, OldSize: 2048, NewSize: -1, Patch: "diff --git a/b.txt b/b.txt\nGIT binary patch\n"}, nil
		}
		return &checkpoint.PathDiff{Path: path, Change: "added", From: "r1", To: "cp2", OldSize: -1, NewSize: 12,
			Patch: "diff --git a/" + path + " b/" + path + "\nnew file mode 100644\nindex 0000000..ce01362\n--- /dev/null\n+++ b/" + path + "\n@@ -0,0 +1,2 @@\n+hello\r\n+\tworld\n"}, nil
	}
	return f
}

func openPreview(t *testing.T, m *model) {
	t.Helper()
	press(t, m, "esc")
	press(t, m, "esc")
	press(t, m, "down")
	press(t, m, "enter")
	if m.picker == nil || m.picker.preview == nil {
		t.Fatalf("no preview:\n%s", screen(m))
	}
}

func TestGoldenViewsAtSizes(t *testing.T) {
	t.Parallel()
	for _, sz := range sizes {
		name := fmt.Sprintf("%dx%d", sz.w, sz.h)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := longSession()
			f.items = nil
			m, _ := newTestModel(t, f)
			resize(m, sz.w, sz.h)
			golden(t, "welcome-"+name, screen(m))
			for _, l := range strings.Split(screen(m), "\n") {
				if w := len([]rune(l)); w > sz.w {
					t.Fatalf("line wider than %d: %q", sz.w, l)
				}
			}

			press(t, m, "esc")
			press(t, m, "esc")
			press(t, m, "down")
			golden(t, "picker-"+name, screen(m))
			for _, l := range strings.Split(screen(m), "\n") {
				if strings.HasPrefix(l, "refactor") || strings.HasPrefix(l, "the line") {
					t.Fatalf("a picker row wrapped to column 0:\n%s", screen(m))
				}
			}
			press(t, m, "enter")
			golden(t, "preview-"+name, screen(m))
			press(t, m, "tab") // b.txt
			press(t, m, "shift+tab")
			press(t, m, "enter")
			if m.pager == nil || m.pager.loading {
				t.Fatalf("Enter did not open the diff:\n%s", screen(m))
			}
			golden(t, "diff-"+name, screen(m))
			press(t, m, "esc")
			if m.pager != nil || m.picker == nil || m.picker.preview == nil {
				t.Fatal("Esc in the diff did not go back to the preview")
			}
		})
	}
}

func TestStatusBarDuringTurn(t *testing.T) {
	t.Parallel()
	for _, sz := range sizes {
		name := fmt.Sprintf("%dx%d", sz.w, sz.h)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := longSession()
			f.info.RedoAvailable = true
			m, _ := newTestModel(t, f)
			resize(m, sz.w, sz.h)
			if s := screen(m); !strings.Contains(s, "redo available") {
				t.Fatalf("no redo in the status bar before the turn:\n%s", s)
			}
			f.prompt = blockingPrompt
			typeText(t, m, "fix the parser")
			_, cmd := m.Update(keyMsg("enter"))
			background(cmd)
			if m.turn == nil {
				t.Fatal("no turn running")
			}
			running := f.Info()
			running.Checkpoints, running.RedoAvailable, running.Running = 4, false, "cp4"
			m.Update(updateMsg{u: agent.Update{Kind: agent.UpdateText, Text: "working on it"}, info: running})
			s := screen(m)
			golden(t, "turn-"+name, s)
			status := strings.Split(s, "\n")[sz.h-2]
			if !strings.Contains(status, "4 checkpoints") || strings.Contains(status, "redo available") || !strings.Contains(status, "sim") {
				t.Fatalf("status during the turn = %q", status)
			}
			if sz.w <= 60 && strings.Contains(status, f.info.SessionID) {
				t.Fatalf("the long session id was kept at %d columns: %q", sz.w, status)
			}
		})
	}
}

// The poll during a turn re-reads the session, so the count and redo
// change before the first update arrives.
func TestStatusPolledDuringTurn(t *testing.T) {
	t.Parallel()
	f := &fakeSession{info: baseInfo()}
	f.info.RedoAvailable = true
	m, _ := newTestModel(t, f)
	m.pollEvery = time.Millisecond
	f.prompt = blockingPrompt
	typeText(t, m, "x")
	_, cmd := m.Update(keyMsg("enter"))
	background(cmd)
	f.mu.Lock()
	f.info.Checkpoints, f.info.RedoAvailable, f.info.Running = 4, false, "cp4"
	f.mu.Unlock()
	msg := m.pollInfo()()
	m.Update(msg)
	if m.info.Checkpoints != 4 || m.info.RedoAvailable {
		t.Fatalf("status after a poll: %+v", m.info)
	}
}

func TestPreviewScrollsAndConfirmNeedsAllSeen(t *testing.T) {
	t.Parallel()
	f := longSession()
	m, c := newTestModel(t, f)
	resize(m, 40, 12)
	openPreview(t, m)
	s := screen(m)
	if !strings.Contains(s, "more (↓/PgDn)") {
		t.Fatalf("a cut preview does not say so:\n%s", s)
	}
	c.advance(time.Second)
	press(t, m, "y")
	if n := len(f.execLog()); n != 2 {
		t.Fatalf("y confirmed a preview that was not read to the end: %q", f.execLog())
	}
	if !strings.Contains(screen(m), "read the whole preview first") {
		t.Fatalf("y said nothing:\n%s", screen(m))
	}
	// Scroll with the wheel and the keys until the end is on screen.
	for range 3 {
		m.Update(tea.MouseWheelMsg{Button: tea.MouseWheelDown})
	}
	for !m.picker.seenAll {
		if press(t, m, "pgdown"); m.picker.scroll > 1000 {
			t.Fatal("never reached the end")
		}
	}
	if s := screen(m); !strings.Contains(s, "more above") || !strings.Contains(s, "kept as r1") {
		t.Fatalf("the end of the preview:\n%s", s)
	}
	// Scrolling back up keeps the preview confirmable.
	press(t, m, "home")
	press(t, m, "y")
	if got := f.execLog(); got[len(got)-1] != "/rewind cp8 both --confirm k3F9x2" {
		t.Fatalf("execs %q", got)
	}
}

func TestStrayKeysDoNotRestore(t *testing.T) {
	t.Parallel()
	f := rewindSession(nil)
	m, c := newTestModel(t, f)
	// Esc Esc, Enter, Enter: the list, the preview, nothing more.
	for _, k := range []string{"esc", "esc", "enter", "enter", "enter"} {
		press(t, m, k)
	}
	// A paste of text with y in it does not confirm either.
	c.advance(time.Second)
	m.Update(tea.PasteMsg{Content: "yes y Y"})
	// y within the grace period after a fresh preview does nothing.
	press(t, m, "esc")
	press(t, m, "enter")
	press(t, m, "y")
	for _, e := range f.execLog() {
		if strings.Contains(e, "--confirm") {
			t.Fatalf("a stray key confirmed: %q", f.execLog())
		}
	}
	c.advance(confirmGrace)
	press(t, m, "y")
	if got := f.execLog(); !strings.Contains(got[len(got)-1], "--confirm") {
		t.Fatalf("y after the grace period did not confirm: %q", got)
	}
}

func TestDraftIsKeptAcrossRestore(t *testing.T) {
	t.Parallel()
	f := rewindSession(nil)
	m, c := newTestModel(t, f)
	typeText(t, m, "half-written idea")
	openPreview(t, m)
	confirmKey(t, m, c)
	if got := m.composer.Value(); got != "write b.txt\nsecond file\nEOF" {
		t.Fatalf("composer = %q, want the restored prompt", got)
	}
	if s := strings.Join(entryTexts(m), "\n"); !strings.Contains(s, "Your draft is in the input history") {
		t.Fatalf("the draft was put aside silently:\n%s", s)
	}
	// ↑ walks back: the restored prompt is the line being edited, the draft
	// is in the history; ↓ comes back.
	c.advance(time.Second)
	press(t, m, "up")
	press(t, m, "up")
	press(t, m, "up")
	if got := m.composer.Value(); got != "half-written idea" {
		t.Fatalf("↑ brought %q, want the draft", got)
	}
	press(t, m, "down")
	if got := m.composer.Value(); got != "write b.txt\nsecond file\nEOF" {
		t.Fatalf("↓ brought %q, want the restored prompt back", got)
	}
}

// Keys typed while a restore is applied, or just after it landed, are not
// merged into the restored prompt, and an Enter among them sends nothing.
func TestTypingDuringRestoreIsNotMerged(t *testing.T) {
	t.Parallel()
	t.Run("while applying", func(t *testing.T) {
		t.Parallel()
		f := rewindSession(nil)
		m, c := newTestModel(t, f)
		openPreview(t, m)
		c.advance(confirmGrace)
		press(t, m, "end")
		_, cmd := m.Update(keyMsg("y")) // the restore is in flight
		typeText(t, m, "cleanup")
		m.Update(keyMsg("enter"))
		drive(t, m, cmd)
		if got := m.composer.Value(); got != "cleanup" {
			t.Fatalf("composer = %q, want only what was typed", got)
		}
		if s := strings.Join(entryTexts(m), "\n"); !strings.Contains(s, "cp2's prompt is in the input history") {
			t.Fatalf("no notice about the restored prompt:\n%s", s)
		}
		if n := len(f.execLog()); n != 3 {
			t.Fatalf("execs %q", f.execLog())
		}
	})
	t.Run("just after", func(t *testing.T) {
		t.Parallel()
		f := rewindSession(nil)
		prompts := 0
		f.prompt = func(ctx context.Context, text string, on func(agent.Update)) (app.TurnResult, error) {
			prompts++
			return app.TurnResult{Status: "completed"}, nil
		}
		m, c := newTestModel(t, f)
		openPreview(t, m)
		confirmKey(t, m, c)
		press(t, m, "enter") // typed ahead: ignored
		typeText(t, m, "cleanup")
		if got := m.composer.Value(); got != "cleanup" {
			t.Fatalf("composer = %q, want only what was typed", got)
		}
		if prompts != 0 || len(f.execLog()) != 3 {
			t.Fatalf("something ran: %d prompts, execs %q", prompts, f.execLog())
		}
		m.hist.reset()
		press(t, m, "up")
		if got := m.composer.Value(); got != "write b.txt\nsecond file\nEOF" {
			t.Fatalf("↑ brought %q, want the restored prompt", got)
		}
	})
	t.Run("after settling", func(t *testing.T) {
		t.Parallel()
		f := rewindSession(nil)
		m, c := newTestModel(t, f)
		openPreview(t, m)
		confirmKey(t, m, c)
		c.advance(settle)
		typeText(t, m, " more")
		if got := m.composer.Value(); got != "write b.txt\nsecond file\nEOF more" {
			t.Fatalf("composer = %q: editing the restored prompt later must work", got)
		}
	})
}

func TestCompletionHighlightsAndCycles(t *testing.T) {
	t.Parallel()
	m, _ := newTestModel(t, &fakeSession{info: baseInfo()})
	typeText(t, m, "/re")
	press(t, m, "tab")
	first := m.composer.Value()
	press(t, m, "tab")
	second := m.composer.Value()
	if first == second || !strings.HasPrefix(first, "/re") || !strings.HasPrefix(second, "/re") {
		t.Fatalf("Tab did not cycle: %q then %q", first, second)
	}
	press(t, m, "up")
	if m.composer.Value() != first {
		t.Fatalf("↑ went to %q, want %q", m.composer.Value(), first)
	}
	press(t, m, "down")
	if m.composer.Value() != second {
		t.Fatalf("↓ went to %q, want %q", m.composer.Value(), second)
	}
	s := screen(m)
	if !strings.Contains(s, "› "+second) {
		t.Fatalf("the highlighted entry is not marked:\n%s", s)
	}
	golden(t, "completion-cycle", s)
}

func TestWords(t *testing.T) {
	t.Parallel()
	m, _ := newTestModel(t, &fakeSession{info: baseInfo()})
	m.entries = []entry{
		{kind: kindTool, tool: &agent.ToolInfo{Name: "bash", Title: "bash true", Status: "completed", Result: "exit code: 0\n(no output)"}},
		{kind: kindTool, tool: &agent.ToolInfo{Name: "bash", Title: "bash ls", Status: "completed", Result: "exit code: 0\na\nb"}},
	}
	s := screen(m)
	if !strings.Contains(s, "exit code: 0 · (no output)") || strings.Contains(s, "(+1 line") || !strings.Contains(s, "(+2 lines, Ctrl+O shows them)") {
		t.Fatalf("tool results:\n%s", s)
	}
	// Ctrl+O shows every line, and collapses them again.
	press(t, m, "ctrl+o")
	if s := screen(m); !regexp.MustCompile(`(?m)^      a\s*$`).MatchString(s) || !regexp.MustCompile(`(?m)^      b\s*$`).MatchString(s) || !strings.Contains(s, "Ctrl+O collapse tool output") {
		t.Fatalf("expanded tool results:\n%s", s)
	}
	press(t, m, "ctrl+o")
	if s := screen(m); regexp.MustCompile(`(?m)^      b\s*$`).MatchString(s) || !strings.Contains(s, "Ctrl+O expand tool output") {
		t.Fatalf("collapsed again:\n%s", s)
	}

	// A refused call: its state and what was refused, never a check.
	m, _ = newTestModel(t, &fakeSession{info: baseInfo()})
	m.entries = []entry{{kind: kindTool, tool: &agent.ToolInfo{Name: "bash", Title: "bash: echo x > /etc/x || true", Status: "refused",
		Result: "exit code: 0\n(no output)\nnote: …", Refused: "the sandbox (level write) refused writing /etc/x"}}}
	s = screen(m)
	if !strings.Contains(s, "⊘ bash: echo x > /etc/x || true  refused by the sandbox") || strings.Contains(s, "✓") ||
		!strings.Contains(s, "⎿ the sandbox (level write) refused writing /etc/x") {
		t.Fatalf("refused call:\n%s", s)
	}

	// An old restore notice stops offering /redo once a turn started.
	notice := "Rewound to cp2 (conversation and workspace): 1 turn left the active conversation, 1 path restored. " + checkpoint.RedoHint
	f := &fakeSession{info: baseInfo()}
	f.info.RedoAvailable = true
	f.items = []agent.Item{{Kind: agent.ItemUser, Text: "one"}, {Kind: agent.ItemNotice, Text: notice}}
	m, _ = newTestModel(t, f)
	if !strings.Contains(screen(m), "/redo undoes this") {
		t.Fatalf("the latest notice lost its redo hint while redo is available:\n%s", screen(m))
	}
	typeText(t, m, "two")
	press(t, m, "enter")
	if strings.Contains(screen(m), "/redo undoes this") {
		t.Fatalf("the redo hint outlived the next turn:\n%s", screen(m))
	}
	if got := entryTexts(m); !slices.Contains(got, "notice:Rewound to cp2 (conversation and workspace): 1 turn left the active conversation, 1 path restored.") {
		t.Fatalf("entries %q", got)
	}
}

// blockingPrompt is a turn that runs until it is cancelled.
func blockingPrompt(ctx context.Context, text string, on func(agent.Update)) (app.TurnResult, error) {
	<-ctx.Done()
	return app.TurnResult{Status: "cancelled"}, nil
}

// background runs the session calls a key started without feeding their
// messages back: the model stays in the state the key left it in.
func background(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	go func() {
		if b, ok := cmd().(tea.BatchMsg); ok {
			for _, c := range b {
				if c != nil {
					go c()
				}
			}
		}
	}()
}

// Errors say each thing once.
func TestErrorsSayItOnce(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		want string
	}{
		{&checkpoint.Error{Code: checkpoint.CodeStalePreview, Msg: "workspace changed since the preview; run the preview again"},
			"workspace changed since the preview; press Enter for a fresh preview"},
		{&checkpoint.Error{Code: checkpoint.CodeConversationMove, Msg: "the conversation moved since the preview (a turn ran or another restore happened); run the preview again"},
			"the conversation moved since the preview (a turn ran or another restore happened); press Enter for a fresh preview"},
		{&checkpoint.Error{Code: checkpoint.CodeTurnRunning, Msg: "turn cp3 is still running and can write the workspace; wait for it to end or cancel it (Ctrl+C in the TUI), then confirm again"},
			"turn cp3 is still running and can write the workspace; wait for it to end or cancel it (Ctrl+C in the TUI), then confirm again"},
		{&checkpoint.Error{Code: checkpoint.CodeWriterActive, Msg: "a process can still write the workspace: bash \"sleep 9\" (task t1). Stop it with `/tasks stop <id>` or wait for it to finish, then confirm again"},
			"a process can still write the workspace: bash \"sleep 9\" (task t1). Stop it with `/tasks stop <id>` or wait for it to finish, then confirm again"},
	} {
		if got := describeErr(tt.err); got != tt.want {
			t.Errorf("describeErr(%q)\n= %q\nwant %q", tt.err, got, tt.want)
		}
	}
}

// A warning sent before the turn runs (the checkout's uncommitted changes
// a new session does not see) is shown at once, as a notice, while the
// turn is still running.
func TestWarningBeforeTurn(t *testing.T) {
	t.Parallel()
	f := &fakeSession{info: baseInfo()}
	m, _ := newTestModel(t, f)
	resize(m, 100, 30)
	f.prompt = blockingPrompt
	typeText(t, m, "fix the test I just changed")
	_, cmd := m.Update(keyMsg("enter"))
	background(cmd)
	m.Update(updateMsg{u: agent.Update{Kind: agent.UpdateWarning, Text: "your checkout has 1 uncommitted change (f.txt) that this session does not see"}, info: f.Info()})
	s := screen(m)
	if m.turn == nil {
		t.Fatal("the turn is not running any more")
	}
	if !strings.Contains(s, "warning: your checkout has 1 uncommitted change (f.txt)") {
		t.Fatalf("the warning is not on screen during the turn:\n%s", s)
	}
	if strings.Contains(s, "✗ warning") {
		t.Fatalf("the warning is shown as an error:\n%s", s)
	}
}

// Large files: the pager says what it knows (binary, or too large) and
// the sizes, without a patch.
func TestDiffLinesLarge(t *testing.T) {
	t.Parallel()
	m, _ := newTestModel(t, &fakeSession{info: baseInfo()})
	for _, tc := range []struct {
		d    checkpoint.PathDiff
		want string
	}{
		{checkpoint.PathDiff{Path: "big.bin", Change: "modified", To: "cp1", Binary: true, OldSize: 100001000, NewSize: 100000000}, "Binary file modified: "},
		{checkpoint.PathDiff{Path: "huge.log", Change: "modified", To: "cp1", TooLarge: true, OldSize: 5 << 20, NewSize: 6 << 20}, "too large to show a diff here"},
	} {
		got := strings.Join(m.diffLines(&tc.d), "\n")
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.d.Path, got, tc.want)
		}
	}
}

// noticingSession has a warning to give before the first prompt.
type noticingSession struct {
	*fakeSession
	notes []string
}

func (n noticingSession) StartNotices(context.Context) []string { return n.notes }

// The checkout's uncommitted changes are on the welcome screen, before a
// prompt is typed, and join the transcript above the first prompt.
func TestStartNoticesOnWelcome(t *testing.T) {
	t.Parallel()
	f := &fakeSession{info: baseInfo()}
	ns := noticingSession{fakeSession: f, notes: []string{"your checkout /r has 1 uncommitted change (f.txt) that this session does not see"}}
	c := &clock{t: t0}
	m := newModel(context.Background(), ns, f.Info(), nil, true, c.now, time.UTC)
	m.pollEvery = 0
	t.Cleanup(m.shutdown)
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	cmd := m.Init()
	if cmd == nil {
		t.Fatal("Init asks nothing of a session with start notices")
	}
	var got startNoticesMsg
	msgs := []tea.Msg{cmd()}
	for len(msgs) > 0 {
		msg := msgs[0]
		msgs = msgs[1:]
		if b, ok := msg.(tea.BatchMsg); ok {
			for _, c := range b {
				if c != nil {
					msgs = append(msgs, c())
				}
			}
			continue
		}
		if sn, ok := msg.(startNoticesMsg); ok {
			got = sn
		}
	}
	m.Update(got)
	s := screen(m)
	if !strings.Contains(s, "Welcome to yolop") || !strings.Contains(s, "warning: your checkout /r has 1 uncommitted change (f.txt)") {
		t.Fatalf("the welcome screen lacks the warning:\n%s", s)
	}
	f.prompt = blockingPrompt
	typeText(t, m, "fix the test I just changed")
	_, cmd = m.Update(keyMsg("enter"))
	background(cmd)
	if len(m.entries) < 2 || m.entries[0].kind != kindNotice || !strings.Contains(m.entries[0].text, "uncommitted change (f.txt)") || m.entries[1].kind != kindUser {
		t.Fatalf("entries after the first prompt: %+v", m.entries)
	}
}

// A read-only session whose notice repeats the read-only reason (for print
// mode) says it once.
func TestReadOnlyReasonOnce(t *testing.T) {
	t.Parallel()
	f := &fakeSession{info: baseInfo()}
	why := "opened for reading only: the repository /r of this session is no longer there"
	f.info.ReadOnly, f.info.ReadOnlyReason = true, why
	f.info.Notices = []string{"session s_1 is " + why + ". Listing and replay work; turns and restores are refused", "an unrelated notice"}
	m, _ := newTestModel(t, f)
	n := 0
	other := false
	for _, e := range m.entries {
		n += strings.Count(e.text, why)
		other = other || e.text == "an unrelated notice"
	}
	if n != 1 || !other {
		t.Fatalf("the reason is shown %d times (unrelated notice shown: %v): %+v", n, other, m.entries)
	}
}

// The welcome screen of a new worktree session does not call the checkout
// its files: the session works in a worktree of its own.
func TestWelcomeFilesOfANewWorktreeSession(t *testing.T) {
	t.Parallel()
	info := baseInfo()
	info.Branch, info.Workspace, info.Checkpoints, info.Title, info.ActiveRoot = "", true, 0, "", "/home/u/proj"
	m, _ := newTestModel(t, &fakeSession{info: info})
	s := screen(m)
	if !strings.Contains(s, "Files    its own worktree; your checkout /home/u/proj stays as it is") {
		t.Fatalf("welcome screen:\n%s", s)
	}
}
