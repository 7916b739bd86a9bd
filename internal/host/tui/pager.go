package tui

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/checkpoint"
)

// window cuts lines to h rows starting at off. A cut side gives up a row
// to a marker that says how much is hidden there. It returns the rows, the
// offset after clamping, and whether the last line is visible.
func window(lines []string, h, off int, dim lipgloss.Style) (out []string, clamped int, atEnd bool) {
	if h < 1 {
		h = 1
	}
	n := len(lines)
	if n <= h {
		return lines, 0, true
	}
	// At the end only the top marker shows.
	maxOff := n - (h - 1)
	off = max(0, min(off, maxOff))
	top := 0
	if off > 0 {
		top = 1
	}
	room := h - top
	bottom := off+room < n
	if bottom {
		room--
	}
	room = max(0, room)
	if top == 1 && h == 1 {
		// One row: show the line itself, not a marker.
		top, room = 0, 1
	}
	if top == 1 {
		out = append(out, dim.Render(fmt.Sprintf("↑ %s more above", plural(off, "line", "lines"))))
	}
	out = append(out, lines[off:min(n, off+room)]...)
	if bottom {
		hidden := n - (off + room)
		out = append(out, dim.Render(fmt.Sprintf("… %d more (↓/PgDn)", hidden)))
	}
	return out, off, !bottom
}

// pager is a read-only overlay: help or one file's diff. It scrolls with
// ↑/↓, PgUp/PgDn, Home/End and the mouse wheel; Esc or q closes it.
type pager struct {
	title  string
	lines  []string // unwrapped; styled per line
	scroll int
	// back tells whether closing returns to the rewind preview.
	back bool
	// loading is set while the content is being fetched.
	loading bool
	err     string
}

func helpPager(info app.Info) *pager {
	return &pager{title: "Help", lines: strings.Split(helpText(info), "\n")}
}

// patchLines renders git's unified diff (the session's work, /diff) for
// the pager: file headers bold, hunk lines colored.
func (m *model) patchLines(patch string) []string {
	st := m.st
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(patch, "\n"), "\n") {
		l = visible(l)
		switch {
		case strings.HasPrefix(l, "diff --git "):
			out = append(out, st.title.Render(l))
		case strings.HasPrefix(l, "+++") || strings.HasPrefix(l, "---") || strings.HasPrefix(l, "index "):
			out = append(out, st.dim.Render(l))
		case strings.HasPrefix(l, "@@"):
			out = append(out, st.title.Render(l))
		case strings.HasPrefix(l, "+"):
			out = append(out, st.ok.Render(l))
		case strings.HasPrefix(l, "-"):
			out = append(out, st.err.Render(l))
		default:
			out = append(out, l)
		}
	}
	return out
}

// diffLines renders a path's diff for the pager: a header that says what
// the restore does to the path, then git's patch with hunk lines colored.
func (m *model) diffLines(d *checkpoint.PathDiff) []string {
	st := m.st
	var out []string
	from := "the current files"
	if d.From != "" {
		from += " (kept as " + d.From + ")"
	}
	out = append(out, st.dim.Render(fmt.Sprintf("from %s to %s", from, d.To)))
	switch {
	case d.Unchanged:
		out = append(out, "", "This path is the same in both: the restore leaves it as it is.")
		return out
	case d.Binary:
		out = append(out, "", fmt.Sprintf("Binary file %s: %s → %s; its contents are not shown.", changeLabel(d.Change), size(d.OldSize), size(d.NewSize)))
		return out
	case d.TooLarge:
		out = append(out, "", fmt.Sprintf("File %s: %s → %s; too large to show a diff here.", changeLabel(d.Change), size(d.OldSize), size(d.NewSize)))
		return out
	}
	out = append(out, "")
	patch := strings.TrimSuffix(d.Patch, "\n")
	for _, l := range strings.Split(patch, "\n") {
		// Exact bytes: a carriage return or tab is shown, not acted on.
		l = visible(l)
		if strings.HasPrefix(l, "diff --git ") || strings.HasPrefix(l, "index ") {
			// The title names the path; object ids say nothing here.
			continue
		}
		switch {
		case strings.HasPrefix(l, "+++") || strings.HasPrefix(l, "---"):
			out = append(out, st.dim.Render(l))
		case strings.HasPrefix(l, "@@"):
			out = append(out, st.title.Render(l))
		case strings.HasPrefix(l, "+"):
			out = append(out, st.ok.Render(l))
		case strings.HasPrefix(l, "-"):
			out = append(out, st.err.Render(l))
		default:
			out = append(out, l)
		}
	}
	return out
}

func size(n int64) string {
	if n < 0 {
		return "absent"
	}
	return plural(int(n), "byte", "bytes")
}

// visible shows control characters of a diff line as escapes so the
// terminal does not act on them.
func visible(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\t':
			b.WriteString("    ")
		case r == '\r':
			b.WriteString("␍")
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// pagerBody renders the open pager into h rows of width w.
func (m *model) pagerBody(w, h int) []string {
	pg := m.pager
	st := m.st
	head := []string{ansi.Truncate(st.title.Render(pg.title), w, "…")}
	var content []string
	switch {
	case pg.loading:
		content = []string{st.dim.Render("loading…")}
	case pg.err != "":
		content = indent(pg.err, w, st.err.Render("✗ "), "  ", st.err)
	default:
		content = wrapLines(pg.lines, w)
	}
	back := "Esc close"
	if pg.back {
		back = "Esc back to the preview"
	}
	foot := st.dim.Render(ansi.Truncate("↑/↓ PgUp/PgDn scroll · "+back, w, "…"))
	room := max(1, h-len(head)-1)
	vis, off, _ := window(content, room, pg.scroll, st.dim)
	pg.scroll = off
	out := append(head, vis...)
	for len(out) < h-1 {
		out = append(out, "")
	}
	return append(out, foot)
}
