package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/yolop-dev/yolop/internal/fault"
)

// ErrResume is returned by Run when the user asked /resume: the caller
// shows the session picker (Pick) and runs the TUI on the chosen session.
var ErrResume = fault.Plain("tui: pick another session")

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
	shown := m.rows[min(start, len(m.rows)):min(len(m.rows), start+limit)]
	layout := newPickLayout(shown, m.width)
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
		line := layout.line(mark, title, r)
		if r.Match != "" {
			line += "\n      " + ansi.Truncate(r.Match, max(m.lineWidth()-6, 20), "…")
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// lineWidth is the width rows are laid out for (100 before the terminal
// said its size).
func (m *pickModel) lineWidth() int {
	if m.width <= 0 {
		return 100
	}
	return m.width
}

// pickLayout sizes the columns of the session rows for width columns.
// The repository is what tells sessions with equal titles apart: it gets
// up to 40 columns. The session id is shortened to its end (as in the
// status bar) when the title would get fewer than 20, and the title gives
// way (down to 12 columns, from 40) before a repository is shortened,
// from the left, keeping its last directories.
type pickLayout struct {
	width, titleW int
	shortID       bool
}

func newPickLayout(rows []PickRow, width int) pickLayout {
	if width <= 0 {
		width = 100
	}
	l := pickLayout{width: width}
	repoW := 0
	for _, r := range rows {
		repoW = max(repoW, ansi.StringWidth(r.Repo))
	}
	avail := 0
	for _, r := range rows {
		avail = max(avail, width-ansi.StringWidth(l.fixed(r)))
	}
	repoW = min(repoW, 40) // a longer one is shortened from the left
	if avail-repoW < 20 {
		l.shortID = true
		avail = 0
		for _, r := range rows {
			avail = max(avail, width-ansi.StringWidth(l.fixed(r)))
		}
	}
	l.titleW = min(40, max(avail-repoW, 12))
	return l
}

// fixed is a row's columns between the title and the repository, with
// the mark in front.
func (l pickLayout) fixed(r PickRow) string {
	id := r.ID
	if n := len([]rune(id)); l.shortID && n > 8 {
		id = "…" + string([]rune(id)[n-6:])
	}
	return fmt.Sprintf("▸   %-10s  %9s  %-*s  ", r.LastUsed, plural(r.Turns, "turn", "turns"), ansi.StringWidth(id), id)
}

// line lays out one session row.
func (l pickLayout) line(mark, title string, r PickRow) string {
	t := ansi.Truncate(title, l.titleW, "…")
	t += strings.Repeat(" ", max(0, l.titleW-ansi.StringWidth(t)))
	fixed := l.fixed(r)
	fixed = fixed[len("▸ "):]
	repo := r.Repo
	if room := l.width - ansi.StringWidth(mark) - l.titleW - ansi.StringWidth(fixed); ansi.StringWidth(repo) > room {
		repo = clipLeft(repo, max(room, 8))
	}
	return mark + t + fixed + repo
}

// clipLeft keeps the end of s in n columns, with "…" in front.
func clipLeft(s string, n int) string {
	r := []rune(s)
	for len(r) > 0 && ansi.StringWidth(string(r))+1 > n {
		r = r[1:]
	}
	return "…" + string(r)
}
