package command

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/land"
)

func TestParseLandCommands(t *testing.T) {
	t.Parallel()
	ok := []struct {
		line string
		want Command
	}{
		{"/diff", Command{Name: "diff"}},
		{"/diff 3", Command{Name: "diff", Target: "cp3"}},
		{"/diff cp12", Command{Name: "diff", Target: "cp12"}},
		{"/apply", Command{Name: "apply", Verb: "refuse"}},
		{"/apply markers", Command{Name: "apply", Verb: "markers"}},
		{"/apply --confirm k3F9x2", Command{Name: "apply", Verb: "refuse", Token: "k3F9x2", Confirm: true}},
		{"/apply markers --confirm k3", Command{Name: "apply", Verb: "markers", Token: "k3", Confirm: true}},
		{"/apply undo", Command{Name: "apply", Verb: "undo"}},
		{"/commit", Command{Name: "commit"}},
		{"/commit fix the parser: keep  two spaces", Command{Name: "commit", Text: "fix the parser: keep  two spaces"}},
	}
	for _, tt := range ok {
		got, err := Parse(tt.line)
		if err != nil {
			t.Errorf("%s: %v", tt.line, err)
			continue
		}
		got.Raw = ""
		if got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.line, got, tt.want)
		}
	}
	bad := []string{"/diff banana", "/diff cp1 cp2", "/diff --confirm x", "/apply theirs", "/apply undo --confirm x", "/apply refuse markers", "/commit --confirm x", "/apply --all"}
	for _, line := range bad {
		_, err := Parse(line)
		var ue *UsageError
		if !errors.As(err, &ue) {
			t.Errorf("%s: want a usage error, got %v", line, err)
		}
	}
}

// fakeLand records what the handlers ask for.
type fakeLand struct {
	applies []land.ApplyOptions
}

func (f *fakeLand) Diff(_ context.Context, o land.DiffOptions) (*land.DiffResult, error) {
	return &land.DiffResult{From: "base", Text: "diff --git a/x b/x\n"}, nil
}
func (f *fakeLand) Apply(_ context.Context, o land.ApplyOptions) (*land.ApplyResult, error) {
	f.applies = append(f.applies, o)
	return &land.ApplyResult{SessionID: "s_1", Target: "/repo", DryRun: o.DryRun, Token: "tok", Paths: []land.PathOutcome{{Path: "x", Outcome: "clean"}}}, nil
}
func (f *fakeLand) UndoApply(context.Context, land.UndoOptions) (*land.UndoResult, error) {
	return &land.UndoResult{SessionID: "s_1", Paths: []string{"x"}}, nil
}
func (f *fakeLand) Commit(_ context.Context, o land.CommitOptions) (*land.CommitResult, error) {
	return &land.CommitResult{Branch: "yolop/x", Commit: "abc", Message: o.Message}, nil
}

type landOnly struct {
	Target
	l *fakeLand
}

func (t landOnly) Land() Land { return t.l }

func TestApplyPreviewsThenConfirms(t *testing.T) {
	t.Parallel()
	f := &fakeLand{}
	tgt := landOnly{l: f}
	c, _ := Parse("/apply markers")
	res, err := Run(context.Background(), tgt, c)
	if err != nil || res.Kind != ResultApplyPreview || res.Confirm != "/apply markers --confirm tok" || !strings.Contains(res.Text, "/apply markers --confirm tok") {
		t.Fatalf("preview %+v %v", res, err)
	}
	// A host that confirms with a key shows the preview without the
	// token and says what confirming does.
	if strings.Contains(res.Body, "tok") || !strings.Contains(res.Body, "Dry run: applying session s_1") || res.ConfirmWhat != "apply these changes to /repo (undo with /apply undo)" {
		t.Fatalf("key-confirm preview: body %q, confirm %q", res.Body, res.ConfirmWhat)
	}
	if len(f.applies) != 1 || !f.applies[0].DryRun || f.applies[0].OnConflict != "markers" {
		t.Fatalf("the preview must be a dry run: %+v", f.applies)
	}
	c, _ = Parse(res.Confirm)
	res, err = Run(context.Background(), tgt, c)
	if err != nil || res.Kind != ResultApplied {
		t.Fatalf("confirm %+v %v", res, err)
	}
	if a := f.applies[1]; a.DryRun || a.Token != "tok" || a.OnConflict != "markers" {
		t.Fatalf("the confirm must apply with the token: %+v", a)
	}
	c, _ = Parse("/commit ship it")
	if res, err = Run(context.Background(), tgt, c); err != nil || res.Data.(*land.CommitResult).Message != "ship it" {
		t.Fatalf("commit %+v %v", res, err)
	}
	// A target without land operations says so.
	if _, err := Run(context.Background(), struct{ Target }{}, c); err == nil || !strings.Contains(err.Error(), "not available") {
		t.Fatalf("no land: %v", err)
	}
}

// conflictLand previews an apply that conflicts in the refuse mode, after
// settling an interrupted one.
type conflictLand struct{ fakeLand }

func (f *conflictLand) Apply(_ context.Context, o land.ApplyOptions) (*land.ApplyResult, error) {
	f.applies = append(f.applies, o)
	return &land.ApplyResult{SessionID: "s_1", Target: "/repo", DryRun: o.DryRun, MarkersToken: "mtok", Conflicts: 1, Markers: []string{"x"}, Mode: o.OnConflict, Hints: o.Hints,
		Paths:   []land.PathOutcome{{Path: "x", Outcome: land.OutcomeConflict}},
		Notes:   []string{"rolled back an interrupted apply 1"},
		Repairs: []string{"rolled back an interrupted apply 1"}}, &land.ConflictError{Paths: []string{"x"}, SessionID: "s_1", Hints: o.Hints}
}

func TestApplyPreviewThatConflictsOffersOnlyMarkers(t *testing.T) {
	t.Parallel()
	f := &conflictLand{}
	c, _ := Parse("/apply")
	tgt := struct {
		Target
		LandTarget
	}{LandTarget: conflictTarget{f}}
	res, err := Run(context.Background(), tgt, c)
	if err != nil {
		t.Fatal(err)
	}
	if f.applies[0].Hints != land.GrammarSlash {
		t.Errorf("the slash command must ask for slash hints: %+v", f.applies[0])
	}
	if res.Confirm != "/apply markers --confirm mtok" {
		t.Errorf("confirm = %q, want the markers apply", res.Confirm)
	}
	for _, bad := range []string{"--on-conflict", "apply --undo", "/apply --confirm"} {
		if strings.Contains(res.Text, bad) {
			t.Errorf("the preview names %q:\n%s", bad, res.Text)
		}
	}
	for _, want := range []string{"repaired: rolled back an interrupted apply 1\n", "`/apply markers`", "no token for it", "/apply markers --confirm mtok"} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("the preview lacks %q:\n%s", want, res.Text)
		}
	}
	if strings.Contains(res.Text, "note: rolled back") {
		t.Errorf("a repair is told as a repair, not a note:\n%s", res.Text)
	}
}

type conflictTarget struct{ l *conflictLand }

func (t conflictTarget) Land() Land { return t.l }
