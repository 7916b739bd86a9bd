package command

import (
	"errors"
	"fmt"
	"testing"

	"github.com/yolop-dev/yolop/internal/fault"
)

func TestErrorTextDropsSentinelPrefixes(t *testing.T) {
	t.Parallel()
	errNothing := fault.Plain("land: nothing to undo")
	errNotFound := fault.Plain("session: not found")
	errGit := fault.Plain("git: exit status 128")
	type typed struct{ error }
	cases := []struct {
		err  error
		want string
	}{
		{errNothing, "nothing to undo"},
		{fmt.Errorf("%w: session s_1 has no apply left to undo", errNothing), "nothing to undo: session s_1 has no apply left to undo"},
		{fmt.Errorf("open: %w", fmt.Errorf("%w: cp9", fault.Plain("land: no such checkpoint"))), "open: no such checkpoint: cp9"},
		{fmt.Errorf("no session %q (%w)", "x", errNotFound), "no session \"x\" (not found)"},
		{fmt.Errorf("session s_1: %w", fault.Plain("worktree: the worktree is now a symlink")), "session s_1: the worktree is now a symlink"},
		{fmt.Errorf("%w and %w", errNothing, fault.Plain("tools: unknown task \"9\"")), "nothing to undo and unknown task \"9\""},
		{fmt.Errorf("commit: %w", errGit), "commit: git: exit status 128"},
		{fmt.Errorf("apply: %w: a.txt", fault.New(fault.Conflict, "land: conflicts")), "apply: conflicts: a.txt"},
		{fault.With(fault.Usage, fmt.Errorf("bad: %w", errNotFound)), "bad: not found"},
		{typed{errors.New("worktree: typed errors say their own words")}, "worktree: typed errors say their own words"},
		{errors.New("plain message: no prefix to drop"), "plain message: no prefix to drop"},
		// A message, not a sentinel: what looks like a prefix is kept.
		{fmt.Errorf("open: %w", errors.New("snapshot: a message made on the spot")), "open: snapshot: a message made on the spot"},
		{fmt.Errorf("restore: %w", errors.New("cp9: not a package prefix")), "restore: cp9: not a package prefix"},
	}
	for _, c := range cases {
		if got := ErrorText(c.err); got != c.want {
			t.Errorf("ErrorText(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}
