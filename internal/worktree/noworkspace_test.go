package worktree

import (
	"context"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// TestUnavailable: what a new session in a directory is told about its
// file checkpoints, in the words workspace.json keeps.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		dir     string
		off     bool
		why     string
		notRepo bool
	}{
		{"repository", gittest.NewRepo(t), false, "", false},
		{"turned off", gittest.NewRepo(t), true, "file checkpoints are off (--workspace none)", false},
		{"no commits", gittest.NewEmptyRepo(t), false, "the repository has no commits yet", false},
		{"no repository", t.TempDir(), false, "", true},
	} {
		why, notRepo, repo := Unavailable(ctx, c.dir, c.off)
		if why != c.why || notRepo != c.notRepo {
			t.Errorf("%s: %q %v, want %q %v", c.name, why, notRepo, c.why, c.notRepo)
		}
		// The repository is handed on only when a session would use it.
		if want := c.name == "repository"; (repo != nil) != want || want && (repo.Root == "" || repo.Head == "") {
			t.Errorf("%s: repository %+v", c.name, repo)
		}
	}
	if ReasonNotRepo != "not a git repository" || ReasonBare != "bare repository" {
		t.Error("the reasons sessions on disk hold changed")
	}
}

func TestCheckInPlaceRoot(t *testing.T) {
	t.Parallel()
	if err := CheckInPlaceRoot("/", false); err == nil {
		t.Error("in place at / was not refused")
	}
	if err := CheckInPlaceRoot("/", true); err != nil {
		t.Errorf("in place at / asked for: %v", err)
	}
	if err := CheckInPlaceRoot(t.TempDir(), false); err != nil {
		t.Errorf("a project: %v", err)
	}
}
