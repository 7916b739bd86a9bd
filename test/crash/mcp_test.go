package crash

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// mcpServerEnv makes the test binary a stdio MCP server with one tool,
// daemon, which starts a process that leaves the session as a daemon
// would (setsid after a double fork, YOLOP_SESSION_ID dropped) and
// appends to the file it is given every 20 ms, its pid in FILE.pid.
const mcpServerEnv = "YOLOP_CRASH_MCP_SERVER"

func mcpServer() int {
	s := sdk.NewServer(&sdk.Implementation{Name: "crash-mcp", Version: "1"}, nil)
	type in struct {
		Message string `json:"message"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "daemon", Description: "Start a daemon"}, func(ctx context.Context, req *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
		script := `env -u YOLOP_SESSION_ID setsid sh -c 'echo $$ > "$0.pid"; while :; do echo tick >> "$0"; sleep 0.02; done' "$1" </dev/null >/dev/null 2>&1 &`
		if err := exec.Command("sh", "-c", script, "sh", a.Message).Run(); err != nil {
			return nil, nil, err
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "started"}}}, nil, nil
	})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(st), ") Z ")
}

// TestMCPDaemonCrash: the yolop process is killed (SIGKILL) while a
// daemon that its MCP server detached keeps writing the worktree; with
// "helper killed" the server's helper is killed first, so the daemon is
// nobody's descendant and carries no session marker. The next open ends
// it (and says so when only it could), a new process previews and
// confirms the workspace rewind of the killed turn, and seconds later the
// worktree still equals the verified tree.
func TestMCPDaemonCrash(t *testing.T) {
	linuxOnly(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, helperKilled := range []bool{false, true} {
		t.Run(fmt.Sprintf("helper killed=%v", helperKilled), func(t *testing.T) {
			t.Parallel()
			e := &env{t: t, repo: gittest.NewRepo(t), data: t.TempDir()}
			cfg := t.TempDir()
			settings := fmt.Sprintf("[mcp.servers.d]\ncommand = %q\nenv = { %s = \"1\" }\n", exe, mcpServerEnv)
			if err := os.MkdirAll(filepath.Join(cfg, "yolop"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(cfg, "yolop", "settings.toml"), []byte(settings), 0o600); err != nil {
				t.Fatal(err)
			}
			e.extra = []string{"XDG_CONFIG_HOME=" + cfg}
			e.turn(turn1)
			before := e.files()
			// The model step after the call waits, so the turn is still
			// running when it is killed.
			cmd := e.startTurn("call mcp__d__daemon {\"message\":\"daemon.txt\"}\nsleep 60000")
			e.waitPath("daemon.txt.pid")
			e.waitPath("daemon.txt")
			b, err := os.ReadFile(filepath.Join(e.root, "daemon.txt.pid"))
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			defer syscall.Kill(pid, syscall.SIGKILL)
			// Longer than the helper's scan for adopted orphans.
			time.Sleep(time.Second)
			e.killTurn(cmd, helperKilled)
			notes := e.repairNotes()
			if helperKilled && !hasNote(notes, "Ended") {
				t.Fatalf("repair notes %q: want the daemon ended and the user told", notes)
			}
			if alive(pid) {
				t.Fatalf("the MCP server's daemon (pid %d) survived the next open", pid)
			}
			_, verified := e.rewindKilledTurn()
			if d := diff(before, verified); len(d) > 0 {
				t.Fatalf("the restore did not reach the state before the turn: %v", d)
			}
			time.Sleep(1500 * time.Millisecond)
			if d := diff(verified, e.files()); len(d) > 0 {
				t.Fatalf("the worktree changed after the verified restore: %v", d)
			}
		})
	}
}
