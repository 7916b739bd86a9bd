package tui

import (
	"fmt"
	"github.com/yolop-dev/yolop/internal/app"
	"slices"
	"strings"

	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/yolop-dev/yolop/internal/agent"
)

type entryKind int

const (
	kindUser entryKind = iota
	kindAssistant
	kindReasoning
	kindTool
	kindNotice
	kindError
	kindInfo // command output: help, tasks, compaction
)

// entry is one block of the transcript.
type entry struct {
	kind entryKind
	text string
	tool *agent.ToolInfo
	open bool // still receiving streamed deltas
}

func entriesFromItems(items []agent.Item) []entry {
	out := make([]entry, 0, len(items))
	for _, it := range items {
		e := entry{text: it.Text, tool: it.Tool}
		switch it.Kind {
		case agent.ItemUser:
			e.kind = kindUser
		case agent.ItemAssistant:
			e.kind = kindAssistant
		case agent.ItemReasoning:
			e.kind = kindReasoning
		case agent.ItemTool:
			if it.Tool == nil {
				continue
			}
			e.kind = kindTool
		case agent.ItemError:
			e.kind = kindError
		default:
			e.kind = kindNotice
		}
		out = append(out, e)
	}
	return out
}

type styles struct {
	user, assistant, reasoning, notice, err, warn, dim, title, selected, status, ok lipgloss.Style
}

func newStyles(noColor bool) styles {
	p := lipgloss.NewStyle()
	if noColor {
		return styles{
			user: p.Bold(true), assistant: p, reasoning: p.Italic(true), notice: p, err: p.Bold(true),
			warn: p.Bold(true), dim: p, title: p.Bold(true), selected: p.Reverse(true), status: p.Reverse(true), ok: p,
		}
	}
	return styles{
		user:      p.Bold(true).Foreground(lipgloss.Color("12")),
		assistant: p,
		reasoning: p.Italic(true).Foreground(lipgloss.Color("8")),
		notice:    p.Foreground(lipgloss.Color("3")),
		err:       p.Bold(true).Foreground(lipgloss.Color("9")),
		warn:      p.Foreground(lipgloss.Color("11")),
		dim:       p.Foreground(lipgloss.Color("8")),
		title:     p.Bold(true).Foreground(lipgloss.Color("14")),
		selected:  p.Reverse(true),
		status:    p.Background(lipgloss.Color("236")).Foreground(lipgloss.Color("252")),
		ok:        p.Foreground(lipgloss.Color("10")),
	}
}

func composerStyles(noColor bool) textarea.Styles {
	s := textarea.DefaultDarkStyles()
	plain := lipgloss.NewStyle()
	for _, st := range []*textarea.StyleState{&s.Focused, &s.Blurred} {
		st.CursorLine = plain
		st.Text = plain
		st.EndOfBuffer = plain
		if noColor {
			st.Placeholder = plain
			st.Prompt = plain
		}
	}
	return s
}

// layout sizes the composer for the current width.
func (m *model) layout() {
	m.composer.SetWidth(max(10, m.width))
}

func (m *model) tooSmall() bool { return m.width < minWidth || m.height < minHeight }

// bottomLines is everything below the transcript: completion, separator,
// composer, status and hint lines.
func (m *model) bottomHeight() int {
	return len(m.completionLines()) + 1 + m.composer.Height() + 2
}

func (m *model) transcriptHeight() int {
	return max(1, m.height-m.bottomHeight())
}

func (m *model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = "yolop"
	// The wheel scrolls the transcript, the preview and the pagers.
	v.MouseMode = tea.MouseModeCellMotion
	if !m.tooSmall() && m.picker == nil && m.pager == nil {
		if c := m.composer.Cursor(); c != nil {
			c.Position.Y += m.transcriptHeight() + len(m.completionLines()) + 1
			v.Cursor = c
		}
	}
	return v
}

