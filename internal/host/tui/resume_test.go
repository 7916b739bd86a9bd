package tui

import (
	"context"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/command"
)

// runPick feeds a command's message back into the picker (the load of a
// query) and reports whether it asked to quit.
func runPick(t *testing.T, m *pickModel, cmd tea.Cmd) bool {
	t.Helper()
	if cmd == nil {
		return false
	}
	msg := cmd()
	if _, ok := msg.(tea.QuitMsg); ok {
		return true
	}
	m.Update(msg)
	return false
}

func TestPickSearchesAsYouType(t *testing.T) {
	t.Parallel()
	all := []PickRow{{ID: "s_1", Title: "fix the parser"}, {ID: "s_2", Title: "write docs"}}
	var asked []string
	src := func(_ context.Context, q string) ([]PickRow, error) {
		asked = append(asked, q)
		var out []PickRow
		for _, r := range all {
			if strings.Contains(r.Title, q) {
				out = append(out, r)
			}
		}
		return out, nil
	}
	m := &pickModel{ctx: context.Background(), src: src}
	runPick(t, m, m.Init())
	if len(m.rows) != 2 || !strings.Contains(m.render(), "fix the parser") {
		t.Fatalf("initial list: %+v\n%s", m.rows, m.render())
	}
	for _, r := range "docs" {
		_, cmd := m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
		runPick(t, m, cmd)
	}
	if len(m.rows) != 1 || m.rows[0].ID != "s_2" || asked[len(asked)-1] != "docs" {
		t.Fatalf("after typing: rows %+v, asked %q", m.rows, asked)
	}
	// An answer to an older query is dropped.
	m.Update(pickResultMsg{query: "doc", rows: all})
	if len(m.rows) != 1 {
		t.Fatalf("stale answer applied: %+v", m.rows)
	}
	// Enter opens only what was drawn: the answer to "docs" has not been
	// drawn yet, so Enter waits.
	_, cmd := m.Update(keyMsg("enter"))
	if runPick(t, m, cmd) || m.chosen != "" {
		t.Fatalf("enter before the answer was drawn: chosen %q", m.chosen)
	}
	if strings.Contains(m.render(), "write docs") == false {
		t.Fatalf("the answer is not drawn:\n%s", m.render())
	}
	_, cmd = m.Update(keyMsg("enter"))
	if !runPick(t, m, cmd) || m.chosen != "s_2" {
		t.Fatalf("enter: chosen %q", m.chosen)
	}
}

// While the answer to the typed query is not in, the old rows are shown
// without a cursor, and Enter opens nothing.
func TestPickEnterWaitsForTheTypedQuery(t *testing.T) {
	t.Parallel()
	m := &pickModel{ctx: context.Background(), src: func(context.Context, string) ([]PickRow, error) {
		return []PickRow{{ID: "s_1", Title: "one"}}, nil
	}}
	runPick(t, m, m.Init())
	m.render()
	m.Update(tea.KeyPressMsg{Code: 'x', Text: "x"}) // its answer is not fed back
	if strings.Contains(m.render(), "▸") {
		t.Fatalf("a row is marked while searching:\n%s", m.render())
	}
	_, cmd := m.Update(keyMsg("enter"))
	if runPick(t, m, cmd) || m.chosen != "" {
		t.Fatalf("enter while searching chose %q", m.chosen)
	}
}

// From /resume, the header says Esc goes back to the session it was typed
// in.
func TestPickEscGoesBackFromResume(t *testing.T) {
	t.Parallel()
	m := &pickModel{ctx: context.Background(), back: "s_prev", src: func(context.Context, string) ([]PickRow, error) { return nil, nil }}
	runPick(t, m, m.Init())
	if !strings.Contains(m.render(), "Esc to go back to s_prev") {
		t.Fatalf("header:\n%s", m.render())
	}
}

// Before the first answer, and when nothing matches, the picker has no
// rows to lay out.
func TestPickRendersWithoutRows(t *testing.T) {
	t.Parallel()
	m := &pickModel{ctx: context.Background(), src: func(context.Context, string) ([]PickRow, error) { return nil, nil }}
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	_ = m.render() // before the first answer
	runPick(t, m, m.Init())
	if out := m.render(); !strings.Contains(out, "no session matches") {
		t.Fatalf("no rows:\n%s", out)
	}
}

