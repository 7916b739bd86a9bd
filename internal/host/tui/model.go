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
	"github.com/charmbracelet/x/ansi"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/land"
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
	// welcomeNotes are warnings found while the welcome screen shows
	// (the checkout's uncommitted changes); they join the transcript
	// when the first prompt is sent.
	welcomeNotes []string
	// shownNotices are the setup notices already shown.
	shownNotices map[string]bool
	ctx          context.Context
	sess         Session
	calls        *calls
	now          func() time.Time
	loc          *time.Location
	st           styles

	width, height int

	info    app.Info
	entries []entry
	scroll  int // transcript lines scrolled up from the bottom
	// earlier loads the transcript items before those shown first (a long
	// session draws its newest items at once); nil when there are none.
	// transcriptGen counts replacements of the transcript (restores), so
	// older items that arrive after one are dropped.
	earlier       func() []agent.Item
	earlierAsked  bool // its load has started
	transcriptGen int
	composer      textarea.Model

	// turn is non-nil while a prompt runs.
	turn *runningTurn
	// execBusy is set while a slash command runs.
	execBusy bool

	picker *picker
	// pager is help or a diff shown over everything else.
	pager *pager
	// resume is set when /resume ended the program: Run returns ErrResume.
	resume bool

	// expandTools shows every line of the tool outputs in the transcript
	// (Ctrl+O toggles it); collapsed, a row shows its first line and how
	// many more there are.
	expandTools bool

	lastEsc   time.Time // previous lone Esc while idle, for Esc Esc
	quitArmed bool      // Ctrl+C pressed once while idle
	compSel   int       // highlighted completion, -1 for none
	compBase  string    // what was typed before Tab/↑/↓ started cycling

	// hist is the input history; drafts put aside land there too.
	hist history
	// stash is the composer's draft put aside while a restore is applied.
	stash string
	// restoreTyped is set when the user typed while a restore was applied.
	restoreTyped bool
	// restored is the prompt a restore just put in the composer; until
	// settleUntil, typing moves it to the history instead of extending it,
	// and Enter is ignored, so keys meant for the picker cannot send it.
	restored    string
	settleUntil time.Time

	// pollEvery is how often the status is refreshed during a turn (0:
	// never; tests).
	pollEvery time.Duration
	turnGen   int
}

// settle is how long after a restore lands keys are treated as typed
// ahead rather than as edits of the restored prompt.
const settle = 500 * time.Millisecond

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
		ctx:       ctx,
		sess:      s,
		calls:     newCalls(),
		now:       now,
		loc:       loc,
		st:        newStyles(noColor),
		width:     80,
		height:    24,
		info:      info,
		composer:  ta,
		compSel:   -1,
		pollEvery: 250 * time.Millisecond,
	}
	m.entries = entriesFromItems(items)
	m.fadeRedoHints(true)
	for _, r := range info.Repairs {
		m.entries = append(m.entries, entry{kind: kindNotice, text: "repaired: " + r})
	}
	if info.ReadOnly && info.ReadOnlyReason != "" {
		// A notice that repeats why the session is read-only (for hosts
		// that do not show the reason) is said by the line below.
		for _, n := range info.Notices {
			if strings.Contains(n, info.ReadOnlyReason) {
				if m.shownNotices == nil {
					m.shownNotices = map[string]bool{}
				}
				m.shownNotices[n] = true
			}
		}
	}
	m.noteNotices()
	for _, w := range info.Warnings {
		m.entries = append(m.entries, entry{kind: kindNotice, text: "warning: " + w})
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

// Init draws the first screen from the newest turns alone; the older
// ones are loaded when the user scrolls up, or after a second of leaving
// the machine to the first screen (decoding a long session's whole
// history competes with it for the processor).
func (m *model) Init() tea.Cmd {
	var cmds []tea.Cmd
	if m.earlier != nil {
		cmds = append(cmds, tea.Tick(earlierAfter, func(time.Time) tea.Msg { return loadEarlierMsg{} }))
	}
	if sn, ok := m.sess.(startNoticer); ok {
		cmds = append(cmds, startNoticesCmd(m.ctx, m.calls, sn))
	}
	return tea.Batch(cmds...)
}

// startNoticer is a session that has something to say before its first
// prompt, found while the welcome screen shows (app.Session).
type startNoticer interface {
	StartNotices(ctx context.Context) []string
}

// startNoticesMsg carries what a new session says before its first prompt.
type startNoticesMsg struct{ notices []string }

func startNoticesCmd(ctx context.Context, c *calls, s startNoticer) tea.Cmd {
	c.wg.Add(1)
	return func() tea.Msg {
		defer c.wg.Done()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-c.quit:
				cancel()
			case <-ctx.Done():
			}
		}()
		return startNoticesMsg{notices: s.StartNotices(ctx)}
	}
}

