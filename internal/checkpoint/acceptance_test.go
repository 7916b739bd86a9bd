package checkpoint_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/session"
)

// The three turns of the acceptance scenario. Turn 2 and 3 change the
// workspace only through shell commands: creations, deletions, renames,
// binary content, symlinks, modes, a directory replaced by a file.
const (
	prompt1 = "think MARK1 plan\n" +
		"write a.txt\nalpha MARK1\nEOF\n" +
		"$ printf 'bin\\000\\001\\002' > data.bin && ln -s a.txt link-a && printf '#!/bin/sh\\n' > run.sh && chmod +x run.sh && mkdir -p deep/er && echo keep > deep/er/x.txt"
	prompt2 = "think MARK2 reasoning\n" +
		"$ mv a.txt b.txt && rm README.md && printf 'x\\377\\000y MARK2' > data.bin && rm link-a && ln -s src/main.go link-a && chmod -x run.sh && echo MARK2 > deep/er/new.txt && echo noise > debug.log\n" +
		"write src/main.go\npackage main // MARK2\nEOF"
	prompt3 = "think MARK3 secret\n" +
		"$ rm -rf deep && echo MARK3 > deep && mkdir nested && mv b.txt nested/b.txt && chmod 755 data.bin && ln -s nested dirlink"
)

func without(m map[string]entry, paths ...string) map[string]entry {
	out := map[string]entry{}
	for k, v := range m {
		out[k] = v
	}
	for _, p := range paths {
		delete(out, p)
	}
	return out
}

