package tui

import (
	"errors"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/command"
)

// applySession answers /apply with a dry run and its confirmation with a
// written apply (or confirmErr).
func applySession(confirmErr error) *fakeSession {
	f := &fakeSession{info: baseInfo()}
	f.exec = func(c command.Command) (command.Result, error) {
		switch {
		case c.Name == "apply" && !c.Confirm:
			body := "Dry run: applying session s_01jfz8k2m3 to /home/me/project\n  clean            b.txt\n  merged           src/main.go\n"
			return command.Result{Kind: command.ResultApplyPreview,
				Text:    body + "\nConfirmation token: tok1\nTo apply, send exactly:\n/apply --confirm tok1\n",
				Body:    body,
				Confirm: "/apply --confirm tok1", ConfirmWhat: "apply these changes to /home/me/project (undo with /apply undo)"}, nil
		case c.Name == "apply" && c.Confirm:
			if confirmErr != nil {
				return command.Result{}, confirmErr
			}
			if c.Token != "tok1" {
				return command.Result{}, errors.New("unknown token " + c.Token)
			}
			return command.Result{Kind: command.ResultApplied, Text: "Applying session s_01jfz8k2m3 to /home/me/project\nWrote 2 paths as uncommitted changes (your HEAD, branches and index are unchanged).\n"}, nil
		}
		return command.Result{}, errors.New("unexpected /" + c.Name)
	}
	return f
}

// /apply in the TUI confirms as a restore does: the preview shows without
// a token to type, y applies once it was read (not in the first moment),
// and any other key cancels with nothing written.
func TestApplyConfirmsWithY(t *testing.T) {
	t.Parallel()
	t.Run("y applies", func(t *testing.T) {
		t.Parallel()
		f := applySession(nil)
		m, c := newTestModel(t, f)
		typeText(t, m, "/apply")
		press(t, m, "enter")
		if m.picker == nil || m.picker.apply == nil {
			t.Fatalf("no apply preview open; entries %q", entryTexts(m))
		}
		got := screen(m)
		for _, bad := range []string{"tok1", "Confirmation token", "send exactly"} {
			if strings.Contains(got, bad) {
				t.Errorf("the preview asks for a typed token (%q):\n%s", bad, got)
			}
		}
		golden(t, "apply-preview", got)
		press(t, m, "y") // within the grace period: ignored
		if n := len(f.execLog()); n != 1 || m.picker == nil {
			t.Fatalf("y right after the preview appeared confirmed it: %q", f.execLog())
		}
		confirmKey(t, m, c)
		if log := f.execLog(); len(log) != 2 || log[1] != "/apply --confirm tok1" {
			t.Fatalf("execs %q, want the preview then /apply --confirm tok1", log)
		}
		if m.picker != nil {
			t.Fatal("the preview stays open after the apply")
		}
		if e := entryTexts(m); !strings.Contains(e[len(e)-1], "Wrote 2 paths") {
			t.Fatalf("the apply's result is not shown: %q", e)
		}
	})
	for _, k := range []string{"esc", "n", "x", "enter", "tab", "ctrl+c"} {
		t.Run("cancel with "+k, func(t *testing.T) {
			t.Parallel()
			f := applySession(nil)
			m, c := newTestModel(t, f)
			typeText(t, m, "/apply")
			press(t, m, "enter")
			c.advance(confirmGrace)
			press(t, m, "end")
			press(t, m, k)
			if m.picker != nil {
				t.Fatalf("%s did not cancel the apply preview", k)
			}
			if log := f.execLog(); len(log) != 1 {
				t.Fatalf("%s reached the session: %q", k, log)
			}
			if e := entryTexts(m); e[len(e)-1] != "notice:apply cancelled: nothing was written" {
				t.Fatalf("entries %q", e)
			}
			if v := m.composer.Value(); v != "" {
				t.Fatalf("the cancelling key was typed into the composer: %q", v)
			}
		})
	}
	t.Run("refused confirm previews again", func(t *testing.T) {
		t.Parallel()
		f := applySession(&checkpoint.Error{Code: checkpoint.CodeStalePreview, Msg: "your checkout changed since the preview; run /apply again"})
		m, c := newTestModel(t, f)
		typeText(t, m, "/apply")
		press(t, m, "enter")
		confirmKey(t, m, c)
		if m.picker == nil || !strings.Contains(m.picker.err, "changed since the preview") {
			t.Fatalf("the refusal is not shown in the preview:\n%s", screen(m))
		}
		if !strings.Contains(screen(m), "not applied, nothing was written") {
			t.Fatalf("the refused preview does not say nothing was written:\n%s", screen(m))
		}
		press(t, m, "enter")
		if log := f.execLog(); len(log) != 3 || log[2] != "/apply" {
			t.Fatalf("Enter after a refusal ran %q, want a fresh /apply preview", log)
		}
		if m.picker == nil || m.picker.apply == nil || m.picker.err != "" {
			t.Fatal("the fresh apply preview is not shown")
		}
	})
}