// earlierAfter is how long after the first screen the older transcript is
// loaded unasked.
const earlierAfter = time.Second

// loadEarlierMsg asks for the older transcript (see Init).
type loadEarlierMsg struct{}

// askEarlier starts loading the transcript items before those shown, once.
func (m *model) askEarlier() tea.Cmd {
	if m.earlier == nil || m.earlierAsked {
		return nil
	}
	m.earlierAsked = true
	return earlierCmd(m.calls, m.earlier, m.transcriptGen)
}

// earlierMsg carries the transcript items before those the first screen
// showed (see transcriptOf).
type earlierMsg struct {
	items []agent.Item
	gen   int // transcriptGen when they were asked for
}

func earlierCmd(c *calls, load func() []agent.Item, gen int) tea.Cmd {
	c.wg.Add(1)
	return func() tea.Msg {
		defer c.wg.Done()
		return earlierMsg{items: load(), gen: gen}
	}
}

// addEarlier puts the older items before the transcript shown, unless a
// restore replaced the transcript meanwhile. The view stays where it was
// (scroll counts lines from the bottom).
func (m *model) addEarlier(msg earlierMsg) {
	m.earlier = nil
	if msg.gen != m.transcriptGen || len(msg.items) == 0 {
		return
	}
	m.entries = append(entriesFromItems(msg.items), m.entries...)
	// Their restore notices end with the /redo hint, which only the newest
	// one may keep.
	m.fadeRedoHints(true)
	m.layout()
}

func (m *model) busy() bool { return m.turn != nil || m.execBusy }

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmd := m.update(msg)
	// Whatever moved (a key, a resize, a new preview), note whether the
	// whole preview has been on screen.
	m.clampPicker()
	return m, cmd
}