// TestThreeTurnsRewindBoth is the spec's core acceptance scenario: three
// turns, rewind both to cp2, and the model, the transcript source, the
// workspace and a reopened session all agree on turn 1 only.
func TestThreeTurnsRewindBoth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, rigOpts{})
	git0 := r.gitState()
	r.turn(prompt1)
	atCP2 := manifest(t, r.root)
	r.turn(prompt2)
	r.turn(prompt3)
	if got := r.ctl.Head(); got != "cp3" {
		t.Fatalf("head after three turns = %q", got)
	}
	for _, m := range []string{"MARK1", "MARK2", "MARK3"} {
		if !strings.Contains(r.contextText(), m) {
			t.Fatalf("before the rewind the model context lacks %s", m)
		}
	}

	pv, err := r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionRewind, Target: "2"})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Mode != checkpoint.ModeBoth || len(pv.TurnsLeaving) != 2 || len(pv.Paths) == 0 {
		t.Fatalf("preview: mode %s, leaving %v, %d paths", pv.Mode, pv.TurnsLeaving, len(pv.Paths))
	}
	res, err := r.ctl.Confirm(ctx, checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp2", Mode: checkpoint.ModeBoth}, pv.Token)
	if err != nil {
		t.Fatal(err)
	}
	if res.Prompt != prompt2 {
		t.Fatalf("restored prompt = %q, want turn 2's", res.Prompt)
	}
	if res.PathsChanged != len(pv.Paths) {
		t.Fatalf("restore changed %d paths, preview announced %d", res.PathsChanged, len(pv.Paths))
	}
	if got := r.ctl.Head(); got != "cp1" {
		t.Fatalf("head after rewind = %q, want cp1", got)
	}
	// The ignored file made in turn 2 is outside the snapshot contract and
	// stays; everything else is exactly the state before turn 2.
	if _, err := os.Lstat(filepath.Join(r.root, "debug.log")); err != nil {
		t.Fatalf("ignored debug.log was touched by the restore: %v", err)
	}
	if d := diffManifests(atCP2, without(manifest(t, r.root), "debug.log")); len(d) > 0 {
		t.Fatalf("workspace after rewind differs from cp2:\n%s", strings.Join(d, "\n"))
	}
	r.requireGitState(git0, "after rewind")

	checkBranch := func(when string) {
		t.Helper()
		ctxText := r.contextText()
		evText := eventsText(t, r.ctl.ActiveEvents())
		for _, m := range []string{"MARK2", "MARK3"} {
			if strings.Contains(ctxText, m) {
				t.Fatalf("%s: model context still holds %s", when, m)
			}
			if strings.Contains(evText, m) {
				t.Fatalf("%s: active events still hold %s", when, m)
			}
		}
		if !strings.Contains(ctxText, "MARK1") {
			t.Fatalf("%s: model context lost turn 1", when)
		}
		// Abandoned turns stay durable in the raw log.
		raw := string(readFile(t, r.sess.Path(session.EventsFile)))
		if !strings.Contains(raw, "MARK2") || !strings.Contains(raw, "MARK3") {
			t.Fatalf("%s: events.jsonl lost the abandoned turns", when)
		}
	}
	checkBranch("after rewind")
	seqs := func() []int64 {
		var s []int64
		for _, ev := range r.ctl.ActiveEvents() {
			s = append(s, ev.Seq)
		}
		return s
	}
	beforeSeqs, beforeCtx := seqs(), r.contextText()

	r.reopen()
	if len(r.notes) != 0 {
		t.Fatalf("a clean reopen made repairs: %v", r.notes)
	}
	if got := r.ctl.Head(); got != "cp1" {
		t.Fatalf("head after reopen = %q", got)
	}
	if got := seqs(); !equalSeqs(got, beforeSeqs) {
		t.Fatalf("reopen materialized events %v, before %v", got, beforeSeqs)
	}
	if got := r.contextText(); got != beforeCtx {
		t.Fatalf("reopen changed the model context:\n%s\nwant\n%s", got, beforeCtx)
	}
	checkBranch("after reopen")
	rows, err := r.ctl.List(ctx, false)
	if err != nil || len(rows) != 1 || rows[0].ID != "cp1" {
		t.Fatalf("listing after rewind = %+v, %v", rows, err)
	}
	all, err := r.ctl.List(ctx, true)
	if err != nil || len(all) != 3 || !all[0].Abandoned || !all[1].Abandoned || all[2].Abandoned {
		t.Fatalf("listing --all after rewind = %+v, %v", all, err)
	}

	// The next turn starts from turn 1 only and clears redo.
	if !r.ctl.RedoAvailable() {
		t.Fatal("redo should be available after a rewind")
	}
	r.turn("MARK4 hello")
	if r.ctl.RedoAvailable() {
		t.Fatal("a new turn must clear redo")
	}
	checkBranch("after turn 4")
	if !strings.Contains(r.contextText(), "MARK4") {
		t.Fatal("turn 4 is not in the model context")
	}
	if got := r.ctl.Head(); got != "cp4" {
		t.Fatalf("head after turn 4 = %q, want cp4", got)
	}
}

