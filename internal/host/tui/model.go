package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/command"
)

// doubleEsc is how close two Esc presses must be to open the rewind picker.
const doubleEsc = time.Second

// Minimum usable terminal size; below it the UI shows only a message.
const (
	minWidth  = 30
	minHeight = 10
)

// model is the one root model. Sub-parts (transcript, picker, composer)
// are plain state with methods; only model has an Update.
type model struct {
	ctx   context.Context
	sess  Session
	calls *calls
	now   func() time.Time
	loc   *time.Location
	st    styles

	width, height int

	info     app.Info
	entries  []entry
	scroll   int // transcript lines scrolled up from the bottom
	composer textarea.Model

	// turn is non-nil while a prompt runs.
	turn *runningTurn
	// execBusy is set while a slash command runs.
	execBusy bool

	picker *picker

	lastEsc   time.Time // previous lone Esc while idle, for Esc Esc
	quitArmed bool      // Ctrl+C pressed once while idle
	completed int       // index into completion matches cycled by Tab
	compBase  string    // what was typed before Tab started cycling
}

type runningTurn struct {
	cancel    context.CancelFunc
	stream    turnStream
	cancelled bool
	// errShown is the last error update shown, so the final result does
	// not repeat it.
	errShown string
	// textSeen is set once assistant text streamed, so the final text is
	// not printed twice.
	textSeen bool
}

func newModel(ctx context.Context, s Session, info app.Info, items []agent.Item, noColor bool, now func() time.Time, loc *time.Location) *model {
	ta := textarea.New()
	ta.ShowLineNumbers = false
	ta.SetPromptFunc(2, func(pi textarea.PromptInfo) string {
		if pi.LineNumber == 0 {
			return "> "
		}
		return "  "
	})
	ta.Placeholder = "Type a prompt, or / for commands"
	ta.DynamicHeight = true
	ta.MinHeight = 1
	ta.MaxHeight = 6
	ta.MaxContentHeight = 10000
	ta.KeyMap.InsertNewline = key.NewBinding(key.WithKeys("alt+enter", "ctrl+j"))
	ta.SetVirtualCursor(false)
	ta.SetStyles(composerStyles(noColor))
	ta.Focus()

	m := &model{
		ctx:      ctx,
		sess:     s,
		calls:    newCalls(),
		now:      now,
		loc:      loc,
		st:       newStyles(noColor),
		width:    80,
		height:   24,
		info:     info,
		composer: ta,
	}
	m.entries = entriesFromItems(items)
	for _, r := range info.Repairs {
		m.entries = append(m.entries, entry{kind: kindNotice, text: "repaired: " + r})
	}
	if info.ReadOnly {
		m.entries = append(m.entries, entry{kind: kindError, text: "this session is read-only: " + info.ReadOnlyReason})
	}
	m.layout()
	return m
}

// shutdown cancels a running turn and waits for every session call.
func (m *model) shutdown() {
	if m.turn != nil {
		m.turn.cancel()
	}
	m.calls.stop()
	m.calls.wg.Wait()
}

func (m *model) Init() tea.Cmd { return nil }

func (m *model) busy() bool { return m.turn != nil || m.execBusy }

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.layout()
		return m, nil
	case tea.KeyPressMsg:
		return m, m.handleKey(msg)
	case tea.PasteMsg:
		if m.picker == nil {
			var cmd tea.Cmd
			m.composer, cmd = m.composer.Update(msg)
			m.layout()
			return m, cmd
		}
		return m, nil
	case updateMsg:
		m.handleUpdate(msg.u)
		if m.turn != nil {
			return m, waitStream(m.turn.stream)
		}
		return m, nil
	case turnDoneMsg:
		return m, m.handleTurnDone(msg)
	case execDoneMsg:
		return m, m.handleExecDone(msg)
	}
	return m, nil
}

// handleKey routes a key press: global keys first, then the picker or the
// composer.
func (m *model) handleKey(k tea.KeyPressMsg) tea.Cmd {
	ks := k.String()
	if ks != "ctrl+c" {
		m.quitArmed = false
	}
	switch ks {
	case "ctrl+c":
		return m.handleCtrlC()
	case "pgup":
		m.scroll += m.transcriptHeight() - 1
		return nil
	case "pgdown":
		m.scroll = max(0, m.scroll-(m.transcriptHeight()-1))
		return nil
	}
	if m.picker != nil {
		return m.pickerKey(k)
	}
	switch ks {
	case "esc", "alt+esc":
		return m.handleEsc(ks == "alt+esc")
	case "enter":
		return m.submit()
	case "tab":
		m.complete()
		return nil
	}
	m.lastEsc = time.Time{}
	m.completed, m.compBase = 0, ""
	var cmd tea.Cmd
	m.composer, cmd = m.composer.Update(k)
	m.layout()
	return cmd
}

