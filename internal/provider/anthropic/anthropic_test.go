package anthropic

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/yolop-dev/yolop/internal/provider"
)

var update = flag.Bool("update", false, "rewrite testdata/*.request.json from the bodies the server received")

const secret = "sk-ant-test-secret-9c1d"

type fakeServer struct {
	*httptest.Server
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
}

// newServer answers with testdata/<fixture>.sse; mode "closed" aborts the
// connection after the fixture, "401" answers unauthorized.
func newServer(t *testing.T, fixture, mode string) *fakeServer {
	t.Helper()
	fs := &fakeServer{}
	fs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fs.mu.Lock()
		fs.bodies = append(fs.bodies, body)
		fs.headers = append(fs.headers, r.Header.Clone())
		fs.mu.Unlock()
		if r.URL.Path != "/v1/messages" {
			http.Error(w, "unexpected path "+r.URL.Path, http.StatusNotFound)
			return
		}
		if mode == "401" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
			return
		}
		data, err := os.ReadFile(filepath.Join("testdata", fixture+".sse"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.Write(data)
		w.(http.Flusher).Flush()
		if mode == "closed" {
			panic(http.ErrAbortHandler)
		}
	}))
	t.Cleanup(fs.Close)
	return fs
}

func newProvider(t *testing.T, url, trace string, budget int) *Provider {
	t.Helper()
	p, err := New(provider.Config{Model: "claude-test", BaseURL: url, APIKey: secret, TracePath: trace, ThinkingBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func checkBody(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".request.json")
	if *update {
		var buf bytes.Buffer
		if err := json.Indent(&buf, got, "", "  "); err != nil {
			t.Fatal(err)
		}
		buf.WriteByte('\n')
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to record)", err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("request body is not JSON: %v", err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("request body differs from %s\n got: %s", path, got)
	}
}

var tools = []provider.ToolSpec{{
	Name:        "bash",
	Description: "Run a shell command.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"],"additionalProperties":false}`),
}, {
	Name:       "list_directory",
	Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
}}

// thinkingTurn is what the thinking_tools fixture yields; it is sent back in
// the follow-up request to prove the round trip.
var thinkingTurn = provider.Message{
	Role: provider.RoleAssistant,
	Text: "Listing now.",
	Reasoning: []provider.Reasoning{
		{Provider: "anthropic", Text: "List the files first.", Signature: "EqQBsig=="},
		{Provider: "anthropic", Redacted: "opaque-blob"},
	},
	ToolCalls: []provider.ToolCall{
		{ID: "toolu_1", Name: "bash", Arguments: `{"command": "ls -la"}`},
		{ID: "toolu_2", Name: "list_directory", Arguments: `{}`},
	},
}

func TestStream(t *testing.T) {
	t.Parallel()
	first := []provider.Message{
		// An earlier turn produced by another provider: its reasoning is dropped.
		{Role: provider.RoleUser, Text: "hi"},
		{Role: provider.RoleAssistant, Text: "hello", Reasoning: []provider.Reasoning{{Provider: "sim", Text: "x", Signature: "y"}}},
		{Role: provider.RoleUser, Text: "list the files"},
	}
	followUp := append(append([]provider.Message{}, first...), thinkingTurn,
		provider.Message{Role: provider.RoleTool, ToolCallID: "toolu_1", ToolName: "bash", Text: "a.txt\nb.txt"},
		provider.Message{Role: provider.RoleTool, ToolCallID: "toolu_2", ToolName: "list_directory", Text: "no such dir", IsError: true},
	)
	tests := []struct {
		name      string
		fixture   string
		mode      string
		budget    int
		req       provider.Request
		want      provider.Response
		text      string
		reasoning string
		errHas    string
	}{
		{
			name: "thinking_tools", fixture: "thinking_tools", budget: 2048,
			req:       provider.Request{System: "sys", Messages: first, Tools: tools},
			want:      provider.Response{Message: thinkingTurn, StopReason: provider.StopToolUse, Usage: provider.Usage{InputTokens: 40, OutputTokens: 77, CacheReadTokens: 300, CacheWriteTokens: 20}},
			text:      "Listing now.",
			reasoning: "List the files first.",
		},
		{
			name: "round_trip", fixture: "compact", budget: 2048,
			req:  provider.Request{System: "sys", Messages: followUp, Tools: tools},
			want: provider.Response{Message: provider.Message{Role: provider.RoleAssistant, Text: "User wants file listings."}, StopReason: provider.StopEndTurn, Usage: provider.Usage{InputTokens: 5, OutputTokens: 6}},
			text: "User wants file listings.",
		},
		{name: "midstream_error", fixture: "midstream_error", req: provider.Request{Messages: first}, errHas: "error mid-stream (overloaded_error: Overloaded)"},
		{name: "closed", fixture: "closed", mode: "closed", req: provider.Request{Messages: first}, errHas: "broke mid-stream"},
		{name: "ended_early", fixture: "ended_early", req: provider.Request{Messages: first}, errHas: "closed the stream before the response was complete"},
		{name: "unauthorized", mode: "401", req: provider.Request{Messages: first}, errHas: "API key rejected"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, tc.fixture, tc.mode)
			trace := filepath.Join(t.TempDir(), "trace.jsonl")
			p := newProvider(t, srv.URL, trace, tc.budget)
			var text, reasoning strings.Builder
			resp, err := p.Stream(context.Background(), tc.req, func(d provider.Delta) {
				text.WriteString(d.Text)
				reasoning.WriteString(d.Reasoning)
			})
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("want error containing %q, got %v", tc.errHas, err)
				}
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("error leaks the key: %v", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(resp, tc.want) {
					t.Fatalf("response\n got %#v\nwant %#v", resp, tc.want)
				}
				if text.String() != tc.text || reasoning.String() != tc.reasoning {
					t.Fatalf("deltas text %q reasoning %q", text.String(), reasoning.String())
				}
				checkBody(t, tc.name, srv.bodies[0])
			}
			if len(srv.bodies) != 1 {
				t.Fatalf("server saw %d requests, want 1", len(srv.bodies))
			}
			// The SDK sends the key as a bearer token.
			if got := srv.headers[0].Get("Authorization"); got != "Bearer "+secret {
				t.Fatalf("Authorization header %q", got)
			}
			checkTrace(t, trace, srv.URL+"/v1/messages", srv.bodies)
		})
	}
}

func checkTrace(t *testing.T, path, url string, bodies [][]byte) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("trace mode %v, want 0600", fi.Mode().Perm())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(secret)) || bytes.Contains(bytes.ToLower(raw), []byte("authorization")) || bytes.Contains(bytes.ToLower(raw), []byte("bearer")) {
		t.Fatalf("trace contains credentials: %s", raw)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	i := 0
	for sc.Scan() {
		var line struct {
			Provider string          `json:"provider"`
			URL      string          `json:"url"`
			Body     json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("trace line %d: %v", i+1, err)
		}
		if i >= len(bodies) {
			t.Fatalf("trace has more lines than requests")
		}
		var a, b any
		json.Unmarshal(line.Body, &a)
		json.Unmarshal(bodies[i], &b)
		if line.Provider != "anthropic" || line.URL != url || !reflect.DeepEqual(a, b) {
			t.Fatalf("trace line %d: provider %q url %q body %s\nsent %s", i+1, line.Provider, line.URL, line.Body, bodies[i])
		}
		i++
	}
	if i != len(bodies) {
		t.Fatalf("trace has %d lines, want %d", i, len(bodies))
	}
}

func TestCompact(t *testing.T) {
	t.Parallel()
	srv := newServer(t, "compact", "")
	p := newProvider(t, srv.URL, "", 2048)
	msgs := []provider.Message{{Role: provider.RoleUser, Text: "list the files"}, thinkingTurn,
		{Role: provider.RoleTool, ToolCallID: "toolu_1", Text: "a.txt"},
		{Role: provider.RoleTool, ToolCallID: "toolu_2", Text: ""}}
	got, err := p.Compact(context.Background(), provider.Request{Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if got != "User wants file listings." {
		t.Fatalf("summary %q", got)
	}
	checkBody(t, "compact", srv.bodies[0])
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	if _, err := New(provider.Config{}); err == nil || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Fatalf("want a key error, got %v", err)
	}
	if _, err := New(provider.Config{APIKey: "k", ThinkingBudget: 100}); err == nil || !strings.Contains(err.Error(), "1024") {
		t.Fatalf("want a budget error, got %v", err)
	}
}
