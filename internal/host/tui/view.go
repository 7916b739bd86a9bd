package tui

import (
	"fmt"
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
	if !m.tooSmall() && m.picker == nil {
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
	if m.picker != nil {
		body = wrapLines(m.pickerLines(w), w)
		if len(body) > th {
			// Keep the top (title, selection) and the key hints at the bottom.
			body = append(body[:th-1:th-1], body[len(body)-1])
		}
	} else {
		all := m.transcriptLines(w)
		maxScroll := max(0, len(all)-th)
		m.scroll = min(m.scroll, maxScroll)
		end := len(all) - m.scroll
		start := max(0, end-th)
		body = all[start:end]
	}
	lines := make([]string, 0, m.height)
	lines = append(lines, body...)
	for len(lines) < th {
		lines = append(lines, "")
	}
	lines = append(lines, m.completionLines()...)
	sep := strings.Repeat("─", w)
	if m.scroll > 0 && m.picker == nil {
		sep = ansi.Truncate(fmt.Sprintf("── scrolled up %d lines (PgDn) ", m.scroll)+sep, w, "")
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

// transcriptLines renders every entry wrapped to width w.
func (m *model) transcriptLines(w int) []string {
	var out []string
	for i, e := range m.entries {
		if i > 0 {
			out = append(out, "")
		}
		out = append(out, m.entryLines(e, w)...)
	}
	return out
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
	}
	title := t.Title
	if title == "" {
		title = t.Name
		if t.Path != "" {
			title += " " + t.Path
		}
	}
	status := t.Status
	if status == "" {
		status = "pending"
	}
	head := ansi.Truncate(title, max(1, w-4-len(status)-2), "…")
	out := []string{"  " + style.Render(mark) + " " + head + st.dim.Render("  "+status)}
	if res := strings.TrimSpace(t.Result); res != "" && t.Status != "in_progress" && t.Status != "pending" {
		lines := strings.Split(res, "\n")
		first := ansi.Truncate(strings.TrimSpace(lines[0]), max(1, w-6), "…")
		if len(lines) > 1 {
			first += st.dim.Render(fmt.Sprintf(" (+%d lines)", len(lines)-1))
		}
		rs := st.dim
		if t.IsError || t.Status == "failed" {
			rs = st.err
		}
		out = append(out, "    "+rs.Render("⎿ ")+ansi.Truncate(first, max(1, w-6), "…"))
	}
	return out
}

// completionLines lists commands matching what is typed after "/".
func (m *model) completionLines() []string {
	if m.picker != nil {
		return nil
	}
	v := m.composer.Value()
	if !strings.HasPrefix(v, "/") || strings.ContainsAny(v, " \t\n") {
		return nil
	}
	matches := m.completions()
	if len(matches) == 0 {
		return []string{m.st.err.Render(ansi.Truncate(fmt.Sprintf("no command matches %s: /help lists them", v), m.width, "…"))}
	}
	var out []string
	for _, d := range matches {
		name := "/" + d.Name
		if d.Hint != "" {
			name += " " + d.Hint
		}
		line := fmt.Sprintf("  %s  %s", name, m.st.dim.Render(d.Description))
		out = append(out, ansi.Truncate(line, m.width, "…"))
	}
	return out
}

// statusLine: session, worktree branch, provider/model, checkpoints, redo.
func (m *model) statusLine(w int) string {
	in := m.info
	parts := []string{in.SessionID}
	switch {
	case in.Branch != "":
		parts = append(parts, in.Branch)
	case in.Workspace:
		// A new session makes its worktree with the first prompt.
		parts = append(parts, "worktree at first prompt")
	default:
		parts = append(parts, "no worktree")
	}
	pm := in.Provider
	if in.Model != "" {
		pm += "/" + in.Model
	}
	if pm != "" {
		parts = append(parts, pm)
	}
	parts = append(parts, plural(in.Checkpoints, "checkpoint", "checkpoints"))
	if in.RedoAvailable {
		parts = append(parts, "redo available")
	}
	if !in.Workspace {
		parts = append(parts, "conversation-only checkpoints")
	}
	if in.ReadOnly {
		parts = append(parts, "read-only")
	}
	line := " " + strings.Join(parts, " │ ")
	line = ansi.Truncate(line, w, "…")
	if pad := w - ansi.StringWidth(line); pad > 0 {
		line += strings.Repeat(" ", pad)
	}
	return m.st.status.Render(line)
}

func (m *model) hintLine(w int) string {
	var h string
	switch {
	case m.turn != nil && m.turn.cancelled:
		h = "cancelling…"
	case m.turn != nil:
		h = "running… Ctrl+C cancels the turn"
	case m.execBusy:
		h = "working…"
	case m.quitArmed:
		h = "press Ctrl+C again to quit"
	case m.picker != nil:
		h = "rewind picker"
	default:
		h = "Enter send · Alt+Enter newline · / commands · Esc Esc rewind · Ctrl+C twice quits"
	}
	return m.st.dim.Render(ansi.Truncate(" "+h, w, "…"))
}
