package worktree

import (
	"context"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// TestCheckoutCheck: a clean checkout says nothing; uncommitted changes
// are counted and named (three of them), an uncommitted AGENTS.md first;
// a submodule is named; outside a repository nothing is said.
func TestCheckoutCheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	head := gittest.Git(t, repo, "rev-parse", "HEAD")
	if c := CheckCheckout(ctx, repo, head, "AGENTS.md"); c.Changes() != "" || c.Submodules() != "" {
		t.Fatalf("clean checkout: %q %q", c.Changes(), c.Submodules())
	}

	gittest.WriteFile(t, repo, "README.md", "changed\n")
	c := CheckCheckout(ctx, repo, head, "AGENTS.md")
	if w := c.Changes(); !strings.HasPrefix(w, "your checkout "+repo+" has 1 uncommitted change (README.md) that this session does not see") {
		t.Fatalf("one change: %q", w)
	}
	for _, f := range []string{"b.txt", "c.txt", "d.txt", "AGENTS.md"} {
		gittest.WriteFile(t, repo, f, "x\n")
	}
	gittest.Git(t, repo, "add", "b.txt")
	w := CheckCheckoutOf(repo, "AGENTS.md").Changes()
	if !strings.HasPrefix(w, "AGENTS.md in your checkout is untracked, so this session's worktree does not have it and the agent does not read it. Commit it and start a new session") ||
		!strings.Contains(w, ". Your checkout "+repo+" has 5 uncommitted changes (") || !strings.Contains(w, " and 2 more) ") {
		t.Fatalf("five changes, AGENTS.md among them: %q", w)
	}

	sub := gittest.NewRepo(t)
	withSub := gittest.NewRepo(t)
	gittest.Git(t, withSub, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "mods/sub")
	subHead := gittest.Commit(t, withSub, "a submodule")
	if w := CheckCheckout(ctx, withSub, subHead, "AGENTS.md").Submodules(); !strings.HasPrefix(w, "submodule mods/sub is not checked out in the session's worktree") {
		t.Fatalf("submodule: %q", w)
	}

	if c := CheckCheckoutOf(t.TempDir(), "AGENTS.md"); c.Changes() != "" || c.Submodules() != "" {
		t.Fatalf("outside a repository: %q %q", c.Changes(), c.Submodules())
	}
	var none *CheckoutCheck
	if none.Changes() != "" || none.Submodules() != "" {
		t.Fatal("a nil check found something")
	}
}

func TestInstructionsNote(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ xy, path, want string }{
		{"??", "AGENTS.md", "AGENTS.md in your checkout is untracked"},
		{"A ", "a/AGENTS.md", "a/AGENTS.md in your checkout is not committed (only added)"},
		{" D", "AGENTS.md", "AGENTS.md is deleted in your checkout but not in your last commit"},
		{" M", "AGENTS.md", "AGENTS.md has uncommitted changes in your checkout"},
		{" M", "NOTAGENTS.md", ""},
		{"??", "dir/", ""},
	} {
		if got := instructionsNote("AGENTS.md", c.xy, c.path); !strings.HasPrefix(got, c.want) || (c.want == "") != (got == "") {
			t.Errorf("instructionsNote(%q, %q) = %q, want %q…", c.xy, c.path, got, c.want)
		}
	}
	if got := instructionsNote("", "??", "dir/"); got != "" {
		t.Errorf("no instructions file named: %q", got)
	}
}
