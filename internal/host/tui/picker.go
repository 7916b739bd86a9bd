package tui

import (
	"fmt"
	"github.com/yolop-dev/yolop/internal/git"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/command"
)

type pickerStage int

const (
	stageList    pickerStage = iota // choose a checkpoint and a mode
	stageConfirm                    // read the preview, confirm with its token
)

// picker is the rewind picker: a checkpoint list with a mode choice, then a
// preview that is confirmed with its token. It is state only; the root model
// handles its keys.
type picker struct {
	stage  pickerStage
	rows   []checkpoint.Row // newest first, as listed by the session
	cursor int
	mode   int // index into modesFor(selected row)

	// preview is the restore awaiting confirmation; nil after a refused
	// confirmation until previewed again.
	preview *checkpoint.Preview
	// request is the command that produced preview, to preview again.
	request command.Command
	// refused is the preview whose confirmation the session refused; it
	// names what was not applied while the error is shown.
	refused *checkpoint.Preview

	loading bool
	err     string
	// note is a passing hint (why a key did nothing).
	note string

	// scroll is the first content line shown.
	scroll int
	// file is the index into preview.Paths whose diff Enter opens.
	file int
	// shownAt is when the current preview appeared; y is ignored for
	// confirmGrace after it so a key meant for the list cannot confirm.
	shownAt time.Time
	// seenAll is set once every line of the preview was on screen.
	seenAll bool
	// confirming is set while the confirmed restore is being applied.
	confirming bool

	// apply is an /apply preview awaiting y, shown instead of a restore
	// preview (nil for a restore); applyRefused says the session refused
	// its confirmation (Enter previews again).
	apply        *applyPreview
	applyRefused bool
}

// applyPreview is the dry run of an /apply: the session's words without
// the token lines, what y does, and the command that confirms it.
type applyPreview struct {
	body    string
	what    string
	confirm command.Command
}

// setApply shows an /apply preview for confirmation, read from the top.
func (p *picker) setApply(ap *applyPreview, now time.Time) {
	p.stage, p.preview, p.apply, p.applyRefused = stageConfirm, nil, ap, false
	p.scroll, p.file, p.seenAll, p.note = 0, 0, false, ""
	p.shownAt = now
}

// awaiting reports whether a preview (a restore's or an apply's) is shown
// for confirmation.
func (p *picker) awaiting() bool { return p.preview != nil || p.apply != nil }

// confirmGrace is how long y is ignored after a preview appears.
const confirmGrace = 600 * time.Millisecond

// setPreview shows pv for confirmation, read from the top.
func (p *picker) setPreview(pv *checkpoint.Preview, now time.Time) {
	p.stage, p.preview = stageConfirm, pv
	p.scroll, p.file, p.seenAll, p.note = 0, 0, false, ""
	p.shownAt = now
}

func newPicker(rows []checkpoint.Row) *picker {
	return &picker{stage: stageList, rows: rows}
}

// modesFor lists the modes a checkpoint offers, the default first: both
// when its workspace snapshot is complete, conversation only otherwise.
func modesFor(r checkpoint.Row) []checkpoint.Mode {
	if r.Workspace {
		return []checkpoint.Mode{checkpoint.ModeBoth, checkpoint.ModeConversation, checkpoint.ModeWorkspace}
	}
	return []checkpoint.Mode{checkpoint.ModeConversation}
}

func (p *picker) selected() (checkpoint.Row, checkpoint.Mode, bool) {
	if len(p.rows) == 0 {
		return checkpoint.Row{}, "", false
	}
	r := p.rows[p.cursor]
	modes := modesFor(r)
	return r, modes[p.mode%len(modes)], true
}

func (p *picker) move(delta int) {
	if len(p.rows) == 0 {
		return
	}
	p.cursor = (p.cursor + delta + len(p.rows)) % len(p.rows)
	// Each row starts on its default mode; a mode picked for another row
	// may not exist here.
	p.mode = 0
	p.err = ""
}

