package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/mcp"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/spawn"
)

// TestMCPServerRunsInTheSandbox: a stdio MCP server starts under the
// session's write sandbox, like the shell's commands: it may write in the
// session's worktree, not in the user's checkout or elsewhere.
func TestMCPServerRunsInTheSandbox(t *testing.T) {
	t.Parallel()
	if abi, _ := spawn.ABI(); abi < 3 {
		t.Skipf("this kernel has Landlock ABI %d; the write sandbox needs 3", abi)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	repo := gittest.NewRepo(t)
	gittest.WriteFile(t, repo, "a.txt", "a\n")
	gittest.Commit(t, repo, "base")
	outside := filepath.Join(t.TempDir(), "outside.txt")
	s, err := app.Open(context.Background(), app.Env{
		DataDir: t.TempDir(), Dir: repo, Provider: provider.Config{Provider: provider.NameSim}, Sandbox: "write",
		MCP: []mcp.Server{{Name: "w", Command: exe, Env: map[string]string{"YOLOP_TEST_MCP_WRITER": "1"}}},
	}, app.New{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Prompt(context.Background(), `call mcp__w__write {"path":"`+filepath.Join(repo, "mine.txt")+`"}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	root := s.Info().ActiveRoot
	for _, c := range []struct{ path, want string }{
		{filepath.Join(repo, "mine.txt"), "write failed"},
		{outside, "write failed"},
		{filepath.Join(root, "inside.txt"), "wrote"},
	} {
		res, err = s.Prompt(context.Background(), `call mcp__w__write {"path":"`+c.path+`"}`, nil)
		if err != nil || res.Status != "completed" {
			t.Fatalf("turn: %+v %v", res, err)
		}
		text := strings.Join(toolResults(t, s), "\n")
		if !strings.Contains(text, c.want+" "+c.path) && !strings.Contains(text, c.want+": open "+c.path) {
			t.Fatalf("writing %s: want %q in the tool result, got:\n%s", c.path, c.want, text)
		}
	}
	if _, err := os.Stat(filepath.Join(repo, "mine.txt")); err == nil {
		t.Fatal("the MCP server wrote into the user's checkout")
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("the MCP server wrote outside every allowed place")
	}
}

// toolResults are the tool results of the session's last turn.
func toolResults(t *testing.T, s *app.Session) []string {
	t.Helper()
	var out []string
	for _, it := range s.Transcript() {
		if it.Tool != nil && it.Tool.Result != "" {
			out = append(out, it.Tool.Result)
		}
	}
	return out[max(0, len(out)-1):]
}