func TestPickEscQuitsWithoutChoice(t *testing.T) {
	t.Parallel()
	m := &pickModel{ctx: context.Background(), src: func(context.Context, string) ([]PickRow, error) {
		return []PickRow{{ID: "s_1"}}, nil
	}}
	runPick(t, m, m.Init())
	m.Update(keyMsg("down"))
	_, cmd := m.Update(keyMsg("esc"))
	if !runPick(t, m, cmd) || m.chosen != "" {
		t.Fatalf("esc: chosen %q", m.chosen)
	}
}

// /resume ends the TUI so the caller can show the picker; it waits while
// a turn runs.
func TestResumeCommandEndsTheProgram(t *testing.T) {
	t.Parallel()
	m, _ := newTestModel(t, &fakeSession{info: baseInfo()})
	typeText(t, m, "/resume")
	if quit := press(t, m, "enter"); !quit || !m.resume {
		t.Fatalf("/resume: quit %v resume %v", quit, m.resume)
	}
}

// Why the last choice did not open stays above the list until the user
// types again.
func TestPickShowsWhyAChoiceDidNotOpen(t *testing.T) {
	t.Parallel()
	m := &pickModel{ctx: context.Background(), note: "s_1 did not open: session s_1 is in use by yolop process 42", src: func(context.Context, string) ([]PickRow, error) {
		return []PickRow{{ID: "s_1"}, {ID: "s_2"}}, nil
	}}
	runPick(t, m, m.Init())
	if !strings.Contains(m.render(), "! s_1 did not open: session s_1 is in use") {
		t.Fatalf("the note is not shown:\n%s", m.render())
	}
	m.Update(keyMsg("down"))
	if !strings.Contains(m.render(), "did not open") {
		t.Fatal("moving the cursor dropped the note")
	}
	_, cmd := m.Update(tea.KeyPressMsg{Code: 'x', Text: "x"})
	runPick(t, m, cmd)
	if strings.Contains(m.render(), "did not open") {
		t.Fatalf("typing did not clear the note:\n%s", m.render())
	}
}

// A branch preview is titled as a switch, and previewing it again (after
// it went stale) or confirming it names the branch, never a bare /branch.
func TestBranchPreviewCommands(t *testing.T) {
	t.Parallel()
	pv := &checkpoint.Preview{Action: checkpoint.ActionBranch, Target: "b1", Branch: "b1", BranchLeft: "b3", Mode: checkpoint.ModeBoth, Token: "tok"}
	if got := previewTitle(pv); got != "Enter branch b1 as it was left, leave b3" {
		t.Errorf("title %q", got)
	}
	again := previewCommand(pv)
	if again.Name != "branch" || again.Target != "b1" || again.Mode != checkpoint.ModeBoth || again.Raw != "/branch b1 both" {
		t.Errorf("preview again: %+v", again)
	}
	if _, err := command.Parse(again.Raw); err != nil {
		t.Errorf("preview again does not parse: %v", err)
	}
	c, err := confirmCommand(pv)
	if err != nil || c.Raw != "/branch b1 both --confirm tok" || c.Request().Target != "b1" {
		t.Errorf("confirm: %+v %v", c, err)
	}
}

// At 100 columns a long title gives way before the repository, which is
// what tells sessions with equal titles apart; no row is wider than the
// terminal.
func TestPickKeepsTheRepositoryVisible(t *testing.T) {
	t.Parallel()
	repo := "/tmp/qa/work/projects/r8"
	rows := []PickRow{
		{ID: "s_01m8rb35fk7xkd8va7fczv57eq", Title: "refactor the configuration loader and its tests", Repo: repo, LastUsed: "3m ago", Turns: 12},
		{ID: "s_01m8rb35fk7xkd8va7fczv57er", Title: "short", Repo: "/home/someone/src/github.com/example/a-very-long-repository-name", LastUsed: "2026-11-30", Turns: 1},
	}
	for _, width := range []int{100, 80} {
		m := &pickModel{ctx: context.Background(), src: func(context.Context, string) ([]PickRow, error) { return rows, nil }}
		m.Update(tea.WindowSizeMsg{Width: width, Height: 30})
		runPick(t, m, m.Init())
		out := m.render()
		for _, l := range strings.Split(out, "\n") {
			if w := ansi.StringWidth(l); w > width {
				t.Errorf("width %d: a line is %d columns: %q", width, w, l)
			}
		}
		if !strings.Contains(out, repo) {
			t.Errorf("width %d: repository %s not shown in full:\n%s", width, repo, out)
		}
		if !strings.Contains(out, "a-very-long-repository-name") {
			t.Errorf("width %d: the end of a long repository path is not shown:\n%s", width, out)
		}
		if width == 100 && !strings.Contains(out, "refactor the conf") {
			t.Errorf("width %d: the title is gone:\n%s", width, out)
		}
	}
}