func (p *picker) cycleMode(delta int) {
	r, _, ok := p.selected()
	if !ok {
		return
	}
	n := len(modesFor(r))
	p.mode = (p.mode + delta + n) % n
	p.err = ""
}

// confirmCommand builds the command that confirms the preview. The
// session's own confirm line is used when present so the target and mode
// match the token exactly.
func confirmCommand(pv *checkpoint.Preview) (command.Command, error) {
	if pv.Command != "" {
		return command.Parse(pv.Command)
	}
	c := command.Command{Name: string(pv.Action), Token: pv.Token, Confirm: true}
	switch pv.Action {
	case checkpoint.ActionRewind, "":
		c.Name, c.Target, c.Mode = "rewind", pv.Target, pv.Mode
	case checkpoint.ActionBranch:
		c.Target, c.Mode = pv.Branch, pv.Mode
	}
	c.Raw = rawCommand(c)
	return c, nil
}

// previewCommand is the command that previews pv again.
func previewCommand(pv *checkpoint.Preview) command.Command {
	c := command.Command{Name: string(pv.Action)}
	switch pv.Action {
	case checkpoint.ActionRewind, "":
		c.Name, c.Target, c.Mode = "rewind", pv.Target, pv.Mode
	case checkpoint.ActionBranch:
		// A branch is named by its id; the preview's target is the id too.
		c.Target, c.Mode = pv.Branch, pv.Mode
	}
	c.Raw = rawCommand(c)
	return c
}

func rawCommand(c command.Command) string {
	parts := []string{"/" + c.Name}
	if c.Target != "" {
		parts = append(parts, c.Target)
	}
	if c.Mode != "" {
		parts = append(parts, string(c.Mode))
	}
	if c.Confirm {
		parts = append(parts, "--confirm", c.Token)
	}
	return strings.Join(parts, " ")
}

// pickerKey handles keys while the picker is open.
func (m *model) pickerKey(k tea.KeyPressMsg) tea.Cmd {
	p := m.picker
	ks := k.String()
	if p.loading {
		if p.confirming {
			// The restore is being applied: typing goes to the composer
			// (it is not merged into the restored prompt), Enter does
			// nothing, so no stray key can send or confirm anything.
			if ks != "enter" && ks != "esc" {
				m.typeIntoComposer(k)
				m.restoreTyped = m.composer.Value() != ""
			}
			return nil
		}
		// One session call at a time; Esc still closes the view.
		if ks == "esc" {
			m.picker = nil
		}
		return nil
	}
	p.note = ""
	switch p.stage {
	case stageList:
		switch ks {
		case "up", "k", "ctrl+p":
			p.move(-1)
		case "down", "j", "ctrl+n":
			p.move(1)
		case "pgup":
			p.move(-max(1, m.transcriptHeight()-4))
		case "pgdown":
			p.move(max(1, m.transcriptHeight()-4))
		case "left", "h", "shift+tab":
			p.cycleMode(-1)
		case "right", "l", "tab":
			p.cycleMode(1)
		case "esc", "q":
			m.picker = nil
		case "enter":
			r, mode, ok := p.selected()
			if !ok {
				return nil
			}
			c := command.Command{Name: "rewind", Target: r.ID, Mode: mode}
			c.Raw = rawCommand(c)
			return m.runCommand(c)
		}
	case stageConfirm:
		page := max(1, m.transcriptHeight()-3)
		if p.apply != nil {
			// y applies once the preview was read; the keys that read
			// it scroll; any other key cancels, as nothing was written.
			switch {
			case ks == "y" || ks == "Y":
				return m.confirmPreview()
			case m.scrollKey(ks, page):
			default:
				m.picker = nil
				m.addNotice("apply cancelled: nothing was written")
			}
			return nil
		}
		if m.scrollKey(ks, page) {
			return nil
		}
		switch ks {
		case "esc", "q", "n":
			if len(p.rows) > 0 {
				// Back to the list; nothing was changed.
				p.stage, p.preview, p.err = stageList, nil, ""
				return nil
			}
			m.picker = nil
			if p.applyRefused {
				m.addNotice("apply cancelled: nothing was written")
				return nil
			}
			m.addNotice("restore cancelled: nothing was changed")
		case "tab", "shift+tab":
			if p.preview != nil && len(p.preview.Paths) > 0 {
				d := 1
				if ks == "shift+tab" {
					d = -1
				}
				n := len(p.preview.Paths)
				p.file = (p.file + d + n) % n
				m.showFile()
			}
		case "enter", "d":
			if p.preview == nil {
				if p.request.Name == "" || ks != "enter" {
					return nil
				}
				return m.runCommand(p.request)
			}
			if len(p.preview.Paths) == 0 {
				p.note = "no file changes to show; press y to confirm"
				return nil
			}
			return m.openDiff()
		case "y", "Y":
			return m.confirmPreview()
		}
	}
	return nil
}

