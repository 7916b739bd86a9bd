package openai

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

const secret = "sk-test-secret-4f2a"

// fakeServer serves a recorded SSE fixture per request and records bodies
// and headers.
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
		if r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "unexpected path "+r.URL.Path, http.StatusNotFound)
			return
		}
		if mode == "401" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
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
			// Abort without finishing the chunked body: the client sees a
			// broken connection, as when a proxy drops it mid-stream.
			panic(http.ErrAbortHandler)
		}
	}))
	t.Cleanup(fs.Close)
	return fs
}

func newProvider(t *testing.T, url, trace string) *Provider {
	t.Helper()
	p, err := New(provider.Config{Model: "gpt-test", BaseURL: url + "/v1", APIKey: secret, TracePath: trace})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkBody compares the received body with testdata/<name>.request.json.
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
	Name:        "write_file",
	Description: "Write a file.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`),
}, {
	Name:        "bash",
	Description: "Run a shell command.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`),
}}

// history is a conversation as the agent materializes it: an earlier turn
// with tool calls and results, including reasoning from other providers
// that must not be sent.
var history = []provider.Message{
	{Role: provider.RoleUser, Text: "create a.txt"},
	{Role: provider.RoleAssistant, Text: "Creating it.",
		Reasoning: []provider.Reasoning{{Provider: "anthropic", Text: "plan", Signature: "sig"}, {Provider: "sim", Text: "x", Signature: "y"}},
		ToolCalls: []provider.ToolCall{{ID: "call_1", Name: "write_file", Arguments: `{"path":"a.txt","content":"hi\n"}`}, {ID: "call_2", Name: "bash", Arguments: `{"command":`}}},
	{Role: provider.RoleTool, ToolCallID: "call_1", ToolName: "write_file", Text: "wrote 3 bytes"},
	{Role: provider.RoleTool, ToolCallID: "call_2", ToolName: "bash", Text: "arguments are not valid JSON", IsError: true},
	{Role: provider.RoleAssistant, Text: "Done."},
	{Role: provider.RoleUser, Text: "now list files"},
}

func TestStream(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		fixture   string
		mode      string
		req       provider.Request
		want      provider.Response
		reasoning string
		errHas    string
	}{
		{
			name:    "text",
			fixture: "text",
			req:     provider.Request{System: "You are terse.", Messages: []provider.Message{{Role: provider.RoleUser, Text: "say hello"}}},
			want: provider.Response{
				Message:    provider.Message{Role: provider.RoleAssistant, Text: "Hello, world"},
				StopReason: provider.StopEndTurn,
				Usage:      provider.Usage{InputTokens: 4, OutputTokens: 5, CacheReadTokens: 8},
			},
			reasoning: "thinking aloud",
		},
		{
			name:    "tools",
			fixture: "tools",
			req:     provider.Request{System: "sys", Messages: history, Tools: tools},
			want: provider.Response{
				Message: provider.Message{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{
					{ID: "call_a", Name: "write_file", Arguments: `{"path":"a.txt","content":"hi\n"}`},
					{ID: "call_b", Name: "bash", Arguments: `{"command":"ls"}`},
				}},
				StopReason: provider.StopToolUse,
			},
		},
		{name: "midstream_error", fixture: "midstream_error", req: provider.Request{Messages: history[:1]}, errHas: "error mid-stream: The server had an error"},
		{name: "closed", fixture: "closed", mode: "closed", req: provider.Request{Messages: history[:1]}, errHas: "broke mid-stream"},
		{name: "ended_early", fixture: "ended_early", req: provider.Request{Messages: history[:1]}, errHas: "closed the stream before the response was complete"},
		{name: "unauthorized", mode: "401", req: provider.Request{Messages: history[:1]}, errHas: "API key rejected"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, tc.fixture, tc.mode)
			trace := filepath.Join(t.TempDir(), "trace.jsonl")
			p := newProvider(t, srv.URL, trace)
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
				if text.String() != tc.want.Message.Text || reasoning.String() != tc.reasoning {
					t.Fatalf("deltas text %q reasoning %q", text.String(), reasoning.String())
				}
				checkBody(t, tc.name, srv.bodies[0])
			}
			if len(srv.bodies) != 1 {
				t.Fatalf("server saw %d requests, want 1", len(srv.bodies))
			}
			if got := srv.headers[0].Get("Authorization"); got != "Bearer "+secret {
				t.Fatalf("Authorization header %q", got)
			}
			checkTrace(t, trace, srv.URL+"/v1/chat/completions", srv.bodies)
		})
	}
}

// checkTrace asserts one line per request holding exactly the body sent,
// owner-only, with no credential anywhere.
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
		if line.Provider != "openai" || line.URL != url || !reflect.DeepEqual(a, b) {
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
	p := newProvider(t, srv.URL, "")
	got, err := p.Compact(context.Background(), provider.Request{System: "sys", Messages: history, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if got != "The user asked for a.txt." {
		t.Fatalf("summary %q", got)
	}
	checkBody(t, "compact", srv.bodies[0])
}

func TestCancel(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	p := newProvider(t, srv.URL, "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := p.Stream(ctx, provider.Request{Messages: history[:1]}, nil)
		done <- err
	}()
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

func TestNewNeedsKeyOrBaseURL(t *testing.T) {
	t.Parallel()
	if _, err := New(provider.Config{}); err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Fatalf("want a key error, got %v", err)
	}
	if _, err := New(provider.Config{BaseURL: "http://localhost:11434/v1"}); err != nil {
		t.Fatalf("a local server needs no key: %v", err)
	}
}
