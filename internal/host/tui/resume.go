package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
)

// ErrResume is returned by Run when the user asked /resume: the caller
// shows the session picker (Pick) and runs the TUI on the chosen session.
var ErrResume = errors.New("tui: pick another session")

// PickRow is one session in the resume picker.
type PickRow struct {
	ID       string
	Title    string
	Repo     string
	LastUsed string
	Turns    int
	// Match says why a search found it (a snippet), "" for a plain listing.
	Match string
}

// PickSource lists the sessions matching a query ("" lists them all, the
// one used last first). It is called from a goroutine, never from Update.
type PickSource func(ctx context.Context, query string) ([]PickRow, error)

// Pick shows the session picker: type to search (titles, ids,
// repositories and everything the sessions hold), Up/Down to choose,
// Enter to open, Esc to quit (or go back to o.Back). o.Note, when not
// empty, is shown above the list until the user types (why the previous
// choice did not open). It returns the chosen id, or "" when the user
// quit.
func Pick(ctx context.Context, src PickSource, o Options) (string, error) {
	m := &pickModel{ctx: ctx, src: src, back: o.Back, note: o.Note}
	opts := []tea.ProgramOption{tea.WithContext(ctx)}
	if o.In != nil {
		opts = append(opts, tea.WithInput(o.In))
	}
	if o.Out != nil {
		opts = append(opts, tea.WithOutput(o.Out))
	}
	if o.NoColor {
		opts = append(opts, tea.WithColorProfile(colorprofile.Ascii))
	}
	if _, err := tea.NewProgram(m, opts...).Run(); err != nil {
		if errors.Is(err, tea.ErrInterrupted) {
			return "", ErrInterrupted
		}
		return "", fmt.Errorf("tui: %w", err)
	}
	return m.chosen, nil
}

type pickModel struct {
	ctx    context.Context
	src    PickSource
	query  string
	rows   []PickRow
	shown  string // query the rows answer
	cursor int
	err    string
	note   string // shown until the user types
	chosen string
	width  int
	height int
	back   string // the session Esc goes back to ("" = Esc quits)
	// drawn is the query whose answer was last drawn: Enter opens only a
	// row the user has seen.
	drawn string
	drew  bool
}

type pickResultMsg struct {
	query string
	rows  []PickRow
	err   error
}

func (m *pickModel) load() tea.Cmd {
	q, src, ctx := m.query, m.src, m.ctx
	return func() tea.Msg {
		rows, err := src(ctx, q)
		return pickResultMsg{query: q, rows: rows, err: err}
	}
}

func (m *pickModel) Init() tea.Cmd { return m.load() }

func (m *pickModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case pickResultMsg:
		if msg.query != m.query {
			return m, nil // an answer to an older query
		}
		m.rows, m.shown, m.err = msg.rows, msg.query, ""
		if msg.err != nil {
			m.err = msg.err.Error()
		}
		m.cursor = min(m.cursor, max(0, len(m.rows)-1))
	case tea.KeyPressMsg:
		return m, m.key(msg)
	}
	return m, nil
}

func (m *pickModel) key(k tea.KeyPressMsg) tea.Cmd {
	switch k.String() {
	case "esc", "ctrl+c":
		m.chosen = ""
		return tea.Quit
	case "enter":
		if m.shown == m.query && m.drew && m.drawn == m.query && m.cursor < len(m.rows) {
			m.chosen = m.rows[m.cursor].ID
			return tea.Quit
		}
		return nil
	case "up", "ctrl+p":
		m.cursor = max(0, m.cursor-1)
		return nil
	case "down", "ctrl+n":
		m.cursor = min(max(0, len(m.rows)-1), m.cursor+1)
		return nil
	case "backspace":
		if m.query == "" {
			return nil
		}
		r := []rune(m.query)
		m.query = string(r[:len(r)-1])
	case "ctrl+u":
		m.query = ""
	default:
		if k.Text == "" {
			return nil
		}
		m.query += k.Text
	}
	m.cursor, m.note = 0, ""
	return m.load()
}

func (m *pickModel) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = "yolop: resume a session"
	return v
}

func (m *pickModel) render() string {
	var b strings.Builder
	esc := "Esc to quit"
	if m.back != "" {
		esc = "Esc to go back to " + m.back
	}
	fmt.Fprintf(&b, "Resume a session — type to search, ↑/↓ to choose, Enter to open, %s\n\n> %s\n\n", esc, m.query)
	if m.note != "" {
		fmt.Fprintf(&b, "  ! %s\n\n", m.note)
	}
	m.drawn, m.drew = m.shown, true
	searching := m.shown != m.query
	if m.err != "" {
		fmt.Fprintf(&b, "  %s\n", m.err)
	}
	if len(m.rows) == 0 && m.err == "" {
		if m.shown == m.query {
			b.WriteString("  no session matches\n")
		} else {
			b.WriteString("  searching…\n")
		}
	}
	limit := len(m.rows)
	if m.height > 8 {
		limit = min(limit, m.height-6)
	}
	start := 0
	if m.cursor >= limit {
		start = m.cursor - limit + 1
	}
	for i := start; i < len(m.rows) && i < start+limit; i++ {
		r := m.rows[i]
		mark := "  "
		if i == m.cursor && !searching {
			mark = "▸ "
		}
		title := r.Title
		if title == "" {
			title = "(untitled)"
		}
		line := fmt.Sprintf("%s%-40s  %-10s  %9s  %s  %s", mark, clip(title, 40), r.LastUsed, plural(r.Turns, "turn", "turns"), r.ID, r.Repo)
		if r.Match != "" {
			line += "\n      " + clip(r.Match, 100)
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