// render draws the whole screen as text; View wraps it for the terminal
// and the golden tests read it directly.
func (m *model) render() string {
	if m.tooSmall() {
		msg := fmt.Sprintf("terminal too small (%dx%d): yolop needs at least %dx%d; enlarge the window", m.width, m.height, minWidth, minHeight)
		return ansi.Wrap(msg, max(1, m.width), "")
	}
	w := m.width
	th := m.transcriptHeight()
	var body []string
	switch {
	case m.pager != nil:
		body = m.pagerBody(w, th)
	case m.picker != nil:
		body = m.pickerBody(w, th)
	case len(m.entries) == 0:
		body = m.welcomeLines(w, th)
	default:
		// Only the newest entries that reach the visible window are
		// wrapped (a long session has thousands); older ones are counted
		// only while they are few.
		all, more := m.transcriptTail(w, m.scroll+th+transcriptSlack)
		maxScroll := max(0, len(all)-th)
		if more {
			maxScroll = m.scroll + 1 // PgUp keeps going: more is drawn as it is needed
		}
		m.scroll = min(m.scroll, maxScroll)
		end := len(all) - m.scroll
		start := max(0, end-th)
		body = append([]string(nil), all[start:end]...)
		if (start > 0 || more) && len(body) > 1 {
			above := fmt.Sprintf("↑ %s more above (PgUp)", plural(start+1, "line", "lines"))
			if more {
				above = fmt.Sprintf("↑ more than %s above (PgUp)", plural(start+1, "line", "lines"))
			}
			body[0] = m.st.dim.Render(ansi.Truncate(above, w, "…"))
		}
	}
	lines := make([]string, 0, m.height)
	lines = append(lines, body...)
	for len(lines) < th {
		lines = append(lines, "")
	}
	lines = append(lines, m.completionLines()...)
	sep := strings.Repeat("─", w)
	if m.scroll > 0 && m.picker == nil && m.pager == nil {
		sep = ansi.Truncate(fmt.Sprintf("── … %d more below (PgDn) ", m.scroll)+sep, w, "")
	}
	lines = append(lines, m.st.dim.Render(sep))
	lines = append(lines, strings.Split(m.composer.View(), "\n")...)
	lines = append(lines, m.statusLine(w), m.hintLine(w))
	return strings.Join(lines, "\n")
}

func wrapLines(in []string, w int) []string {
	var out []string
	for _, l := range in {
		out = append(out, strings.Split(ansi.Wrap(l, w, ""), "\n")...)
	}
	return out
}

// transcriptSlack is how many lines beyond the visible ones are wrapped
// to count what is above exactly.
const transcriptSlack = 2000

// transcriptTail renders the newest entries wrapped to width w until it
// has at least want lines; more says older entries were left out.
func (m *model) transcriptTail(w, want int) (lines []string, more bool) {
	var parts [][]string
	n := 0
	i := len(m.entries) - 1
	for ; i >= 0 && n < want; i-- {
		l := m.entryLines(m.entries[i], w)
		if i > 0 {
			l = append([]string{""}, l...)
		}
		parts = append(parts, l)
		n += len(l)
	}
	lines = make([]string, 0, n)
	for j := len(parts) - 1; j >= 0; j-- {
		lines = append(lines, parts[j]...)
	}
	return lines, i >= 0
}

// indent wraps text to width w with the first line prefixed by first and
// the following ones by rest (both of the same display width).
func indent(text string, w int, first, rest string, style lipgloss.Style) []string {
	inner := max(1, w-ansi.StringWidth(first))
	wrapped := strings.Split(ansi.Wrap(strings.TrimRight(text, "\n"), inner, ""), "\n")
	out := make([]string, len(wrapped))
	for i, l := range wrapped {
		p := rest
		if i == 0 {
			p = first
		}
		out[i] = p + style.Render(l)
	}
	return out
}

func (m *model) entryLines(e entry, w int) []string {
	st := m.st
	switch e.kind {
	case kindUser:
		return indent(e.text, w, st.user.Render("› "), "  ", st.user)
	case kindAssistant:
		return indent(e.text, w, "  ", "  ", st.assistant)
	case kindReasoning:
		return indent("thinking: "+e.text, w, "  ", "  ", st.reasoning)
	case kindTool:
		return m.toolLines(e.tool, w)
	case kindNotice:
		return indent(e.text, w, st.notice.Render("※ "), "  ", st.notice)
	case kindError:
		return indent(e.text, w, st.err.Render("✗ "), "  ", st.err)
	default:
		return indent(e.text, w, "  ", "  ", st.assistant)
	}
}

