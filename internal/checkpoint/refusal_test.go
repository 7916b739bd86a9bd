package checkpoint_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/app"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/snapshot"
)

var threeTurns = []string{
	"write a.txt\nMARK1\nEOF",
	"$ mv a.txt b.txt && printf '\\000x' > bin && ln -s b.txt link",
	"$ rm README.md && echo MARK3 > c.txt && chmod +x c.txt",
}

func rewind(target string, mode checkpoint.Mode) checkpoint.Request {
	return checkpoint.Request{Action: checkpoint.ActionRewind, Target: target, Mode: mode}
}

// TestRefusals: every bad request is refused with its code and changes
// neither the workspace nor the timeline.
func TestRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	preview := func(t *testing.T, r *rig, req checkpoint.Request) *checkpoint.Preview {
		t.Helper()
		pv, err := r.ctl.Preview(ctx, req)
		if err != nil {
			t.Fatalf("preview %+v: %v", req, err)
		}
		return pv
	}
	cases := []struct {
		name string
		code string
		// setup prepares the session and returns the refused action.
		setup func(t *testing.T, r *rig) func() error
	}{
		{"unknown checkpoint", checkpoint.CodeUnknownCheckpt, func(t *testing.T, r *rig) func() error {
			return func() error { _, err := r.ctl.Preview(ctx, rewind("cp99", "")); return err }
		}},
		{"no checkpoint named", checkpoint.CodeUnknownCheckpt, func(t *testing.T, r *rig) func() error {
			return func() error { _, err := r.ctl.Preview(ctx, rewind("", "")); return err }
		}},
		{"unknown mode (parse)", checkpoint.CodeBadMode, func(t *testing.T, r *rig) func() error {
			return func() error { _, err := checkpoint.ParseMode("sideways"); return err }
		}},
		{"unknown mode (preview)", checkpoint.CodeBadMode, func(t *testing.T, r *rig) func() error {
			return func() error { _, err := r.ctl.Preview(ctx, rewind("cp2", "sideways")); return err }
		}},
		{"mode on undo", checkpoint.CodeBadMode, func(t *testing.T, r *rig) func() error {
			return func() error {
				_, err := r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionUndo, Mode: checkpoint.ModeWorkspace})
				return err
			}
		}},
		{"unknown action", checkpoint.CodeBadMode, func(t *testing.T, r *rig) func() error {
			return func() error { _, err := r.ctl.Preview(ctx, checkpoint.Request{Action: "erase"}); return err }
		}},
		{"workspace mode on a conversation-only checkpoint", checkpoint.CodeNoWorkspace, func(t *testing.T, r *rig) func() error {
			// A stale ref lock makes the capture before turn 4 fail: the
			// turn runs, its checkpoint is conversation only.
			common := gittest.Git(t, r.root, "rev-parse", "--path-format=absolute", "--git-common-dir")
			lock := filepath.Join(common, snapshot.RefPrefix+r.id, "cp4.lock")
			if err := os.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(lock, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			r.turn("write d.txt\nMARK4\nEOF")
			if err := os.Remove(lock); err != nil {
				t.Fatal(err)
			}
			rows, err := r.ctl.List(ctx, false)
			if err != nil || rows[0].ID != "cp4" || rows[0].Workspace || rows[0].Reason == "" {
				t.Fatalf("cp4 should be conversation only with a reason: %+v %v", rows[0], err)
			}
			return func() error { _, err := r.ctl.Preview(ctx, rewind("cp4", checkpoint.ModeWorkspace)); return err }
		}},
		{"nothing to redo", checkpoint.CodeNothingToRedo, func(t *testing.T, r *rig) func() error {
			return func() error {
				_, err := r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionRedo})
				return err
			}
		}},
		{"unknown token", checkpoint.CodeUnknownToken, func(t *testing.T, r *rig) func() error {
			preview(t, r, rewind("cp2", checkpoint.ModeBoth))
			return func() error {
				_, err := r.ctl.Confirm(ctx, rewind("cp2", checkpoint.ModeBoth), "nosuchtoken")
				return err
			}
		}},
		{"token of another session", checkpoint.CodeUnknownToken, func(t *testing.T, r *rig) func() error {
			other := newRig(t, rigOpts{repo: r.repo})
			for _, p := range threeTurns {
				other.turn(p)
			}
			pv := preview(t, other, rewind("cp2", checkpoint.ModeBoth))
			return func() error { _, err := r.ctl.Confirm(ctx, rewind("cp2", checkpoint.ModeBoth), pv.Token); return err }
		}},
		{"token for another restore", checkpoint.CodeTokenMismatch, func(t *testing.T, r *rig) func() error {
			pv := preview(t, r, rewind("cp2", checkpoint.ModeBoth))
			return func() error { _, err := r.ctl.Confirm(ctx, rewind("cp1", checkpoint.ModeBoth), pv.Token); return err }
		}},
		{"token for another mode", checkpoint.CodeTokenMismatch, func(t *testing.T, r *rig) func() error {
			pv := preview(t, r, rewind("cp2", checkpoint.ModeConversation))
			return func() error { _, err := r.ctl.Confirm(ctx, rewind("cp2", checkpoint.ModeBoth), pv.Token); return err }
		}},
		{"repeated confirm", checkpoint.CodeTokenUsed, func(t *testing.T, r *rig) func() error {
			pv := preview(t, r, rewind("cp2", checkpoint.ModeBoth))
			if _, err := r.ctl.Confirm(ctx, rewind("cp2", checkpoint.ModeBoth), pv.Token); err != nil {
				t.Fatal(err)
			}
			return func() error { _, err := r.ctl.Confirm(ctx, rewind("cp2", checkpoint.ModeBoth), pv.Token); return err }
		}},
		{"confirm after a new turn", checkpoint.CodeConversationMove, func(t *testing.T, r *rig) func() error {
			pv := preview(t, r, rewind("cp2", checkpoint.ModeBoth))
			r.turn("just talking")
			return func() error { _, err := r.ctl.Confirm(ctx, rewind("cp2", checkpoint.ModeBoth), pv.Token); return err }
		}},
		{"files edited after the preview", checkpoint.CodeStalePreview, func(t *testing.T, r *rig) func() error {
			pv := preview(t, r, rewind("cp2", checkpoint.ModeWorkspace))
			write(t, r.root, "c.txt", "edited by the user after the preview\n")
			return func() error {
				_, err := r.ctl.Confirm(ctx, rewind("cp2", checkpoint.ModeWorkspace), pv.Token)
				return err
			}
		}},
		{"file created after the preview", checkpoint.CodeStalePreview, func(t *testing.T, r *rig) func() error {
			pv := preview(t, r, checkpoint.Request{Action: checkpoint.ActionUndo})
			write(t, r.root, "new/user.txt", "made after the preview\n")
			return func() error {
				_, err := r.ctl.Confirm(ctx, checkpoint.Request{Action: checkpoint.ActionUndo}, pv.Token)
				return err
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{})
			for _, p := range threeTurns {
				r.turn(p)
			}
			act := tc.setup(t, r)
			ws, tl, g, head := manifest(t, r.root), r.timelineBytes(), r.gitState(), r.ctl.Head()
			err := act()
			if got := checkpoint.CodeOf(err); got != tc.code {
				t.Fatalf("code %q (%v), want %q", got, err, tc.code)
			}
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("a refusal without a message")
			}
			r.requireManifest(ws, "after the refusal")
			if !bytes.Equal(r.timelineBytes(), tl) {
				t.Fatal("the refusal changed timeline.jsonl")
			}
			r.requireGitState(g, "after the refusal")
			if r.ctl.Head() != head {
				t.Fatalf("head moved from %s to %s", head, r.ctl.Head())
			}
		})
	}
}

