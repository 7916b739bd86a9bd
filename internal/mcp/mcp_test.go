package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/spawn"
	"github.com/yolop-dev/yolop/internal/testenv"
)

// The test binary doubles as a stdio MCP server process (a real process
// over real pipes) when this variable is set.
const serverEnvVar = "YOLOP_TEST_MCP_SERVER"

func TestMain(m *testing.M) {
	testenv.NoRaceExitSleep()
	if mode := os.Getenv(serverEnvVar); mode != "" {
		if err := testServer(mode).Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// yolop's own credentials must never reach a server.
	os.Setenv("OPENAI_API_KEY", "sk-must-not-leak")
	os.Exit(m.Run())
}

type echoIn struct {
	Message string `json:"message"`
}

// testServer offers echo, env (reports a variable), crash (exits the
// process mid-call), hang (answers only when the call is cancelled) and
// daemon (starts a detached process that leaves the session, writing its
// pid to the given file).
func testServer(mode string) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "test-" + mode, Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo a message"}, func(ctx context.Context, req *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + in.Message}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "env", Description: "Report environment variables"}, func(ctx context.Context, req *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("%s=%q OPENAI_API_KEY=%q", in.Message, os.Getenv(in.Message), os.Getenv("OPENAI_API_KEY"))}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Exit mid-call"}, func(ctx context.Context, req *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		os.Exit(3)
		return nil, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "hang", Description: "Never answer"}, func(ctx context.Context, req *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	sdk.AddTool(s, &sdk.Tool{Name: "daemon", Description: "Start a daemon"}, func(ctx context.Context, req *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		// setsid and a double fork: the daemon is nobody's child but the
		// helper's, in a session of its own, without the session marker.
		c := exec.Command("sh", "-c", `env -u YOLOP_SESSION_ID setsid sh -c 'echo $$ > "$0"; exec sleep 300' "$1" >/dev/null 2>&1 &`, "sh", in.Message)
		if err := c.Run(); err != nil {
			return nil, nil, err
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "started"}}}, nil, nil
	})
	return s
}

func find(t *testing.T, m *Manager, name string) func(args string) (string, bool, bool) {
	t.Helper()
	for _, tl := range m.Tools() {
		if tl.Spec().Name == name {
			return func(args string) (string, bool, bool) {
				r, err := tl.Run(context.Background(), json.RawMessage(args))
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				return r.Content, r.IsError, r.External
			}
		}
	}
	var names []string
	for _, tl := range m.Tools() {
		names = append(names, tl.Spec().Name)
	}
	t.Fatalf("no tool %s among %v (problems %v)", name, names, m.Problems())
	return nil
}

func TestStdioServer(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	m := Start(context.Background(), []Server{{Name: "local", Command: exe, Env: map[string]string{serverEnvVar: "stdio", "SERVER_TOKEN": "s3cret"}}}, t.TempDir(), func(*spawn.Spec) error { return nil })
	defer m.Close()
	if p := m.Problems(); len(p) > 0 {
		t.Fatal(p)
	}
	call := find(t, m, "mcp__local__echo")
	if out, isErr, ext := call(`{"message":"hi"}`); out != "echo: hi" || isErr || !ext {
		t.Fatalf("echo: %q err=%v external=%v", out, isErr, ext)
	}
	// The server gets its own configured token, and nothing of yolop's.
	if out, _, _ := find(t, m, "mcp__local__env")(`{"message":"SERVER_TOKEN"}`); out != `SERVER_TOKEN="s3cret" OPENAI_API_KEY=""` {
		t.Fatalf("env: %s", out)
	}
	// A server that dies mid-call costs the call, not the caller.
	out, isErr, _ := find(t, m, "mcp__local__crash")(`{"message":"bye"}`)
	if !isErr || !strings.Contains(out, "the MCP server local failed") {
		t.Fatalf("crash: %q err=%v", out, isErr)
	}
	if out, isErr, _ := call(`{"message":"again"}`); !isErr {
		t.Fatalf("a call to a dead server succeeded: %q", out)
	}
}

