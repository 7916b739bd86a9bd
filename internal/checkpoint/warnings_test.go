package checkpoint_test

import (
	"context"
	"slices"
	"testing"

	"github.com/yolop-dev/yolop/internal/checkpoint"
)

// outsidePaths lists the paths a preview warns were changed outside turns.
func outsidePaths(pv *checkpoint.Preview) []string {
	var out []string
	for _, w := range pv.Warnings {
		if w.Kind == "changed_outside_turns" {
			out = append(out, w.Path)
		}
	}
	slices.Sort(out)
	return out
}

// TestOutsideChangeWarnings: a preview warns about exactly the paths that
// changed since yolop last left the workspace (the end of the latest turn,
// or a later workspace restore), never about paths an agent turn or a
// restore changed, whichever conversation head is active.
func TestOutsideChangeWarnings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name string
		// setup runs after the three turns and returns the request to preview.
		setup func(t *testing.T, r *rig) checkpoint.Request
		want  []string
	}{
		{"no restore, no outside edit", func(t *testing.T, r *rig) checkpoint.Request {
			return rewind("cp2", checkpoint.ModeWorkspace)
		}, nil},
		{"no restore, user edit", func(t *testing.T, r *rig) checkpoint.Request {
			write(t, r.root, "user.txt", "mine\n")
			return rewind("cp2", checkpoint.ModeWorkspace)
		}, []string{"user.txt"}},
		{"after a conversation-only rewind", func(t *testing.T, r *rig) checkpoint.Request {
			// The head becomes cp2, whose end state is older than the files:
			// turn 3 changed them, not the user.
			r.restore(rewind("cp3", checkpoint.ModeConversation))
			return rewind("cp2", checkpoint.ModeWorkspace)
		}, nil},
		{"after a conversation-only rewind, user edit", func(t *testing.T, r *rig) checkpoint.Request {
			r.restore(rewind("cp3", checkpoint.ModeConversation))
			write(t, r.root, "user.txt", "mine\n")
			return rewind("cp2", checkpoint.ModeWorkspace)
		}, []string{"user.txt"}},
		{"redo after a workspace-only rewind", func(t *testing.T, r *rig) checkpoint.Request {
			// The files are cp2's snapshot while the head stays cp3: the
			// restore changed them, not the user.
			r.restore(rewind("cp2", checkpoint.ModeWorkspace))
			return checkpoint.Request{Action: checkpoint.ActionRedo}
		}, nil},
		{"redo after a workspace-only rewind, user edit", func(t *testing.T, r *rig) checkpoint.Request {
			r.restore(rewind("cp2", checkpoint.ModeWorkspace))
			write(t, r.root, "a.txt", "changed by the user\n")
			return checkpoint.Request{Action: checkpoint.ActionRedo}
		}, []string{"a.txt"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{})
			for _, p := range threeTurns {
				r.turn(p)
			}
			req := tc.setup(t, r)
			pv, err := r.ctl.Preview(ctx, req)
			if err != nil {
				t.Fatalf("preview %+v: %v", req, err)
			}
			if got := outsidePaths(pv); !slices.Equal(got, tc.want) {
				t.Fatalf("changed_outside_turns warnings %q, want %q", got, tc.want)
			}
		})
	}
}