// confirmPreview applies the preview after y: only once the preview was
// shown for a moment and every line of it was on screen.
func (m *model) confirmPreview() tea.Cmd {
	p := m.picker
	if !p.awaiting() {
		p.note = "there is nothing to confirm: press Enter to preview again"
		return nil
	}
	if m.now().Sub(p.shownAt) < confirmGrace {
		p.note = "y is ignored for a moment after the preview appears; press it again"
		return nil
	}
	if !p.seenAll {
		p.note = "read the whole preview first (↓/PgDn), then press y"
		return nil
	}
	if p.apply != nil {
		// An apply writes the user's checkout, not the conversation: a
		// draft in the composer stays where it is.
		p.confirming = true
		return m.runCommand(p.apply.confirm)
	}
	if p.request.Name == "" {
		p.request = previewCommand(p.preview)
	}
	c, err := confirmCommand(p.preview)
	if err != nil {
		p.err = "the preview's confirm command is malformed: " + err.Error() + "; press Esc and preview again"
		return nil
	}
	// A draft in the composer is put aside, not replaced; it comes back
	// or goes to the input history when the restore ends.
	m.stash = m.composer.Value()
	if m.stash != "" {
		m.composer.Reset()
		m.layout()
	}
	m.restoreTyped = false
	p.confirming = true
	return m.runCommand(c)
}

// scrollPicker moves the preview by delta lines.
func (m *model) scrollPicker(delta int) {
	p := m.picker
	p.scroll = max(0, p.scroll+delta)
	m.clampPicker()
}

// showFile scrolls so the selected file's line is visible.
func (m *model) showFile() {
	p := m.picker
	_, fileAt := m.previewContent(p, m.width)
	if p.file < 0 || p.file >= len(fileAt) {
		return
	}
	at := fileAt[p.file]
	room := m.pickerRoom()
	if at < p.scroll+1 {
		p.scroll = max(0, at-1)
	} else if at >= p.scroll+room-2 {
		p.scroll = at - room + 3
	}
	m.clampPicker()
}

// openDiff opens the diff of the selected file of the preview.
func (m *model) openDiff() tea.Cmd {
	p := m.picker
	pc := p.preview.Paths[p.file]
	m.pager = &pager{title: "Diff of " + git.DisplayPath(pc.Path) + " · " + changeLabel(pc.Change), back: true, loading: true}
	return diffCmd(m.ctx, m.sess, m.calls, p.preview.Token, pc.Path)
}

// ago formats t relative to now for the checkpoint list.
func ago(now, t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	}
	return t.In(loc).Format("Jan 2 15:04")
}

func plural(n int, one, many string) string { return checkpoint.Plural(n, one, many) }

// firstLine is a prompt's first line, marked when more lines follow.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// pickerRoom is the number of rows the picker's content may use (the key
// hints take the last row).
func (m *model) pickerRoom() int { return max(1, m.transcriptHeight()-1) }