// TestReadOnlyRefusesEveryMutation: a damaged line inside timeline.jsonl
// makes the session read-only; replay still works, every mutation is
// refused with the fork hint, and nothing changes.
func TestReadOnlyRefusesEveryMutation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, rigOpts{})
	for _, p := range threeTurns {
		r.turn(p)
	}
	pv, err := r.ctl.Preview(ctx, rewind("cp2", checkpoint.ModeBoth))
	if err != nil {
		t.Fatal(err)
	}
	r.close()
	path := filepath.Join(r.data, "sessions", r.id, session.TimelineFile)
	lines := bytes.Split(bytes.TrimSuffix(readFile(t, path), []byte("\n")), []byte("\n"))
	if len(lines) < 4 {
		t.Fatalf("timeline has %d lines", len(lines))
	}
	mid := len(lines) / 2
	lines[mid] = append([]byte(`{"v":1,"type":"checkpoint.cre`), bytes.Repeat([]byte("#"), 7)...)
	if err := os.WriteFile(path, append(bytes.Join(lines, []byte("\n")), '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	r.open(r.env, app.Resume{ID: r.id})
	if r.ctl.ReadOnly() == "" {
		t.Fatal("a corrupt timeline prefix did not make the session read-only")
	}
	if len(r.ctl.ActiveEvents()) == 0 {
		t.Fatal("read-only replay lost the events")
	}
	ws, tl, g := manifest(t, r.root), r.timelineBytes(), r.gitState()
	events := readFile(t, r.sess.Path(session.EventsFile))
	actions := []struct {
		name string
		run  func() error
	}{
		{"turn", func() error { _, err := r.ctl.RunTurn(ctx, "write z.txt\nz\nEOF", func(agent.Update) {}); return err }},
		{"preview rewind", func() error { _, err := r.ctl.Preview(ctx, rewind("cp1", checkpoint.ModeBoth)); return err }},
		{"preview undo", func() error {
			_, err := r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionUndo})
			return err
		}},
		{"confirm an earlier token", func() error { _, err := r.ctl.Confirm(ctx, rewind("cp2", checkpoint.ModeBoth), pv.Token); return err }},
	}
	for _, a := range actions {
		err := a.run()
		if checkpoint.CodeOf(err) != checkpoint.CodeReadOnly {
			t.Fatalf("%s: %v, want %s", a.name, err, checkpoint.CodeReadOnly)
		}
		if !strings.Contains(err.Error(), "yolop sessions fork "+r.id) {
			t.Fatalf("%s: refusal lacks the fork hint: %v", a.name, err)
		}
	}
	if notes, err := r.ctl.Repair(ctx); err != nil || len(notes) != 0 {
		t.Fatalf("repair of a read-only session: %v %v", notes, err)
	}
	r.requireManifest(ws, "read-only session")
	r.requireGitState(g, "read-only session")
	if !bytes.Equal(r.timelineBytes(), tl) || !bytes.Equal(readFile(t, r.sess.Path(session.EventsFile)), events) {
		t.Fatal("a read-only session's logs changed")
	}
}