// toolLines shows a tool call with its status and a compact result: the
// first line and how many more there are.
func (m *model) toolLines(t *agent.ToolInfo, w int) []string {
	st := m.st
	mark, style := "…", st.dim
	switch t.Status {
	case "completed":
		mark, style = "✓", st.ok
		if t.IsError {
			mark, style = "✗", st.err
		}
	case "failed":
		mark, style = "✗", st.err
	case "refused":
		mark, style = "⊘", st.err
	}
	title := t.Title
	if title == "" {
		title = t.Name
		if t.Path != "" {
			title += " " + t.Path
		}
	}
	status, statusStyle := t.Status, st.dim
	switch status {
	case "":
		status = "pending"
	case "refused":
		status, statusStyle = "refused by the sandbox", st.err
	}
	head := ansi.Truncate(title, max(1, w-4-len(status)-2), "…")
	out := []string{"  " + style.Render(mark) + " " + head + statusStyle.Render("  "+status)}
	if t.Refused != "" {
		// What was refused comes first: the command's own output
		// (often just "exit code: 0") would hide it.
		out = append(out, "    "+st.err.Render("⎿ ")+st.err.Render(ansi.Truncate(t.Refused, max(1, w-6), "…")))
	}
	if res := strings.TrimRight(t.Result, " \t\n"); strings.TrimSpace(res) != "" && t.Status != "in_progress" && t.Status != "pending" {
		rs := st.dim
		if t.IsError || t.Status == "failed" {
			rs = st.err
		}
		lead := "    " + rs.Render("⎿ ")
		if t.Refused != "" {
			lead = "      " // under the refusal's ⎿
		}
		lines := strings.Split(strings.TrimLeft(res, "\n"), "\n")
		if m.expandTools && len(lines) > 1 {
			// The whole output, every line cut to the width (Ctrl+O
			// collapses it again).
			for i, l := range lines {
				p := "      "
				if i == 0 {
					p = lead
				}
				out = append(out, p+ansi.Truncate(strings.ReplaceAll(l, "\t", "    "), max(1, w-6), "…"))
			}
			return out
		}
		first := strings.TrimSpace(lines[0])
		switch rest := lines[1:]; {
		case len(rest) == 1 && ansi.StringWidth(strings.TrimSpace(rest[0])) <= 40:
			// One short line more ("(no output)") is shown, not counted.
			first += " · " + strings.TrimSpace(rest[0])
		case len(rest) > 0:
			more := " (+" + plural(len(rest), "line", "lines") + ", Ctrl+O shows them)"
			first = ansi.Truncate(first, max(1, w-6-ansi.StringWidth(more)), "…") + st.dim.Render(more)
		}
		out = append(out, lead+ansi.Truncate(first, max(1, w-6), "…"))
	}
	return out
}

// collapsible reports whether a tool row of the transcript has output
// lines that only Ctrl+O shows.
func (m *model) collapsible() bool {
	for _, e := range m.entries {
		if e.kind == kindTool && e.tool != nil && strings.Contains(strings.Trim(e.tool.Result, " \t\n"), "\n") {
			return true
		}
	}
	return false
}

// completionLines lists commands matching what is typed after "/", the
// highlighted one marked; at most a third of the screen.
func (m *model) completionLines() []string {
	if m.picker != nil || m.pager != nil {
		return nil
	}
	v := m.composer.Value()
	if m.compBase == "" && (!strings.HasPrefix(v, "/") || strings.ContainsAny(v, " \t\n")) {
		return nil
	}
	matches := m.completions()
	if len(matches) == 0 {
		return []string{m.st.err.Render(ansi.Truncate(fmt.Sprintf("no command matches %s: /help lists them", v), m.width, "…"))}
	}
	room := max(1, m.height/3)
	start := 0
	if m.compSel >= room {
		start = m.compSel - room + 1
	}
	var out []string
	for i := start; i < len(matches) && len(out) < room; i++ {
		d := matches[i]
		name := "/" + d.Name
		if d.Hint != "" {
			name += " " + d.Hint
		}
		cur := "  "
		if i == m.compSel {
			cur = "› "
		}
		line := ansi.Truncate(cur+name+"  "+d.Description, m.width, "…")
		if i == m.compSel {
			line = m.st.selected.Render(line)
		} else {
			line = ansi.Truncate(cur+name+"  "+m.st.dim.Render(d.Description), m.width, "…")
		}
		out = append(out, line)
	}
	if hidden := len(matches) - start - len(out); hidden > 0 && len(out) > 0 {
		out[len(out)-1] = m.st.dim.Render(ansi.Truncate(fmt.Sprintf("  … %d more (Tab/↓)", hidden), m.width, "…"))
	}
	return out
}

