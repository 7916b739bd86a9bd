package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/checkpoint"
)

// TestEarlierItemsArriveAfterTheFirstScreen: a long session's first
// screen shows its newest items; the older ones are loaded afterwards (a
// moment after the first screen, or as soon as the user scrolls up) and
// put before them, and dropped if a restore replaced the transcript first.
func TestEarlierItemsArriveAfterTheFirstScreen(t *testing.T) {
	t.Parallel()
	f := &fakeSession{info: baseInfo()}
	newest := []agent.Item{{Kind: agent.ItemUser, Turn: "cp3", Text: "newest prompt"}}
	older := []agent.Item{{Kind: agent.ItemUser, Turn: "cp1", Text: "oldest prompt"}}
	c := &clock{t: t0}
	m := newModel(context.Background(), f, f.Info(), newest, true, c.now, time.UTC)
	m.pollEvery = 0
	m.earlier = func() []agent.Item { return older }
	t.Cleanup(m.shutdown)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	if s := screen(m); !strings.Contains(s, "newest prompt") || strings.Contains(s, "oldest prompt") {
		t.Fatalf("first screen:\n%s", s)
	}
	init := m.Init()
	if init == nil {
		t.Fatal("no load of the older items was planned")
	}
	if _, ok := init().(loadEarlierMsg); !ok {
		t.Fatal("Init did not plan the load of the older items")
	}
	_, load := m.Update(loadEarlierMsg{})
	if load == nil {
		t.Fatal("the planned load did not start")
	}
	if _, again := m.Update(tea.KeyPressMsg{Code: tea.KeyPgUp}); again != nil {
		t.Fatal("the older items were asked for twice")
	}
	m.Update(load())
	s := screen(m)
	if i, j := strings.Index(s, "oldest prompt"), strings.Index(s, "newest prompt"); i < 0 || j < i {
		t.Fatalf("after loading the older items:\n%s", s)
	}

	// A restore that replaced the transcript before they arrived wins.
	m2 := newModel(context.Background(), f, f.Info(), newest, true, c.now, time.UTC)
	m2.earlier = func() []agent.Item { return older }
	t.Cleanup(m2.shutdown)
	m2.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	// Scrolling up asks for them at once.
	_, up := m2.Update(tea.KeyPressMsg{Code: tea.KeyPgUp})
	if up == nil {
		t.Fatal("scrolling up did not load the older items")
	}
	late := up()
	m2.transcriptGen++ // what a conversation restore does
	m2.Update(late)
	if s := screen(m2); strings.Contains(s, "oldest prompt") {
		t.Fatalf("older items of a replaced transcript were shown:\n%s", s)
	}
}

// TestEarlierNoticesLoseTheRedoHint: restore notices loaded with the older
// transcript keep no "/redo undoes this" once a turn followed them.
func TestEarlierNoticesLoseTheRedoHint(t *testing.T) {
	t.Parallel()
	f := &fakeSession{info: baseInfo()}
	newest := []agent.Item{{Kind: agent.ItemUser, Turn: "cp30", Text: "newest prompt"}}
	older := []agent.Item{{Kind: agent.ItemNotice, Turn: "cp2", Text: "Rewound the conversation to before cp2; files unchanged. " + checkpoint.RedoHint}}
	c := &clock{t: t0}
	m := newModel(context.Background(), f, f.Info(), newest, true, c.now, time.UTC)
	m.pollEvery = 0
	m.earlier = func() []agent.Item { return older }
	t.Cleanup(m.shutdown)
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 24})
	_, load := m.Update(tea.KeyPressMsg{Code: tea.KeyPgUp})
	m.Update(load())
	if s := screen(m); !strings.Contains(s, "files unchanged.") || strings.Contains(s, "/redo undoes") {
		t.Fatalf("after loading the older items:\n%s", s)
	}
}