func (m *model) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.layout()
		return nil
	case earlierMsg:
		m.addEarlier(msg)
		return nil
	case loadEarlierMsg:
		return m.askEarlier()
	case tea.KeyPressMsg:
		return m.handleKey(msg)
	case tea.MouseWheelMsg:
		d := 3
		if msg.Button == tea.MouseWheelUp {
			d = -3
		} else if msg.Button != tea.MouseWheelDown {
			return nil
		}
		m.scrollBy(d)
		if d < 0 && m.pager == nil && m.picker == nil {
			return m.askEarlier()
		}
		return nil
	case tea.PasteMsg:
		// A paste is text, never a key: it cannot confirm a restore or
		// send anything, and it does not extend a restored prompt.
		if m.pager != nil || (m.picker != nil && !m.picker.confirming) {
			return nil
		}
		m.settleTyping(true)
		before := m.composer.Value()
		var cmd tea.Cmd
		tooLong := minRows(before, m.composer.Width())+minRows(msg.Content, m.composer.Width())-1 > m.composer.MaxContentHeight
		if !tooLong {
			// Only a paste that may fit goes to the input: inserting a
			// megabyte into it takes many seconds, however it ends.
			m.composer, cmd = m.composer.Update(msg)
		}
		if got := m.composer.Value(); msg.Content != "" && (tooLong || got == before || strings.Count(got, "\n")-strings.Count(before, "\n") < strings.Count(msg.Content, "\n")) {
			// The input holds a bounded number of lines and cut the paste
			// to fit: nothing of it is kept, rather than a prompt that
			// silently lacks its end.
			m.composer.SetValue(before)
			m.addNotice(fmt.Sprintf("Nothing was pasted: the text (%d lines, %d bytes) is more than the input holds (%d rows as they wrap on screen). Save it as a file in the workspace and ask the agent to read it.", strings.Count(msg.Content, "\n")+1, len(msg.Content), m.composer.MaxContentHeight))
		}
		if m.picker != nil {
			m.restoreTyped = true
		}
		m.layout()
		return cmd
	case startNoticesMsg:
		if len(m.entries) == 0 {
			// On the welcome screen; they join the transcript with the
			// first entry.
			m.welcomeNotes = append(m.welcomeNotes, msg.notices...)
			return nil
		}
		for _, n := range msg.notices {
			m.addNotice("warning: " + n)
		}
		return nil
	case updateMsg:
		if msg.info.SessionID != "" {
			m.info = msg.info
			m.noteNotices()
		}
		m.handleUpdate(msg.u)
		if m.turn != nil {
			return waitStream(m.turn.stream)
		}
		return nil
	case infoMsg:
		if m.turn == nil || msg.gen != m.turnGen {
			return nil
		}
		if msg.info.SessionID != "" {
			m.info = msg.info
			m.noteNotices()
		}
		return m.pollInfo()
	case diffDoneMsg:
		if m.pager == nil || !m.pager.loading {
			return nil
		}
		m.pager.loading = false
		if msg.err != nil {
			m.pager.err = describeErr(msg.err)
			return nil
		}
		m.pager.lines = m.diffLines(msg.diff)
		return nil
	case turnDoneMsg:
		return m.handleTurnDone(msg)
	case execDoneMsg:
		return m.handleExecDone(msg)
	}
	return nil
}

// scrollBy scrolls whatever view is in front by delta lines (positive:
// towards the end).
func (m *model) scrollBy(delta int) {
	switch {
	case m.pager != nil:
		m.pager.scroll = max(0, m.pager.scroll+delta)
		m.pagerBody(m.width, m.transcriptHeight())
	case m.picker != nil && m.picker.stage == stageConfirm:
		m.scrollPicker(delta)
	case m.picker != nil:
		m.picker.move(delta / 3)
	default:
		m.scroll = max(0, m.scroll-delta)
	}
}

// pollInfo refreshes the status bar while a turn runs: its checkpoint
// appears and the redo slot clears as soon as the turn starts.
func (m *model) pollInfo() tea.Cmd {
	if m.pollEvery <= 0 || m.turn == nil {
		return nil
	}
	s, quit, gen := m.sess, m.calls.quit, m.turnGen
	return tea.Tick(m.pollEvery, func(time.Time) tea.Msg {
		select {
		case <-quit:
			return nil
		default:
		}
		return infoMsg{info: s.Info(), gen: gen}
	})
}

// typeIntoComposer sends a key to the composer.
func (m *model) typeIntoComposer(k tea.KeyPressMsg) tea.Cmd {
	var cmd tea.Cmd
	m.composer, cmd = m.composer.Update(k)
	m.layout()
	return cmd
}

// settleTyping handles typing right after a restore put a prompt back:
// the typing is a new prompt, so the restored one moves to the history.
func (m *model) settleTyping(inserts bool) {
	if m.restored == "" {
		return
	}
	if !m.now().Before(m.settleUntil) || m.composer.Value() != m.restored {
		m.restored = ""
		return
	}
	if !inserts {
		return
	}
	m.hist.add(m.restored)
	m.composer.Reset()
	m.restored = ""
	m.addNotice("You were typing as the restore finished: the restored prompt is in the input history (↑ brings it back), not mixed with what you typed.")
}