// statusLine: session, worktree branch, provider/model, checkpoints, redo.
// When it does not fit, the session id is shortened first, then the
// branch and the model go; the provider, the checkpoint count and redo
// stay.
func (m *model) statusLine(w int) string {
	in := m.info
	var where string
	switch {
	case in.WorkspaceMode == "in-place":
		where = "in place"
	case in.Branch != "":
		where = in.Branch
	case in.Workspace:
		// A new session makes its worktree with the first prompt.
		where = "worktree at first prompt"
	default:
		where = "no worktree"
	}
	tail := []string{plural(in.Checkpoints, "checkpoint", "checkpoints")}
	if in.RedoAvailable {
		tail = append(tail, "redo available")
	}
	if !in.Workspace {
		tail = append(tail, "conversation only")
	}
	if in.ReadOnly {
		tail = append(tail, "read-only")
	}
	pm := in.Provider
	if in.Model != "" {
		pm += "/" + in.Model
	}
	usage := usageLabel(in)
	build := func(id, where, pm, usage string) string {
		parts := []string{}
		for _, p := range []string{id, where, pm} {
			if p != "" {
				parts = append(parts, p)
			}
		}
		parts = append(parts, tail...)
		if usage != "" {
			parts = append(parts, usage)
		}
		return " " + strings.Join(parts, " │ ")
	}
	short := shortID(in.SessionID)
	var line string
	for _, try := range [][4]string{
		{in.SessionID, where, pm, usage},
		{short, where, pm, usage},
		{short, "", pm, usage},
		{short, "", in.Provider, usage},
		{short, "", in.Provider, ""},
		{"", "", in.Provider, ""},
	} {
		line = build(try[0], try[1], try[2], try[3])
		if ansi.StringWidth(line) <= w {
			break
		}
	}
	line = ansi.Truncate(line, w, "…")
	if pad := w - ansi.StringWidth(line); pad > 0 {
		line += strings.Repeat(" ", pad)
	}
	return m.st.status.Render(line)
}

// usageLabel is the session's token use for the status bar: the context's
// fill when the model's window is known, and the tokens spent.
func usageLabel(in app.Info) string {
	spent := in.Usage.InputTokens + in.Usage.OutputTokens + in.Usage.CacheReadTokens + in.Usage.CacheWriteTokens
	if spent == 0 {
		return ""
	}
	s := compactCount(spent) + " tokens"
	if in.ContextWindow > 0 && in.ContextTokens > 0 {
		s = fmt.Sprintf("context %d%% · %s", in.ContextTokens*100/in.ContextWindow, s)
	}
	return s
}

// compactCount writes 950, 12.3k, 1.2M.
func compactCount(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1000), ".0") + "k"
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1_000_000), ".0") + "M"
}

// shortID keeps a session id's prefix and its last characters, enough to
// tell sessions apart ("s_…k2m3m8").
func shortID(id string) string {
	if len(id) <= 10 {
		return id
	}
	return id[:2] + "…" + id[len(id)-6:]
}

