package checkpoint_test

import (
	"context"
	"testing"

	"github.com/yolop-dev/yolop/internal/checkpoint"
)

// TestConfirmLineNamesTheMode: the confirm line must name the previewed
// target and mode; a line without a mode means the target's default mode,
// so it cannot confirm a preview of another mode.
func TestConfirmLineNamesTheMode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name    string
		preview checkpoint.Mode
		confirm checkpoint.Mode
		code    string // "" = accepted
	}{
		{"default previewed, none on the confirm line", "", "", ""},
		{"default previewed, its name on the confirm line", "", checkpoint.ModeBoth, ""},
		{"both previewed, none on the confirm line", checkpoint.ModeBoth, "", ""},
		{"conversation previewed, none on the confirm line", checkpoint.ModeConversation, "", checkpoint.CodeTokenMismatch},
		{"workspace previewed, none on the confirm line", checkpoint.ModeWorkspace, "", checkpoint.CodeTokenMismatch},
		{"workspace previewed and named", checkpoint.ModeWorkspace, checkpoint.ModeWorkspace, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{})
			for _, p := range threeTurns {
				r.turn(p)
			}
			pv, err := r.ctl.Preview(ctx, rewind("cp2", tc.preview))
			if err != nil {
				t.Fatal(err)
			}
			head, ws := r.ctl.Head(), manifest(t, r.root)
			_, err = r.ctl.Confirm(ctx, rewind("cp2", tc.confirm), pv.Token)
			if got := checkpoint.CodeOf(err); got != tc.code || (tc.code == "" && err != nil) {
				t.Fatalf("confirm: code %q (%v), want %q", got, err, tc.code)
			}
			if tc.code != "" {
				if r.ctl.Head() != head {
					t.Fatal("a refused confirm moved the head")
				}
				r.requireManifest(ws, "after the refused confirm")
				// The token stays good for the line it was made for.
				if _, err := r.ctl.Confirm(ctx, rewind("cp2", tc.preview), pv.Token); err != nil {
					t.Fatalf("confirm with the previewed mode: %v", err)
				}
			}
		})
	}
}