// handleKey routes a key press: global keys first, then the view in
// front (pager, picker) or the composer.
func (m *model) handleKey(k tea.KeyPressMsg) tea.Cmd {
	ks := k.String()
	if ks != "ctrl+c" {
		m.quitArmed = false
	}
	if ks == "ctrl+c" {
		return m.handleCtrlC()
	}
	if m.pager != nil {
		return m.pagerKey(ks)
	}
	if m.picker != nil {
		return m.pickerKey(k)
	}
	switch ks {
	case "ctrl+o":
		m.expandTools = !m.expandTools
		return nil
	case "pgup":
		m.scroll += m.transcriptHeight() - 1
		return m.askEarlier()
	case "pgdown":
		m.scroll = max(0, m.scroll-(m.transcriptHeight()-1))
		return nil
	case "shift+up":
		m.scroll++
		return m.askEarlier()
	case "shift+down":
		m.scroll = max(0, m.scroll-1)
		return nil
	case "esc", "alt+esc":
		return m.handleEsc(ks == "alt+esc")
	case "enter":
		if m.now().Before(m.settleUntil) {
			// An Enter this close to a restore was typed ahead while it
			// was applied: it must not send the restored prompt or what
			// was typed with it.
			return nil
		}
		m.restored = ""
		return m.submit()
	case "tab", "shift+tab":
		m.complete(ks == "shift+tab")
		return nil
	case "up", "down":
		if m.completing() {
			m.cycleCompletion(map[string]int{"up": -1, "down": 1}[ks])
			return nil
		}
		if m.historyKey(ks) {
			return nil
		}
	}
	m.lastEsc = time.Time{}
	m.compSel, m.compBase = -1, ""
	m.settleTyping(k.Text != "")
	if k.Text != "" {
		m.hist.reset()
	}
	return m.typeIntoComposer(k)
}

// pagerKey scrolls or closes the pager.
func (m *model) pagerKey(ks string) tea.Cmd {
	page := max(1, m.transcriptHeight()-3)
	switch ks {
	case "esc", "q", "enter":
		m.pager = nil
		return nil
	case "up", "k":
		m.scrollBy(-1)
	case "down", "j":
		m.scrollBy(1)
	case "pgup":
		m.scrollBy(-page)
	case "pgdown", "space":
		m.scrollBy(page)
	case "home":
		m.scrollBy(-1 << 30)
	case "end":
		m.scrollBy(1 << 30)
	}
	return nil
}

// historyKey walks the input history with ↑ on the composer's first line
// and ↓ on its last.
func (m *model) historyKey(ks string) bool {
	var text string
	var ok bool
	switch {
	case ks == "up" && m.composer.Line() == 0:
		text, ok = m.hist.prev(m.composer.Value())
	case ks == "down" && m.composer.Line() == m.composer.LineCount()-1:
		text, ok = m.hist.next()
	}
	if !ok {
		return false
	}
	m.composer.SetValue(text)
	m.composer.MoveToEnd()
	m.layout()
	return true
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
	case m.pager != nil:
		m.pager = nil
		return nil
	case m.picker != nil && m.picker.confirming:
		// The restore is being applied; it is not interrupted.
		return nil
	case m.picker != nil:
		if m.picker.apply != nil || m.picker.applyRefused {
			m.addNotice("apply cancelled: nothing was written")
		}
		m.picker = nil
		m.quitArmed = false
		return nil
	case m.quitArmed:
		return tea.Quit
	}
	m.quitArmed = true
	if v := m.composer.Value(); v != "" {
		// Cleared, not lost: ↑ brings it back.
		m.hist.add(v)
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
	m.hist.add(text)
	m.composer.Reset()
	m.compSel, m.compBase = -1, ""
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
	m.turnGen++
	// A new turn clears the redo slot: earlier restore notices stop
	// offering /redo.
	m.fadeRedoHints(false)
	for _, n := range m.welcomeNotes {
		m.addNotice("warning: " + n)
	}
	m.welcomeNotes = nil
	m.addEntry(entry{kind: kindUser, text: text})
	return tea.Batch(promptCmd(ctx, m.sess, m.calls, st, text), waitStream(st), m.pollInfo())
}