// clampPicker keeps the preview's scroll in range and records whether all
// of it has been on screen.
func (m *model) clampPicker() {
	p := m.picker
	if p == nil {
		return
	}
	var lines []string
	if p.stage == stageConfirm {
		lines, _ = m.previewContent(p, m.width)
	} else {
		lines = m.listContent(p, m.width)
	}
	_, off, atEnd := window(lines, m.pickerRoom(), p.scroll, m.st.dim)
	p.scroll = off
	if atEnd && p.stage == stageConfirm && p.awaiting() {
		p.seenAll = true
	}
}

// pickerBody renders the picker into h rows of width w: its content,
// scrolled, then the key hints.
func (m *model) pickerBody(w, h int) []string {
	p := m.picker
	var content []string
	if p.stage == stageConfirm {
		content, _ = m.previewContent(p, w)
	} else {
		content = m.listContent(p, w)
		// Keep the selected row on screen.
		at := 2 + p.cursor
		room := max(1, h-1)
		if at < p.scroll+1 {
			p.scroll = max(0, at-1)
		} else if at >= p.scroll+room-1 {
			p.scroll = at - room + 2
		}
	}
	vis, off, _ := window(content, max(1, h-1), p.scroll, m.st.dim)
	p.scroll = off
	out := append([]string(nil), vis...)
	for len(out) < h-1 {
		out = append(out, "")
	}
	if p.note != "" {
		return append(out, m.st.warn.Render(ansi.Truncate(p.note, w, "…")))
	}
	return append(out, m.st.dim.Render(ansi.Truncate(m.pickerHints(p), w, "…")))
}

func (m *model) pickerHints(p *picker) string {
	if p.stage == stageList {
		return "↑/↓ checkpoint · ←/→ or Tab mode · Enter preview · Esc close"
	}
	back := "Esc cancel"
	if len(p.rows) > 0 {
		back = "Esc back"
	}
	switch {
	case p.apply != nil && p.confirming:
		return "applying… (Enter is ignored until it ends)"
	case p.apply != nil && !p.seenAll:
		return "↓/PgDn/End read on (y applies at the end) · any other key cancels"
	case p.apply != nil:
		return "y apply · any other key cancels"
	case p.preview == nil:
		return "Enter preview again · " + back
	case p.confirming:
		return "restoring… (Enter is ignored until it ends)"
	case !p.seenAll:
		return "↓/PgDn/End read on (y confirms at the end) · " + back
	case len(p.preview.Paths) > 0:
		return "y confirm · Tab file · Enter diff · " + back
	}
	return "y confirm · " + back
}

// listContent is the checkpoint list, one row per line, truncated to w.
func (m *model) listContent(p *picker, w int) []string {
	st := m.st
	var out []string
	add := func(s string) { out = append(out, s) }
	add(ansi.Truncate(st.title.Render("Rewind: choose a checkpoint (the state before that turn)"), w, "…"))
	add("")
	for i, r := range p.rows {
		cur := "  "
		if i == p.cursor {
			cur = "› "
		}
		c := r.Cells()
		line := fmt.Sprintf("%s%-5s %-11s %-9s %s", cur, c.ID, ago(m.now(), r.CreatedAt, m.loc), c.FilesText, c.Prompt)
		if c.Status != "" && c.Status != "completed" {
			line += " [" + c.Status + "]"
		}
		if !r.Workspace || r.Reason != "" {
			// A failed end-of-turn capture is told here too.
			line += "  " + c.Workspace
		}
		line = ansi.Truncate(line, w, "…")
		if i == p.cursor {
			add(st.selected.Render(line))
		} else {
			add(line)
		}
	}
	add("")
	r, mode, ok := p.selected()
	if ok {
		var chips []string
		for _, md := range modesFor(r) {
			if md == mode {
				chips = append(chips, st.selected.Render("["+string(md)+"]"))
			} else {
				chips = append(chips, " "+string(md)+" ")
			}
		}
		out = append(out, indent("Mode: "+strings.Join(chips, " "), w, "", "      ", lipgloss.NewStyle())...)
		out = append(out, indent(fmt.Sprintf("Restores %s to before %s.", mode.Describe(), r.ID), w, "", "  ", lipgloss.NewStyle())...)
		if !r.Workspace {
			out = append(out, indent("Workspace restore is unavailable for "+r.ID+".", w, "", "  ", st.dim)...)
		}
	}
	if p.loading {
		add(st.dim.Render("previewing…"))
	}
	if p.err != "" {
		out = append(out, indent(p.err, w, st.err.Render("✗ "), "  ", st.err)...)
	}
	return out
}