func TestHTTPServer(t *testing.T) {
	t.Parallel()
	server := testServer("http")
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil)
	var mu sync.Mutex
	var sawAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("Authorization"); a != "" {
			mu.Lock()
			sawAuth = a
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	m := Start(context.Background(), []Server{{Name: "remote", URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer t0k"}}}, "", nil)
	defer m.Close()
	if p := m.Problems(); len(p) > 0 {
		t.Fatal(p)
	}
	if out, isErr, ext := find(t, m, "mcp__remote__echo")(`{"message":"over http"}`); out != "echo: over http" || isErr || !ext {
		t.Fatalf("echo: %q err=%v external=%v", out, isErr, ext)
	}
	mu.Lock()
	defer mu.Unlock()
	if sawAuth != "Bearer t0k" {
		t.Fatalf("the configured header did not reach the server: %q", sawAuth)
	}
}

func TestStartProblems(t *testing.T) {
	t.Parallel()
	m := Start(context.Background(), []Server{
		{Name: "missing", Command: "/nonexistent/mcp-server"},
		{Name: "neither"},
		{Name: "refused", URL: "http://127.0.0.1:1/mcp"},
	}, t.TempDir(), nil)
	defer m.Close()
	p := strings.Join(m.Problems(), "\n")
	for _, want := range []string{"MCP server missing did not start: its command cannot be run: exec: \"/nonexistent/mcp-server\": stat /nonexistent/mcp-server: no such file or directory", "mcp server \"neither\": set command", "MCP server refused did not start"} {
		if !strings.Contains(p, want) {
			t.Errorf("problems lack %q:\n%s", want, p)
		}
	}
	if len(m.Tools()) != 0 {
		t.Fatal("tools from servers that did not start")
	}
}

func TestToolName(t *testing.T) {
	t.Parallel()
	taken := map[string]bool{}
	a := ToolName("my server", "do.thing", taken)
	if a != "mcp__my_server__do_thing" {
		t.Fatalf("sanitized %q", a)
	}
	taken[a] = true
	b := ToolName("my.server", "do thing", taken) // sanitizes to the same name
	if b == a || !strings.HasPrefix(b, "mcp__my_server__do_thing_") || len(b) > 64 {
		t.Fatalf("collision not resolved: %q", b)
	}
	long := ToolName(strings.Repeat("s", 40), strings.Repeat("t", 40), taken)
	if len(long) != 64 {
		t.Fatalf("long name %q (%d)", long, len(long))
	}
}

func TestBadSchema(t *testing.T) {
	t.Parallel()
	for schema, bad := range map[string]bool{
		`{"type":"object","properties":{"a":{"type":"string"}}}`: false,
		`{"properties":{}}`: false,
		`{"type":"string"}`: true,
		`[1,2]`:             true,
		`null`:              true,
	} {
		var v any
		if err := json.Unmarshal([]byte(schema), &v); err != nil {
			t.Fatal(err)
		}
		if got := badSchema(v) != ""; got != bad {
			t.Errorf("badSchema(%s) = %v, want %v", schema, got, bad)
		}
	}
}

// TestCallTimeout: a call the server never answers ends at the server's
// call timeout as a tool error the model reads, and the server stays
// usable; a cancelled turn still ends as cancelled, not as a tool error.
func TestCallTimeout(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	m := Start(context.Background(), []Server{{Name: "slow", Command: exe, Env: map[string]string{serverEnvVar: "stdio"}, CallTimeout: 300 * time.Millisecond}}, t.TempDir(), nil)
	defer m.Close()
	if p := m.Problems(); len(p) > 0 {
		t.Fatal(p)
	}
	out, isErr, _ := find(t, m, "mcp__slow__hang")(`{"message":""}`)
	if !isErr || !strings.Contains(out, "the MCP server slow did not answer hang within 300ms") || !strings.Contains(out, "[mcp.servers.slow]") {
		t.Fatalf("hang: %q err=%v", out, isErr)
	}
	if out, isErr, _ := find(t, m, "mcp__slow__echo")(`{"message":"still here"}`); isErr || out != "echo: still here" {
		t.Fatalf("after the timeout: %q err=%v", out, isErr)
	}
	var hang tools.Tool
	for _, tl := range m.Tools() {
		if tl.Spec().Name == "mcp__slow__hang" {
			hang = tl
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := hang.Run(ctx, json.RawMessage(`{"message":""}`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled call returned %v, want context.Canceled (the turn is cancelled)", err)
	}
}

// TestServerTreeEndsWithClose: a daemon that a stdio server detached
// (setsid, a double fork, the session marker dropped) is ended when the
// manager closes.
func TestServerTreeEndsWithClose(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	m := Start(context.Background(), []Server{{Name: "d", Command: exe, Env: map[string]string{serverEnvVar: "stdio"}}}, dir, nil)
	pidFile := filepath.Join(dir, "daemon.pid")
	if out, isErr, _ := find(t, m, "mcp__d__daemon")(`{"message":"` + pidFile + `"}`); isErr {
		t.Fatalf("daemon: %s", out)
	}
	var pid int
	for pid == 0 {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if pid == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		if st, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); !strings.Contains(string(st), ") Z ") {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the server's daemon (pid %d) outlived the session's MCP servers", pid)
		}
	}
}