func (m *model) handleCtrlC() tea.Cmd {
	switch {
	case m.turn != nil:
		if !m.turn.cancelled {
			m.turn.cancelled = true
			m.turn.cancel()
			m.addNotice("cancelling the turn…")
		}
		return nil
	case m.picker != nil:
		m.picker = nil
		m.quitArmed = false
		return nil
	case m.quitArmed:
		return tea.Quit
	}
	m.quitArmed = true
	if m.composer.Value() != "" {
		m.composer.Reset()
		m.layout()
	}
	return nil
}

// handleEsc opens the rewind picker on the second Esc within doubleEsc while
// idle. Terminals may deliver a quick Esc Esc as one alt+esc key.
func (m *model) handleEsc(double bool) tea.Cmd {
	now := m.now()
	if !double && (m.lastEsc.IsZero() || now.Sub(m.lastEsc) > doubleEsc) {
		m.lastEsc = now
		return nil
	}
	m.lastEsc = time.Time{}
	if m.busy() {
		m.addError("a turn is running: wait for it or press Ctrl+C to cancel it, then press Esc Esc to rewind")
		return nil
	}
	return m.runCommand(command.Command{Name: "rewind", Raw: "/rewind"})
}

// submit sends the composer's text as a prompt or runs it as a command.
func (m *model) submit() tea.Cmd {
	text := m.composer.Value()
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if m.busy() {
		m.addError("a turn is running: wait for it or press Ctrl+C to cancel it (your text stays in the composer)")
		return nil
	}
	m.composer.Reset()
	m.completed, m.compBase = 0, ""
	m.layout()
	m.scroll = 0
	if command.IsCommand(text) {
		text = expandCommandName(text)
		cmd, err := command.Parse(text)
		if err != nil {
			m.addEntry(entry{kind: kindUser, text: strings.TrimSpace(text)})
			m.addError(describeErr(err))
			return nil
		}
		m.addEntry(entry{kind: kindUser, text: cmd.Raw})
		return m.runCommand(cmd)
	}
	return m.startTurn(command.Prompt(text))
}

func (m *model) startTurn(text string) tea.Cmd {
	ctx, cancel := context.WithCancel(m.ctx)
	st := turnStream{ch: make(chan tea.Msg, 64)}
	m.turn = &runningTurn{cancel: cancel, stream: st}
	m.addEntry(entry{kind: kindUser, text: text})
	return tea.Batch(promptCmd(ctx, m.sess, m.calls, st, text), waitStream(st))
}

// runCommand handles the display-only commands here and sends the rest to
// the session.
func (m *model) runCommand(cmd command.Command) tea.Cmd {
	switch cmd.Name {
	case "quit":
		return tea.Quit
	case "clear":
		m.entries = nil
		m.scroll = 0
		return nil
	case "help":
		m.addEntry(entry{kind: kindInfo, text: helpText()})
		return nil
	}
	m.execBusy = true
	if m.picker != nil {
		m.picker.loading = true
		m.picker.err = ""
	}
	return execCmd(m.ctx, m.sess, m.calls, cmd)
}

func (m *model) handleUpdate(u agent.Update) {
	t := m.turn
	switch u.Kind {
	case agent.UpdateText:
		if t != nil {
			t.textSeen = true
		}
		m.appendStream(kindAssistant, u.Text)
	case agent.UpdateReasoning:
		m.appendStream(kindReasoning, u.Text)
	case agent.UpdateToolStart, agent.UpdateToolEnd:
		if u.Tool == nil {
			return
		}
		for i := len(m.entries) - 1; i >= 0; i-- {
			e := &m.entries[i]
			if e.kind == kindTool && e.tool != nil && e.tool.ID == u.Tool.ID && u.Tool.ID != "" {
				e.tool = u.Tool
				return
			}
		}
		m.addEntry(entry{kind: kindTool, tool: u.Tool})
	case agent.UpdateNotice:
		m.addNotice(u.Text)
	case agent.UpdateError:
		if t != nil {
			t.errShown = u.Text
		}
		m.addError(u.Text)
	}
}