func equalSeqs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestEveryRestoreIsRedoable runs each kind of restore, then /redo three
// times: redo returns exactly the state before the restore, and redo after
// redo toggles. HEAD, refs and the real index never change.
func TestEveryRestoreIsRedoable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		req      checkpoint.Request
		wantHead string
		wantWS   int // index into the manifests after turn 0..3
	}{
		{"rewind both", checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp2", Mode: checkpoint.ModeBoth}, "cp1", 1},
		{"rewind conversation", checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp2", Mode: checkpoint.ModeConversation}, "cp1", 3},
		{"rewind workspace", checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp2", Mode: checkpoint.ModeWorkspace}, "cp3", 1},
		{"undo", checkpoint.Request{Action: checkpoint.ActionUndo}, "cp2", 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{})
			git0 := r.gitState()
			ms := []map[string]entry{manifest(t, r.root)}
			for _, p := range []string{
				"write one.txt\n1\nEOF\n$ chmod +x one.txt && ln -s one.txt l1",
				"$ mv one.txt two.txt && printf '\\000\\377' > bin && rm l1",
				"$ rm README.md && mkdir d && mv two.txt d/two && chmod 600 bin",
			} {
				r.turn(p)
				ms = append(ms, manifest(t, r.root))
			}
			res := r.restore(tc.req)
			if res.Action != tc.req.Action {
				t.Fatalf("restored action %s", res.Action)
			}
			state := func(head string, ws map[string]entry, what string) {
				t.Helper()
				if got := r.ctl.Head(); got != head {
					t.Fatalf("%s: head %q, want %q", what, got, head)
				}
				r.requireManifest(ws, what)
				r.requireGitState(git0, what)
			}
			state(tc.wantHead, ms[tc.wantWS], "after "+tc.name)
			for i := range 3 {
				if !r.ctl.RedoAvailable() {
					t.Fatalf("redo %d: not available", i+1)
				}
				redo := r.restore(checkpoint.Request{Action: checkpoint.ActionRedo})
				if redo.Prompt != "" {
					t.Fatalf("redo put a prompt back: %q", redo.Prompt)
				}
				if i%2 == 0 {
					state("cp3", ms[3], "after redo")
				} else {
					state(tc.wantHead, ms[tc.wantWS], "after redo of the redo")
				}
			}
		})
	}
}

// TestNoWorktreeIsConversationOnly: with --workspace none the listing says
// conversation only with the reason, workspace modes are
// refused with that reason, and a conversation rewind leaves files alone.
func TestNoWorktreeIsConversationOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, rigOpts{workspace: config.WorkspaceNone})
	if ok, why := r.ctl.WorkspaceAvailable(); ok || why == "" {
		t.Fatalf("WorkspaceAvailable = %v, %q", ok, why)
	}
	r.turn("write a.txt\nMARK1\nEOF")
	r.turn("write b.txt\nMARK2\nEOF")
	rows, err := r.ctl.List(ctx, false)
	if err != nil || len(rows) != 2 {
		t.Fatalf("list: %+v %v", rows, err)
	}
	for _, row := range rows {
		if row.Workspace || row.Reason != r.noWS {
			t.Fatalf("row %s: workspace %v reason %q, want conversation only (%q)", row.ID, row.Workspace, row.Reason, r.noWS)
		}
	}
	text, err := r.ctl.ListForModel(ctx)
	if err != nil || !strings.Contains(text, "conversation only: "+r.noWS) {
		t.Fatalf("model listing = %q, %v", text, err)
	}
	before, tl := manifest(t, r.root), r.timelineBytes()
	for _, mode := range []checkpoint.Mode{checkpoint.ModeWorkspace, checkpoint.ModeBoth} {
		_, err := r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp2", Mode: mode})
		if checkpoint.CodeOf(err) != checkpoint.CodeNoWorkspace || !strings.Contains(err.Error(), r.noWS) {
			t.Fatalf("%s preview: %v, want %s naming %q", mode, err, checkpoint.CodeNoWorkspace, r.noWS)
		}
	}
	r.requireManifest(before, "after refused workspace previews")
	if string(r.timelineBytes()) != string(tl) {
		t.Fatal("a refused preview changed the timeline")
	}
	pv, err := r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp2"})
	if err != nil || pv.Mode != checkpoint.ModeConversation || len(pv.Paths) != 0 {
		t.Fatalf("default preview without a worktree = %+v, %v", pv, err)
	}
	if _, err := r.ctl.Confirm(ctx, checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp2"}, pv.Token); err != nil {
		t.Fatal(err)
	}
	r.requireManifest(before, "after a conversation rewind")
	if strings.Contains(r.contextText(), "MARK2") {
		t.Fatal("turn 2 still in the model context")
	}
	// Redo without a workspace restores only the conversation.
	r.restore(checkpoint.Request{Action: checkpoint.ActionRedo})
	if r.ctl.Head() != "cp2" || !strings.Contains(r.contextText(), "MARK2") {
		t.Fatalf("redo: head %s", r.ctl.Head())
	}
}
