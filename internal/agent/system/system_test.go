package system

import (
	"strings"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/session"
)

// TestSystemPromptSize: the system prompt rides on every request; it must
// state the environment and stay under its stated size.
func TestSystemPromptSize(t *testing.T) {
	t.Parallel()
	long := "/" + strings.Repeat("very-long-directory-name/", 8)
	for _, ws := range []session.Workspace{
		{Kind: session.KindWorktree, ActiveRoot: long + "wt", RepoRoot: long + "repo",
			Worktree: &session.Worktree{Path: long + "wt", Branch: "yolop/some-task-abc123", Base: strings.Repeat("a", 40)}},
		{Kind: session.KindConversation, ActiveRoot: long + "plain", NoWorkspaceReason: "not a git repository"},
	} {
		plan := tools.EnvPlan{Source: tools.EnvLogin, Fallback: "yolop was started with an empty PATH"}
		s, err := Prompt(ws, "no turns yet; the worktree holds the files of its base commit", ws.NoWorkspaceReason, "strict", plan.Describe(), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		if len(s) > MaxPrompt {
			t.Errorf("system prompt is %d bytes, over its %d-byte budget", len(s), MaxPrompt)
		}
		for _, want := range []string{"Tuesday, 1 December 2026", "linux/", "bash", ws.ActiveRoot, "strict sandbox", "login shell's environment", "empty PATH"} {
			if !strings.Contains(s, want) {
				t.Errorf("system prompt lacks %q:\n%s", want, s)
			}
		}
		if ws.Worktree != nil {
			for _, want := range []string{ws.Worktree.Branch, ws.RepoRoot, "aaaaaaaaaaaa", "yolop apply"} {
				if !strings.Contains(s, want) {
					t.Errorf("system prompt lacks %q", want)
				}
			}
		} else if !strings.Contains(s, "not snapshotted (not a git repository)") {
			t.Errorf("a conversation-only session is not told its files are unprotected:\n%s", s)
		}
	}
}
