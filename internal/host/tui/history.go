package tui

// history is the composer's input history: sent prompts and commands, and
// drafts put aside so they are never lost. ↑ on the composer's first line
// walks back, ↓ on its last line walks forward to the line being edited.
type history struct {
	items []string
	pos   int    // index being shown while browsing; len(items) when not
	draft string // what the composer held when browsing started
}

// add appends text unless it repeats the newest entry, and stops browsing.
func (h *history) add(text string) {
	if text == "" {
		return
	}
	if n := len(h.items); n == 0 || h.items[n-1] != text {
		h.items = append(h.items, text)
	}
	h.reset()
}

func (h *history) reset() { h.pos, h.draft = len(h.items), "" }

func (h *history) browsing() bool { return h.pos < len(h.items) }

// prev returns the entry before the one shown; current is the composer's
// text, kept as the draft when browsing starts.
func (h *history) prev(current string) (string, bool) {
	if h.pos == 0 || len(h.items) == 0 {
		return "", false
	}
	if !h.browsing() {
		h.draft = current
	}
	h.pos--
	return h.items[h.pos], true
}

// next returns the entry after the one shown, then the draft.
func (h *history) next() (string, bool) {
	if !h.browsing() {
		return "", false
	}
	h.pos++
	if h.pos == len(h.items) {
		d := h.draft
		h.draft = ""
		return d, true
	}
	return h.items[h.pos], true
}