// appendStream extends the last entry when it is of the same streaming kind,
// else starts a new one.
func (m *model) appendStream(k entryKind, text string) {
	if n := len(m.entries); n > 0 && m.entries[n-1].kind == k && m.entries[n-1].open {
		m.entries[n-1].text += text
		return
	}
	m.addEntry(entry{kind: k, text: text, open: true})
}

func (m *model) handleTurnDone(msg turnDoneMsg) tea.Cmd {
	t := m.turn
	m.turn = nil
	m.closeStreams()
	if msg.info.SessionID != "" {
		m.info = msg.info
	}
	if msg.err != nil {
		if t == nil || describeErr(msg.err) != t.errShown {
			m.addError(describeErr(msg.err))
		}
		return nil
	}
	res := msg.res
	if res.Text != "" && (t == nil || !t.textSeen) {
		m.addEntry(entry{kind: kindAssistant, text: res.Text})
	}
	switch res.Status {
	case "failed":
		text := res.Error
		if text == "" {
			text = "the turn failed"
		}
		if t == nil || text != t.errShown {
			m.addError("turn failed: " + text)
		}
	case "cancelled":
		m.addNotice("turn cancelled")
	case "interrupted":
		m.addNotice("turn interrupted")
	}
	if res.Warning != "" {
		m.addNotice(res.Warning)
	}
	for _, w := range res.Warnings {
		m.addError("warning: " + w)
	}
	if res.Pending != nil {
		m.addNotice("the model asked for a restore: review the preview and confirm it, or press Esc to cancel")
		m.picker = &picker{stage: stageConfirm, preview: res.Pending}
	}
	return nil
}

func (m *model) handleExecDone(msg execDoneMsg) tea.Cmd {
	m.execBusy = false
	if msg.info.SessionID != "" {
		m.info = msg.info
	}
	if m.picker != nil {
		m.picker.loading = false
	}
	if msg.err != nil {
		text := describeErr(msg.err)
		if m.picker != nil {
			m.picker.err = text
			if msg.cmd.Confirm {
				// The token is spent or refused; Enter previews again.
				m.picker.refused, m.picker.preview = m.picker.preview, nil
			}
			return nil
		}
		m.addError(text)
		return nil
	}
	res := msg.res
	switch res.Kind {
	case command.ResultList:
		if len(res.Rows) == 0 {
			m.picker = nil
			m.addNotice("no checkpoints yet: every prompt you send creates one")
			return nil
		}
		m.picker = newPicker(res.Rows)
	case command.ResultPreview:
		if res.Preview == nil {
			m.addError("the session returned an empty preview; run the command again")
			return nil
		}
		if m.picker == nil {
			m.picker = &picker{}
		}
		m.picker.stage = stageConfirm
		m.picker.preview = res.Preview
		m.picker.request = msg.cmd
		m.picker.err, m.picker.refused = "", nil
	case command.ResultRestored:
		m.picker = nil
		m.applyRestore(res.Restored, msg)
	default:
		text := res.Text
		if text == "" {
			text = "/" + msg.cmd.Name + ": done"
		}
		m.addEntry(entry{kind: kindInfo, text: text})
	}
	return nil
}

// applyRestore shows a restore: a conversation restore replaces the
// transcript with the active branch and puts the prompt back in the
// composer (not submitted); a workspace-only restore keeps the transcript.
func (m *model) applyRestore(r *checkpoint.Restored, msg execDoneMsg) {
	if r == nil {
		m.addError("the session reported a restore without details; check /rewind")
		return
	}
	notice := r.Notice
	if notice == "" {
		notice = fmt.Sprintf("restored %s (%s): %d paths changed", r.Target, r.Mode.Describe(), r.PathsChanged)
	}
	if msg.hadTranscript {
		m.entries = entriesFromItems(msg.transcript)
		m.scroll = 0
	}
	if n := len(m.entries); n == 0 || m.entries[n-1].kind != kindNotice || m.entries[n-1].text != notice {
		m.addNotice(notice)
	}
	if r.Warning != "" {
		m.addError(r.Warning)
	}
	if r.Prompt != "" {
		m.composer.SetValue(r.Prompt)
		m.composer.MoveToEnd()
		m.layout()
	}
}

