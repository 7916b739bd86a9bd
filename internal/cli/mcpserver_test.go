package cli_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"
)

// testMCPServer is yolop-test-mcp, a stdio MCP server on the scripts'
// PATH (the official test server needs node and npm): echo, hang (writes
// the file it is given, then answers only when the call is cancelled) and
// daemon (starts a process that leaves the session as a daemon would:
// setsid after a double fork, YOLOP_SESSION_ID dropped, and appends to the
// file it is given every 20 ms; its pid goes to FILE.pid).
func testMCPServer() {
	s := sdk.NewServer(&sdk.Implementation{Name: "yolop-test-mcp", Version: "1"}, nil)
	type in struct {
		Message string `json:"message"`
	}
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo a message"}, func(ctx context.Context, req *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
		return text("echo: " + a.Message), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "hang", Description: "Never answer"}, func(ctx context.Context, req *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
		if err := os.WriteFile(a.Message, []byte("hanging\n"), 0o644); err != nil {
			return nil, nil, err
		}
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	sdk.AddTool(s, &sdk.Tool{Name: "daemon", Description: "Start a daemon"}, func(ctx context.Context, req *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
		script := `env -u YOLOP_SESSION_ID setsid sh -c 'echo $$ > "$0.pid"; while :; do echo tick >> "$0"; sleep 0.02; done' "$1" </dev/null >/dev/null 2>&1 &`
		if err := exec.Command("sh", "-c", script, "sh", a.Message).Run(); err != nil {
			return nil, nil, err
		}
		for range 500 {
			if b, err := os.ReadFile(a.Message + ".pid"); err == nil && strings.HasSuffix(string(b), "\n") {
				return text("started " + strings.TrimSpace(string(b))), nil, nil
			}
			time.Sleep(10 * time.Millisecond)
		}
		return nil, nil, fmt.Errorf("the daemon did not write %s.pid", a.Message)
	})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// pidalive [!] FILE: the process whose pid FILE holds is alive (not a
// zombie). A process found alive under ! is killed before the script
// fails, so that it does not outlive the test.
func cmdPIDAlive(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: pidalive [!] FILE")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(args[0])))
	ts.Check(err)
	alive := syscall.Kill(pid, 0) == nil
	if st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && strings.Contains(string(st), ") Z ") {
		alive = false
	}
	if alive && neg {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		ts.Fatalf("process %d (%s) is still running", pid, args[0])
	}
	if !alive && !neg {
		ts.Fatalf("process %d (%s) is not running", pid, args[0])
	}
}