// previewContent renders the preview at width w; fileAt holds the line of
// each of its paths.
func (m *model) previewContent(p *picker, w int) (out []string, fileAt []int) {
	st := m.st
	plain := lipgloss.NewStyle()
	para := func(s string, style lipgloss.Style) { out = append(out, indent(s, w, "", "  ", style)...) }
	row := func(s string) { out = append(out, ansi.Truncate(s, w, "…")) }
	if p.apply != nil || p.applyRefused {
		return m.applyContent(p, w), nil
	}
	pv := p.preview
	if pv == nil {
		if p.refused != nil {
			para(previewTitle(p.refused)+" · not applied, nothing was changed", st.title)
		} else {
			para("Restore", st.title)
		}
		out = append(out, "")
		if p.loading {
			para("previewing…", st.dim)
		}
		if p.err != "" {
			out = append(out, indent(p.err, w, st.err.Render("✗ "), "  ", st.err)...)
		}
		return out, nil
	}
	para(previewTitle(pv)+" · "+pv.Mode.Short(), st.title)
	out = append(out, "")
	if pv.NoOp() {
		para("Nothing will change: the conversation and files already match.", plain)
	}
	if pv.Mode.HasConversation() {
		if len(pv.TurnsLeaving) > 0 {
			para(fmt.Sprintf("Turns leaving the active conversation (%d; /redo brings them back):", len(pv.TurnsLeaving)), plain)
			for _, t := range pv.TurnsLeaving {
				row(fmt.Sprintf("  %-5s %s", t.ID, firstLine(t.Prompt)))
			}
		}
		if len(pv.TurnsReturning) > 0 {
			para(fmt.Sprintf("Turns returning to the conversation (%d):", len(pv.TurnsReturning)), plain)
			for _, t := range pv.TurnsReturning {
				row(fmt.Sprintf("  %-5s %s", t.ID, firstLine(t.Prompt)))
			}
		}
	} else {
		para("Conversation: unchanged.", plain)
	}
	if pv.Mode.HasWorkspace() || len(pv.Paths) > 0 {
		if len(pv.Paths) == 0 {
			para("Files: none change (the workspace already matches).", plain)
		} else {
			if pv.InPlace {
				para("In place: only the agent's own changes are undone; your edits stay, and a file no undone turn changed is never touched.", plain)
				para(fmt.Sprintf("Files (%d):", len(pv.Paths)), plain)
			} else {
				para(fmt.Sprintf("Files that will change (%d):", len(pv.Paths)), plain)
			}
			for i, pc := range pv.Paths {
				cur := "  "
				if i == p.file {
					cur = "› "
				}
				note := ""
				if pc.Ignored {
					note = "  (restored as an ignored file)"
				}
				if pv.InPlace {
					note += "  — " + command.OutcomeText(pc)
				}
				line := ansi.Truncate(fmt.Sprintf("%s%-12s %s%s", cur, changeLabel(pc.Change), git.DisplayPath(pc.Path), note), w, "…")
				fileAt = append(fileAt, len(out))
				if i == p.file {
					out = append(out, st.selected.Render(line))
				} else {
					out = append(out, line)
				}
			}
		}
		ignored := 0
		for _, pc := range pv.Paths {
			if pc.Ignored {
				ignored++
			}
		}
		if ignored > 0 {
			para(strings.TrimSpace(command.IgnoredNote(ignored)), st.dim)
		}
	} else {
		para("Files: unchanged.", plain)
	}
	for _, wn := range checkpoint.MergeEffects(pv.Warnings) {
		out = append(out, indent(warningText(wn), w, st.warn.Render("! "), "  ", st.warn)...)
	}
	if len(pv.Excluded) > 0 {
		para("Left alone (ignored or excluded): "+strings.Join(displayPaths(pv.Excluded), ", "), st.dim)
	}
	if pv.Recovery != "" && pv.Mode.HasWorkspace() {
		out = append(out, "")
		para("The current files are kept as "+pv.Recovery+"; /redo brings them back.", st.dim)
	}
	if p.loading {
		para("restoring…", st.dim)
	}
	if p.err != "" {
		out = append(out, indent(p.err, w, st.err.Render("✗ "), "  ", st.err)...)
	}
	return out, fileAt
}