// complete implements Tab completion of a command name: first to the
// longest common prefix, then cycling through the candidates for what was
// typed before the first Tab.
func (m *model) complete() {
	base := m.compBase
	if base == "" {
		base = m.composer.Value()
	}
	matches := matchCommands(base)
	if len(matches) == 0 {
		return
	}
	typed := strings.TrimPrefix(base, "/")
	if p := commonPrefix(matches); m.compBase == "" && len(p) > len(typed) {
		m.composer.SetValue("/" + p + suffixIfUnique(matches))
		m.composer.MoveToEnd()
		return
	}
	m.compBase = base
	name := matches[m.completed%len(matches)].Name
	m.completed++
	m.composer.SetValue("/" + name)
	m.composer.MoveToEnd()
}

// expandCommandName completes an unambiguous command prefix on Enter, the
// way Tab would ("/und" runs /undo); anything else is left to the parser,
// which explains what is wrong.
func expandCommandName(text string) string {
	line := strings.TrimSpace(text)
	name, rest, _ := strings.Cut(line[1:], " ")
	if _, ok := command.Lookup(strings.ToLower(name)); ok || name == "" || strings.Contains(name, "\n") {
		return text
	}
	if ms := matchCommands("/" + name); len(ms) == 1 {
		if rest != "" {
			return "/" + ms[0].Name + " " + rest
		}
		return "/" + ms[0].Name
	}
	return text
}

func suffixIfUnique(ds []command.Descriptor) string {
	if len(ds) == 1 {
		return " "
	}
	return ""
}

func commonPrefix(ds []command.Descriptor) string {
	p := ds[0].Name
	for _, d := range ds[1:] {
		for !strings.HasPrefix(d.Name, p) {
			p = p[:len(p)-1]
		}
	}
	return p
}

// completions lists the commands matching what is typed while the composer
// holds only "/name" (no argument yet).
func (m *model) completions() []command.Descriptor {
	return matchCommands(m.composer.Value())
}

func matchCommands(v string) []command.Descriptor {
	if !strings.HasPrefix(v, "/") || strings.ContainsAny(v, " \t\n") {
		return nil
	}
	prefix := strings.ToLower(v[1:])
	var out []command.Descriptor
	for _, d := range command.For(command.HostTUI) {
		if strings.HasPrefix(d.Name, prefix) {
			out = append(out, d)
		}
	}
	return out
}

func (m *model) addEntry(e entry) {
	m.closeStreams()
	m.entries = append(m.entries, e)
}

func (m *model) addNotice(text string) { m.addEntry(entry{kind: kindNotice, text: text}) }
func (m *model) addError(text string)  { m.addEntry(entry{kind: kindError, text: text}) }

// closeStreams ends streaming into the last entry so the next delta starts a
// new block (text after a tool call is a new paragraph).
func (m *model) closeStreams() {
	if n := len(m.entries); n > 0 {
		m.entries[n-1].open = false
	}
}

// describeErr turns an error into a message that says what to do next.
func describeErr(err error) string {
	var ue *command.UsageError
	if errors.As(err, &ue) {
		return ue.Msg + " (type /help for the commands)"
	}
	switch checkpoint.CodeOf(err) {
	case checkpoint.CodeWriterActive:
		return err.Error() + " — stop it first (/tasks lists running tasks, /tasks stop <id> stops one), then try again"
	case checkpoint.CodeStalePreview, checkpoint.CodeConversationMove:
		return err.Error() + " (press Enter for a fresh preview)"
	case checkpoint.CodeTurnRunning:
		return err.Error() + " — wait for the turn or press Ctrl+C to cancel it"
	}
	if errors.Is(err, context.Canceled) {
		return "cancelled"
	}
	return err.Error()
}

func helpText() string {
	var b strings.Builder
	b.WriteString("Commands:\n")
	for _, d := range command.For(command.HostTUI) {
		line := "/" + d.Name
		if d.Hint != "" {
			line += " " + d.Hint
		}
		fmt.Fprintf(&b, "  %s\n      %s\n", line, d.Description)
	}
	b.WriteString("Keys: Enter send · Alt+Enter or Ctrl+J newline · Tab complete · Esc Esc rewind · PgUp/PgDn scroll · Ctrl+C cancel turn (twice when idle: quit)")
	return b.String()
}