func (m *model) hintLine(w int) string {
	var h string
	switch {
	case m.turn != nil && m.turn.cancelled:
		h = "cancelling…"
	case m.turn != nil && m.info.Running != "":
		h = "turn " + m.info.Running + " running… Ctrl+C cancels it"
	case m.turn != nil:
		h = "running… Ctrl+C cancels the turn"
	case m.execBusy:
		h = "working…"
	case m.quitArmed:
		h = "press Ctrl+C again to quit"
	case m.pager != nil:
		h = "reading " + strings.ToLower(m.pager.title)
	case m.picker != nil && m.picker.confirming && m.picker.apply != nil:
		h = "applying… typing goes to the composer"
	case m.picker != nil && m.picker.confirming:
		h = "restoring… typing goes to the composer"
	case m.picker != nil && (m.picker.apply != nil || m.picker.applyRefused):
		h = "apply preview"
	case m.picker != nil:
		h = "rewind picker"
	default:
		h = "Enter send · Alt+Enter newline · / commands · Esc Esc rewind · Ctrl+C twice quits"
	}
	if m.pager == nil && m.picker == nil && !m.quitArmed && m.collapsible() {
		// Shown first: the rest of the line is cut on a narrow terminal.
		if m.expandTools {
			h = "Ctrl+O collapse tool output · " + h
		} else {
			h = "Ctrl+O expand tool output · " + h
		}
	}
	return m.st.dim.Render(ansi.Truncate(" "+h, w, "…"))
}

// welcomeLines is the first screen of a session with no transcript yet:
// where it is, where its files live, and the keys that matter.
func (m *model) welcomeLines(w, h int) []string {
	st := m.st
	in := m.info
	type line struct {
		text string
		drop int // lines with a higher number go first on a small screen
	}
	var ls []line
	row := func(label, value string, drop int) {
		ls = append(ls, line{ansi.Truncate(fmt.Sprintf("%-8s %s", label, value), w, "…"), drop})
	}
	ls = append(ls, line{ansi.Truncate(st.title.Render("Welcome to yolop"), w, "…"), 2})
	id := in.SessionID
	if in.Checkpoints == 0 && in.Title == "" {
		id += " (new)"
	}
	row("Session", id, 0)
	switch {
	case in.WorkspaceMode == "in-place":
		row("Branch", "in place: your checkout; a rewind undoes the agent's changes, never yours", 1)
	case in.Branch != "":
		row("Branch", in.Branch, 1)
	case in.Workspace:
		row("Branch", "a worktree of its own at the first prompt", 1)
	default:
		row("Branch", "none: "+orDefault(in.WorkspaceReason, "conversation-only checkpoints"), 1)
	}
	switch {
	case in.Branch == "" && in.Workspace && in.ActiveRoot != "":
		// A new worktree session: the files it works on are not the
		// checkout's, which it never touches.
		ls = append(ls, line{ansi.Truncate(fmt.Sprintf("%-8s %s", "Files", "its own worktree; your checkout "+leftTruncate(in.ActiveRoot, max(8, w-9-45))+" stays as it is"), w, "…"), 0})
	case in.ActiveRoot != "":
		ls = append(ls, line{ansi.Truncate(fmt.Sprintf("%-8s %s", "Files", leftTruncate(in.ActiveRoot, w-9)), w, "…"), 0})
	}
	for _, n := range m.welcomeNotes {
		for _, l := range strings.Split(ansi.Wrap("warning: "+n, max(1, w), ""), "\n") {
			ls = append(ls, line{st.err.Render(l), 0})
		}
	}
	ls = append(ls, line{"", 3})
	for _, k := range [][2]string{
		{"Enter", "send a prompt (a checkpoint first)"},
		{"Esc Esc", "rewind to a checkpoint"},
		{"/help", "commands and keys"},
		{"Ctrl+C", "twice to quit"},
	} {
		ls = append(ls, line{ansi.Truncate(fmt.Sprintf("%-8s %s", k[0], st.dim.Render(k[1])), w, "…"), 0})
	}
	for drop := 3; len(ls) > h && drop > 0; drop-- {
		ls = slices.DeleteFunc(ls, func(l line) bool { return l.drop == drop })
	}
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		out = append(out, l.text)
	}
	if len(out) > h {
		out = out[:h]
	}
	return out
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// leftTruncate keeps the end of a path, which names it best.
func leftTruncate(s string, w int) string {
	if w < 2 || ansi.StringWidth(s) <= w {
		return s
	}
	r := []rune(s)
	for len(r) > 0 && ansi.StringWidth(string(r))+1 > w {
		r = r[1:]
	}
	return "…" + string(r)
}