// runCommand handles the display-only commands here and sends the rest to
// the session.
func (m *model) runCommand(cmd command.Command) tea.Cmd {
	switch cmd.Name {
	case "quit":
		return tea.Quit
	case "resume":
		if m.turn != nil || m.execBusy {
			m.addError("/resume: wait for the running turn or command to end (Ctrl+C cancels a turn), then try again")
			return nil
		}
		m.resume = true
		return tea.Quit
	case "clear":
		m.entries = nil
		m.scroll = 0
		return nil
	case "help":
		m.pager = helpPager(m.info)
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
	case agent.UpdateToolStart, agent.UpdateToolEnd, agent.UpdateSetup:
		// The worktree's setup command is shown as a command.
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
	case agent.UpdateWarning:
		m.addNotice("warning: " + u.Text)
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
		m.noteNotices()
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
	for _, w := range res.Warnings {
		m.addError("warning: " + w)
	}
	if res.Pending != nil {
		m.addNotice("the model asked for a restore: review the preview and confirm it, or press Esc to cancel")
		m.picker = &picker{}
		m.picker.setPreview(res.Pending, m.now())
	}
	return nil
}

func (m *model) handleExecDone(msg execDoneMsg) tea.Cmd {
	m.execBusy = false
	if msg.info.SessionID != "" {
		m.info = msg.info
		m.noteNotices()
	}
	if m.picker != nil {
		m.picker.loading = false
		m.picker.confirming = false
	}
	if msg.cmd.Confirm && msg.err != nil {
		m.unstash()
	}
	if msg.err != nil {
		text := describeErr(msg.err)
		if m.picker != nil {
			m.picker.err = text
			if msg.cmd.Confirm {
				// The token is spent or refused; Enter previews again.
				m.picker.refused, m.picker.preview = m.picker.preview, nil
				if m.picker.apply != nil {
					m.picker.apply, m.picker.applyRefused = nil, true
				}
			}
			m.picker.scroll = 1 << 30 // the error is at the end
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
		m.picker.setPreview(res.Preview, m.now())
		m.picker.request = msg.cmd
		m.picker.err, m.picker.refused = "", nil
	case command.ResultRestored:
		m.picker = nil
		m.applyRestore(res.Restored, msg)
	case command.ResultApplyPreview:
		c, err := command.Parse(res.Confirm)
		if res.Body == "" || err != nil {
			m.picker = nil
			m.addEntry(entry{kind: kindInfo, text: res.Text})
			return nil
		}
		// Confirmed like a restore: the preview shows, y confirms.
		if m.picker == nil {
			m.picker = &picker{}
		}
		m.picker.setApply(&applyPreview{body: res.Body, what: res.ConfirmWhat, confirm: c}, m.now())
		m.picker.request = msg.cmd
		m.picker.err = ""
		m.clampPicker()
	case command.ResultApplied:
		m.picker = nil
		m.unstash()
		m.addEntry(entry{kind: kindInfo, text: res.Text})
	case command.ResultDiff:
		m.unstash()
		m.pager = &pager{title: "/diff: the session's work", lines: m.patchLines(res.Text)}
	default:
		m.unstash()
		text := res.Text
		if text == "" {
			text = "/" + msg.cmd.Name + ": done"
		}
		m.addEntry(entry{kind: kindInfo, text: text})
	}
	return nil
}

// unstash gives back a draft put aside for a restore that did not happen:
// to the composer when it is empty, else to the history.
func (m *model) unstash() {
	d := m.stash
	m.stash = ""
	if d == "" {
		return
	}
	if m.composer.Value() == "" {
		m.composer.SetValue(d)
		m.composer.MoveToEnd()
		m.layout()
		return
	}
	m.hist.add(d)
	m.addNotice("Your earlier draft is in the input history (↑ brings it back).")
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
		notice = fmt.Sprintf("Restored %s (%s): %s changed.", r.Target, r.Mode.Short(), plural(r.PathsChanged, "path", "paths"))
	}
	if msg.hadTranscript {
		m.entries = entriesFromItems(msg.transcript)
		m.transcriptGen++
		m.scroll = 0
	}
	if n := len(m.entries); n == 0 || m.entries[n-1].kind != kindNotice || m.entries[n-1].text != notice {
		m.addNotice(notice)
	}
	m.fadeRedoHints(true)
	m.settleUntil = m.now().Add(settle)
	if r.Warning != "" {
		m.addError(r.Warning)
	}
	// Nothing the user wrote is replaced: a draft from before the restore
	// goes to the history; text typed while it was applied stays in the
	// composer and the restored prompt goes to the history instead.
	draft := m.stash
	m.stash = ""
	typed := m.composer.Value()
	if draft != "" {
		m.hist.add(draft)
	}
	if r.Prompt != "" {
		if typed != "" {
			m.hist.add(r.Prompt)
		} else {
			m.composer.SetValue(r.Prompt)
			m.composer.MoveToEnd()
			m.restored = m.composer.Value()
			m.layout()
		}
	}
	switch {
	case draft != "" && r.Prompt != "" && typed != "":
		m.addNotice("Your draft and " + r.Target + "'s prompt are in the input history (↑ brings them back); the composer keeps what you typed during the restore.")
	case r.Prompt != "" && typed != "":
		m.addNotice(r.Target + "'s prompt is in the input history (↑ brings it back); the composer keeps what you typed during the restore.")
	case draft != "" && r.Prompt != "":
		m.addNotice("Your draft is in the input history (↑ brings it back); the composer holds " + r.Target + "'s prompt.")
	case draft != "":
		if typed == "" {
			m.composer.SetValue(draft)
			m.composer.MoveToEnd()
			m.layout()
		} else {
			m.addNotice("Your draft is in the input history (↑ brings it back).")
		}
	}
}

// fadeRedoHints drops the /redo hint from restore notices it no longer
// holds for: every one once a turn started, all but the newest (while
// /redo is available and no prompt followed it) otherwise.
func (m *model) fadeRedoHints(keepLatest bool) {
	last := -1
	if keepLatest && m.info.RedoAvailable {
		for i := len(m.entries) - 1; i >= 0; i-- {
			if m.entries[i].kind == kindUser {
				break
			}
			if m.entries[i].kind == kindNotice && strings.Contains(m.entries[i].text, checkpoint.RedoHint) {
				last = i
				break
			}
		}
	}
	for i := range m.entries {
		e := &m.entries[i]
		if i != last && e.kind == kindNotice && strings.Contains(e.text, checkpoint.RedoHint) {
			e.text = strings.TrimSpace(strings.Replace(e.text, checkpoint.RedoHint, "", 1))
		}
	}
}

// complete implements Tab completion of a command name: a single match
// is completed, several extend to their longest common prefix first, then
// Tab (Shift+Tab backwards) cycles the highlighted match.
func (m *model) complete(back bool) {
	if m.compBase == "" {
		matches := matchCommands(m.composer.Value())
		if len(matches) == 0 {
			return
		}
		typed := strings.TrimPrefix(m.composer.Value(), "/")
		if p := commonPrefix(matches); len(matches) == 1 || len(p) > len(typed) {
			m.composer.SetValue("/" + p + suffixIfUnique(matches))
			m.composer.MoveToEnd()
			return
		}
	}
	d := 1
	if back {
		d = -1
	}
	m.cycleCompletion(d)
}

// completing reports whether the completion list is showing.
func (m *model) completing() bool { return len(m.completions()) > 0 }

// cycleCompletion moves the highlight by d and puts the highlighted
// command in the composer; what was typed stays the list's filter.
func (m *model) cycleCompletion(d int) {
	if m.compBase == "" {
		m.compBase = m.composer.Value()
		m.compSel = -1
	}
	matches := matchCommands(m.compBase)
	if len(matches) == 0 {
		return
	}
	n := len(matches)
	if m.compSel < 0 && d < 0 {
		m.compSel = n - 1
	} else {
		m.compSel = (m.compSel + d + n) % n
	}
	m.composer.SetValue("/" + matches[m.compSel].Name)
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
// holds only "/name" (no argument yet); while cycling, the matches of what
// was typed before.
func (m *model) completions() []command.Descriptor {
	if m.compBase != "" {
		return matchCommands(m.compBase)
	}
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
	// Say each thing once: the session's message already says what to do;
	// only the key to press here is added or swapped in.
	msg := command.ErrorText(err)
	switch checkpoint.CodeOf(err) {
	case checkpoint.CodeWriterActive:
		if !strings.Contains(msg, "/tasks") {
			msg += " — stop it first (/tasks lists running tasks, /tasks stop <id> stops one), then try again"
		}
		return msg
	case checkpoint.CodeStalePreview, checkpoint.CodeConversationMove:
		for _, again := range []string{"; run the preview again", ", run the preview again", "; run a new preview"} {
			if i := strings.Index(msg, again); i >= 0 {
				msg = msg[:i]
			}
		}
		return msg + "; press Enter for a fresh preview"
	case checkpoint.CodeTurnRunning:
		if !strings.Contains(msg, "Ctrl+C") && !strings.Contains(msg, "wait for") {
			msg += " — wait for the turn or press Ctrl+C to cancel it"
		}
		return msg
	}
	if errors.Is(err, context.Canceled) {
		return "cancelled"
	}
	return command.ErrorText(err)
}

func helpText(info app.Info) string {
	var b strings.Builder
	if info.Branch != "" {
		fmt.Fprintf(&b, "This session's files are in %s (branch %s).\nBring them home: /diff to see them, /apply to merge them into your checkout, /commit to commit them on the branch\n(from a shell: %s).\n\n", info.ActiveRoot, info.Branch, land.WaysHome(info.SessionID))
	}
	b.WriteString("Commands:\n")
	for _, d := range command.For(command.HostTUI) {
		line := "/" + d.Name
		if d.Hint != "" {
			line += " " + d.Hint
		}
		fmt.Fprintf(&b, "  %s\n      %s\n", line, d.Description)
	}
	b.WriteString("Keys:\n")
	for _, k := range [][2]string{
		{"Enter", "send the prompt or command"},
		{"Alt+Enter, Ctrl+J", "new line in the prompt"},
		{"Tab, ↑/↓ after /", "complete a command; cycle the highlighted one"},
		{"↑/↓", "earlier prompts and drafts (input history)"},
		{"Esc Esc", "rewind: pick a checkpoint, read the preview, y confirms"},
		{"PgUp/PgDn, wheel", "scroll the transcript (Shift+↑/↓ by a line)"},
		{"Ctrl+O", "expand every tool's output in the transcript; again: collapse to the first line"},
		{"Ctrl+C", "cancel the turn; twice when idle: quit"},
	} {
		fmt.Fprintf(&b, "  %s\n      %s\n", k[0], k[1])
	}
	return strings.TrimRight(b.String(), "\n")
}

// noteNotices shows each of the session's setup notices (an MCP server
// that did not start) once, when it first appears.
func (m *model) noteNotices() {
	for _, n := range m.info.Notices {
		if m.shownNotices[n] {
			continue
		}
		if m.shownNotices == nil {
			m.shownNotices = map[string]bool{}
		}
		m.shownNotices[n] = true
		m.entries = append(m.entries, entry{kind: kindNotice, text: n})
	}
}

// minRows is the fewest rows s can take in an input width cells wide: a
// row for each line, and as many as its cells need (wrapping at words only
// adds rows).
func minRows(s string, width int) int {
	width = max(1, width)
	rows := 0
	for line := range strings.SplitSeq(s, "\n") {
		rows += max(1, (ansi.StringWidth(line)+width-1)/width)
	}
	return rows
}
