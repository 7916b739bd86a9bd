package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// TestPasteTooLongIsRefusedWhole: a paste the input cannot hold whole is
// not kept at all (the input would have cut it, and the prompt sent would
// silently lack its end); the user is told what to do. A paste that fits
// is kept whole.
func TestPasteTooLongIsRefusedWhole(t *testing.T) {
	t.Parallel()
	f := rewindSession(nil)
	m, _ := newTestModel(t, f)
	m.Update(tea.PasteMsg{Content: "first\nsecond"})
	if got := m.composer.Value(); got != "first\nsecond" {
		t.Fatalf("a small paste gave %q", got)
	}
	var b strings.Builder
	for i := range 12001 {
		b.WriteString("line ")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString("\n")
	}
	b.WriteString("THE END")
	m.Update(tea.PasteMsg{Content: b.String()})
	if got := m.composer.Value(); got != "first\nsecond" {
		t.Fatalf("a paste too long for the input changed it to %d bytes", len(got))
	}
	if s := screen(m); !strings.Contains(s, "Nothing was pasted") || !strings.Contains(s, "12002 lines") {
		t.Fatalf("the refusal is not on screen:\n%s", s)
	}
	// One line too long to wrap into the input's rows.
	m.Update(tea.PasteMsg{Content: strings.Repeat("y", 2_000_000)})
	if got := m.composer.Value(); got != "first\nsecond" {
		t.Fatalf("a single huge line changed the input to %d bytes", len(got))
	}
}
