package tui

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

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
	if pv.Action == checkpoint.ActionRewind || pv.Action == "" {
		c.Name, c.Target, c.Mode = "rewind", pv.Target, pv.Mode
	}
	c.Raw = rawCommand(c)
	return c, nil
}

// previewCommand is the command that previews pv again.
func previewCommand(pv *checkpoint.Preview) command.Command {
	c := command.Command{Name: string(pv.Action)}
	if pv.Action == checkpoint.ActionRewind || pv.Action == "" {
		c.Name, c.Target, c.Mode = "rewind", pv.Target, pv.Mode
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
		// One session call at a time; Esc still closes the view.
		if ks == "esc" {
			m.picker = nil
		}
		return nil
	}
	switch p.stage {
	case stageList:
		switch ks {
		case "up", "k", "ctrl+p":
			p.move(-1)
		case "down", "j", "ctrl+n":
			p.move(1)
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
		switch ks {
		case "esc", "q", "n":
			if len(p.rows) > 0 {
				// Back to the list; nothing was changed.
				p.stage, p.preview, p.err = stageList, nil, ""
				return nil
			}
			m.picker = nil
			m.addNotice("restore cancelled: nothing was changed")
		case "enter", "y":
			if p.preview == nil {
				if p.request.Name == "" {
					m.picker = nil
					return nil
				}
				return m.runCommand(p.request)
			}
			if p.request.Name == "" {
				p.request = previewCommand(p.preview)
			}
			c, err := confirmCommand(p.preview)
			if err != nil {
				p.err = "the preview's confirm command is malformed: " + err.Error() + "; press Esc and preview again"
				return nil
			}
			return m.runCommand(c)
		}
	}
	return nil
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

// pickerLines renders the picker at width w.
func (m *model) pickerLines(w int) []string {
	p := m.picker
	st := m.st
	var out []string
	add := func(s string) { out = append(out, s) }
	switch p.stage {
	case stageList:
		add(st.title.Render("Rewind: choose a checkpoint (the state before that turn)"))
		add("")
		for i, r := range p.rows {
			cur := "  "
			if i == p.cursor {
				cur = "› "
			}
			c := r.Cells()
			line := fmt.Sprintf("%s%-5s %-11s %-9s %s", cur, r.ID, ago(m.now(), r.CreatedAt, m.loc), c.FilesText, firstLine(r.Prompt))
			if c.Status != "" && c.Status != "completed" {
				line += " [" + c.Status + "]"
			}
			if r.Abandoned {
				line += " (abandoned)"
			}
			if !r.Workspace || r.Reason != "" {
				line += "  " + c.Workspace
			}
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
			add("Mode: " + strings.Join(chips, " "))
			add(fmt.Sprintf("Restores %s to before %s.", mode.Describe(), r.ID))
			if !r.Workspace {
				add(st.dim.Render("Workspace restore is unavailable for " + r.ID + "."))
			}
		}
		add("")
		if p.loading {
			add(st.dim.Render("previewing…"))
		}
		if p.err != "" {
			add(st.err.Render("✗ " + p.err))
		}
		add(st.dim.Render("↑/↓ checkpoint · ←/→ or Tab mode · Enter preview · Esc close"))
	case stageConfirm:
		out = append(out, m.previewLines(p)...)
	}
	return out
}

func (m *model) previewLines(p *picker) []string {
	st := m.st
	var out []string
	add := func(s string) { out = append(out, s) }
	pv := p.preview
	if pv == nil {
		if p.refused != nil {
			add(st.title.Render(previewTitle(p.refused)) + " · not applied, nothing was changed")
		} else {
			add(st.title.Render("Restore"))
		}
		add("")
		if p.loading {
			add(st.dim.Render("previewing…"))
		}
		if p.err != "" {
			add(st.err.Render("✗ " + p.err))
		}
		add(st.dim.Render("Enter preview again · Esc back"))
		return out
	}
	add(st.title.Render(previewTitle(pv)) + " · changes the " + pv.Mode.Describe())
	add("")
	if pv.NoOp() {
		add("Nothing will change: the conversation and files already match.")
	}
	if len(pv.TurnsLeaving) > 0 {
		add(fmt.Sprintf("Turns leaving the branch (%d):", len(pv.TurnsLeaving)))
		for _, t := range pv.TurnsLeaving {
			add(fmt.Sprintf("  %-5s %s", t.ID, firstLine(t.Prompt)))
		}
	}
	if len(pv.TurnsReturning) > 0 {
		add(fmt.Sprintf("Turns coming back (%d):", len(pv.TurnsReturning)))
		for _, t := range pv.TurnsReturning {
			add(fmt.Sprintf("  %-5s %s", t.ID, firstLine(t.Prompt)))
		}
	}
	if pv.Mode.HasWorkspace() || len(pv.Paths) > 0 {
		if len(pv.Paths) == 0 {
			add("Files: none change.")
		} else {
			add(fmt.Sprintf("Files that will change (%d):", len(pv.Paths)))
			for _, pc := range pv.Paths {
				add(fmt.Sprintf("  %-12s %s", changeLabel(pc.Change), pc.Path))
			}
		}
	} else {
		add("Files: unchanged (conversation only).")
	}
	for _, w := range pv.Warnings {
		add(st.warn.Render("! " + warningText(w)))
	}
	if len(pv.Excluded) > 0 {
		add(st.dim.Render("Not restored: " + strings.Join(pv.Excluded, ", ")))
	}
	add("")
	if pv.Recovery != "" {
		add(st.dim.Render("The current state is kept as " + pv.Recovery + "; /redo brings it back."))
	}
	add("Confirm token: " + st.selected.Render(pv.Token))
	if p.loading {
		add(st.dim.Render("restoring…"))
	}
	if p.err != "" {
		add(st.err.Render("✗ " + p.err))
	}
	back := "Esc cancel"
	if len(p.rows) > 0 {
		back = "Esc back to the list"
	}
	add(st.dim.Render("Enter confirm · " + back))
	return out
}

func previewTitle(pv *checkpoint.Preview) string {
	var title string
	switch pv.Action {
	case checkpoint.ActionUndo:
		title = "Undo"
	case checkpoint.ActionRedo:
		title = "Redo"
	default:
		title = "Rewind"
	}
	if pv.Target != "" {
		title += " to before " + pv.Target
	}
	return title
}

func changeLabel(c string) string {
	switch c {
	case "type_changed":
		return "type change"
	case "mode_changed":
		return "mode change"
	}
	return c
}

func warningText(w checkpoint.Warning) string {
	switch w.Kind {
	case "changed_outside_turns":
		return w.Path + " changed outside agent turns; restoring overwrites that change"
	}
	if w.Path != "" {
		return w.Kind + ": " + w.Path
	}
	return w.Kind
}