// applyContent renders an /apply preview at width w: the session's dry
// run as it words it, then what y does.
func (m *model) applyContent(p *picker, w int) (out []string) {
	st := m.st
	para := func(s string, style lipgloss.Style) { out = append(out, indent(s, w, "", "  ", style)...) }
	if p.apply == nil {
		para("Apply the session's work to your checkout · not applied, nothing was written", st.title)
		out = append(out, "")
	} else {
		para("Apply the session's work to your checkout", st.title)
		out = append(out, "")
		for _, l := range strings.Split(strings.TrimRight(p.apply.body, "\n"), "\n") {
			para(l, lipgloss.NewStyle())
		}
		out = append(out, "")
		para("y will "+p.apply.what+"; any other key cancels.", st.dim)
	}
	if p.loading && p.apply != nil && p.confirming {
		para("applying…", st.dim)
	} else if p.loading {
		para("previewing…", st.dim)
	}
	if p.err != "" {
		out = append(out, indent(p.err, w, st.err.Render("✗ "), "  ", st.err)...)
	}
	return out
}

func previewTitle(pv *checkpoint.Preview) string {
	var title string
	switch pv.Action {
	case checkpoint.ActionBranch:
		left := pv.BranchLeft
		if left == "" {
			left = "the active branch"
		}
		return "Enter branch " + pv.Branch + " as it was left, leave " + left
	case checkpoint.ActionUndo:
		title = "Undo"
	case checkpoint.ActionRedo:
		title = "Redo"
	default:
		title = "Rewind"
		switch {
		case pv.Branch != "" && pv.Mode.HasConversation():
			// A checkpoint of an abandoned branch.
			return "Switch to branch " + pv.Branch + " and rewind to before " + pv.Target
		case pv.Branch != "":
			return "Restore the files of before " + pv.Target + " (branch " + pv.Branch + "); the conversation stays"
		}
	}
	if pv.Target != "" {
		title += " to before " + pv.Target
	}
	return title
}

func changeLabel(c string) string { return command.ChangeLabel(c) }

func warningText(w checkpoint.Warning) string {
	if w.Message != "" {
		return w.Message
	}
	switch w.Kind {
	case "changed_outside_turns":
		return git.DisplayPath(w.Path) + " changed outside agent turns; restoring overwrites that change"
	}
	if w.Path != "" {
		return w.Kind + ": " + git.DisplayPath(w.Path)
	}
	return w.Kind
}

// displayPaths quotes the paths that are not plain printable text.
func displayPaths(ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = git.DisplayPath(p)
	}
	return out
}

// scrollKey scrolls a preview for the keys that read it, page rows a
// page, and reports whether ks was one of them.
func (m *model) scrollKey(ks string, page int) bool {
	switch ks {
	case "up", "k":
		m.scrollPicker(-1)
	case "down", "j":
		m.scrollPicker(1)
	case "pgup":
		m.scrollPicker(-page)
	case "pgdown", "space":
		m.scrollPicker(page)
	case "home":
		m.scrollPicker(-1 << 30)
	case "end":
		m.scrollPicker(1 << 30)
	default:
		return false
	}
	return true
}
