// Package mcp connects a session to Model Context Protocol servers (stdio
// and streamable HTTP, through the official Go SDK) and offers their tools
// to the model as mcp__<server>__<tool>. A server that does not start, or
// fails later, costs only its own tools: the reason is reported once and
// every turn goes on without it. A stdio server runs under the spawn
// helper, like the tools' commands, so its whole process tree ends with
// the session; a call that gets no answer within the server's call
// timeout ends as a tool error, so a hung server costs that call.
//
// MCP tools act outside the workspace (a database, a browser, an API), so
// their results are marked External: a rewind cannot undo what they did,
// and the preview says so.
package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/secret"
	"github.com/yolop-dev/yolop/internal/spawn"
)

// Server configures one MCP server: a command (stdio) or a URL
// (streamable HTTP).
type Server struct {
	Name    string
	Command string
	Args    []string
	// Env is the whole environment a stdio server gets besides PATH, HOME,
	// TMPDIR, LANG and USER: nothing of yolop's own (no API keys), but
	// every variable named here, the server's own tokens included.
	Env     map[string]string
	URL     string
	Headers map[string]string
	// CallTimeout bounds one call of the server's tools: 0 means
	// DefaultCallTimeout, a negative value no limit.
	CallTimeout time.Duration
}

// Validate reports a configuration that cannot work.
func (s Server) Validate() error {
	switch {
	case s.Name == "":
		return errors.New("mcp: a server has no name")
	case s.Command == "" && s.URL == "":
		return fmt.Errorf("mcp server %q: set command (a stdio server) or url (streamable HTTP)", s.Name)
	case s.Command != "" && s.URL != "":
		return fmt.Errorf("mcp server %q: set either command or url, not both", s.Name)
	}
	return nil
}

// StartTimeout bounds connecting to a server and listing its tools.
const StartTimeout = 30 * time.Second

// DefaultCallTimeout bounds one tool call of a server whose settings name
// no timeout: a server that never answers costs that call, not the turn.
const DefaultCallTimeout = 120 * time.Second

// stopWait is how long a stdio server may take to exit once its stdin is
// closed; then it is killed with everything it started.
const stopWait = 2 * time.Second

// killWait bounds the wait for a killed server's processes to be gone.
const killWait = 10 * time.Second

// Manager holds the session's connections.
type Manager struct {
	mu       sync.Mutex
	sessions []*sdk.ClientSession
	tools    []tools.Tool
	problems []string
}

// Start connects to every server and lists its tools. Root is the session
// worktree, given to servers as their root. A stdio server runs under the
// spawn helper, like the tools' commands (a subreaper that ends its whole
// process tree when the server exits, is stopped, or yolop dies); prepare,
// when non-nil, completes its spec before it starts (the session's
// process ledger, marker and sandbox), and an error keeps that server
// from starting. Start never fails as a whole: see Problems.
func Start(ctx context.Context, servers []Server, root string, prepare func(*spawn.Spec) error) *Manager {
	m := &Manager{}
	used := map[string]bool{}
	for _, s := range servers {
		if err := s.Validate(); err != nil {
			m.problems = append(m.problems, err.Error())
			continue
		}
		cs, list, err := connect(ctx, s, root, prepare)
		if err != nil {
			m.problems = append(m.problems, fmt.Sprintf("MCP server %s did not start: %v; its tools are not available", s.Name, err))
			continue
		}
		m.sessions = append(m.sessions, cs)
		for _, t := range list {
			if why := badSchema(t.InputSchema); why != "" {
				// Providers reject a request whose tool schema is not an
				// object schema: offering it would fail every turn.
				m.problems = append(m.problems, fmt.Sprintf("MCP server %s: tool %s is not offered: its input schema %s", s.Name, t.Name, why))
				continue
			}
			name := ToolName(s.Name, t.Name, used)
			used[name] = true
			timeout := s.CallTimeout
			if timeout == 0 {
				timeout = DefaultCallTimeout
			}
			m.tools = append(m.tools, &tool{server: s.Name, remote: t, name: name, cs: cs, timeout: timeout})
		}
	}
	return m
}

func connect(ctx context.Context, s Server, root string, prepare func(*spawn.Spec) error) (*sdk.ClientSession, []*sdk.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "yolop", Version: "1"}, nil)
	if root != "" {
		// Roots are deprecated from protocol 2026-07-28 on but still the
		// way servers of earlier versions (most of them) learn where to
		// work: the session's worktree, never the user's checkout.
		//lint:ignore SA1019 servers before 2026-07-28 read their roots
		client.AddRoots(&sdk.Root{URI: "file://" + root, Name: "session worktree"})
	}
	var t sdk.Transport
	if s.URL != "" {
		hc := &http.Client{}
		if len(s.Headers) > 0 {
			hc.Transport = headerTransport{base: http.DefaultTransport, headers: s.Headers}
		}
		t = &sdk.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc, MaxRetries: -1}
	} else {
		// The command starts through the sandbox's supervisor, so a
		// missing program would surface only as a closed connection.
		if _, own := s.Env["PATH"]; !own || strings.Contains(s.Command, "/") {
			if _, err := exec.LookPath(s.Command); err != nil {
				return nil, nil, fmt.Errorf("its command cannot be run: %w", err)
			}
		}
		spec := spawn.Spec{
			Args: append([]string{s.Command}, s.Args...), Dir: root, Env: serverEnv(s.Env),
			Task: "mcp:" + s.Name, Command: strings.Join(append([]string{"MCP server " + s.Name + ":", s.Command}, s.Args...), " "),
		}
		if prepare != nil {
			if err := prepare(&spec); err != nil {
				return nil, nil, err
			}
		}
		srv, err := startServer(spec)
		if err != nil {
			return nil, nil, err
		}
		t = srv
	}
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		if srv, ok := t.(*stdioServer); ok {
			err = errors.Join(err, srv.Close())
		}
		return nil, nil, err
	}
	var list []*sdk.Tool
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			cs.Close()
			return nil, nil, fmt.Errorf("list its tools: %w", err)
		}
		list = append(list, tl)
	}
	return cs, list, nil
}

// badSchema says why a tool's input schema would make providers refuse
// the request ("" when it is a JSON object schema).
func badSchema(schema any) string {
	raw, err := json.Marshal(schema)
	if err != nil {
		return "cannot be encoded: " + err.Error()
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return "is not a JSON object"
	}
	if t, ok := m["type"]; ok && t != "object" {
		return fmt.Sprintf("has type %v, not object", t)
	}
	return ""
}

// serverEnv is the environment of a stdio server: the basics a program
// needs to run, and what its configuration names.
func serverEnv(extra map[string]string) []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "LANG", "USER"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+extra[k])
	}
	return env
}

// stdioServer is a stdio server running under the spawn helper, and the
// transport to it: its stdin and stdout are pipes.
type stdioServer struct {
	proc    *spawn.Proc
	in, out *os.File // our ends: the server's stdin, its stdout
	once    sync.Once
	err     error
}

func startServer(spec spawn.Spec) (*stdioServer, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	// A server's stderr is its own log; it never reaches the terminal UI.
	proc, err := spawn.StartIO(spec, inR, outW, nil)
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	return &stdioServer{proc: proc, in: inW, out: outR}, nil
}

// Connect implements sdk.Transport.
func (s *stdioServer) Connect(ctx context.Context) (sdk.Connection, error) {
	return (&sdk.IOTransport{Reader: io.NopCloser(s.out), Writer: s}).Connect(ctx)
}

func (s *stdioServer) Write(p []byte) (int, error) { return s.in.Write(p) }

// Close ends the server as the protocol asks (its stdin closed, then a
// wait for it to exit) and then its helper ends whatever it left
// running; a server that does not exit is killed with its whole tree.
func (s *stdioServer) Close() error {
	s.once.Do(func() {
		s.in.Close()
		select {
		case <-s.proc.Done():
		case <-time.After(stopWait):
			s.proc.Kill()
			select {
			case <-s.proc.Done():
			case <-time.After(killWait):
				s.err = fmt.Errorf("MCP server (pid %d) did not exit within %s of SIGKILL; it may be stuck in the kernel", s.proc.PID, killWait)
			}
		}
		s.out.Close()
	})
	return s.err
}

type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

// Tools are the tools of every server that started.
func (m *Manager) Tools() []tools.Tool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]tools.Tool(nil), m.tools...)
}

// Problems say which servers did not start, and why, redacted: a
// server's error can quote its URL or arguments.
func (m *Manager) Problems() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.problems))
	for _, why := range m.problems {
		out = append(out, secret.Redact(why))
	}
	return out
}

// Close stops every server.
func (m *Manager) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, cs := range m.sessions {
		if err := cs.Close(); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	m.sessions = nil
	return errors.Join(errs...)
}

var nameRE = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// ToolName is the model-facing name of a server's tool:
// mcp__<server>__<tool> with every character outside [a-zA-Z0-9_-]
// replaced by _, at most 64 characters; a name that had to be cut, or that
// is already taken, ends in a short hash of the original instead.
func ToolName(server, tool string, taken map[string]bool) string {
	full := "mcp__" + server + "__" + tool
	name := nameRE.ReplaceAllString(full, "_")
	if len(name) <= 64 && !taken[name] {
		return name
	}
	sum := sha256.Sum256([]byte(full))
	suffix := "_" + hex.EncodeToString(sum[:4])
	if len(name) > 64-len(suffix) {
		name = name[:64-len(suffix)]
	}
	return name + suffix
}

// tool is one server tool offered to the model.
type tool struct {
	server  string
	remote  *sdk.Tool
	name    string
	cs      *sdk.ClientSession
	timeout time.Duration // < 0: none
}

func (t *tool) Kind() string { return tools.KindOther }

func (t *tool) Spec() tools.Spec {
	schema, err := json.Marshal(t.remote.InputSchema)
	if err != nil || string(schema) == "null" {
		schema = []byte(`{"type":"object"}`)
	}
	desc := t.remote.Description
	if desc == "" {
		desc = t.remote.Name
	}
	return tools.Spec{Name: t.name, Description: fmt.Sprintf("[MCP server %s; acts outside the workspace: a rewind cannot undo it] %s", t.server, desc), Parameters: schema}
}

func (t *tool) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	disp := &tools.Display{Kind: tools.KindOther, Title: t.server + ": " + t.remote.Name}
	var a map[string]any
	if err := json.Unmarshal(args, &a); err != nil {
		return tools.Result{Content: "arguments must be a JSON object: " + err.Error(), IsError: true, Display: disp, External: true}, nil
	}
	call := ctx
	if t.timeout > 0 {
		var cancel context.CancelFunc
		call, cancel = context.WithTimeout(ctx, t.timeout)
		defer cancel()
	}
	res, err := t.cs.CallTool(call, &sdk.CallToolParams{Name: t.remote.Name, Arguments: a})
	if err != nil {
		if ctx.Err() != nil {
			// The turn was cancelled (Ctrl+C, an editor's cancel).
			return tools.Result{}, ctx.Err()
		}
		if call.Err() != nil {
			// Only the call ends: the model reads why and goes on; the
			// server was told to cancel the request.
			return tools.Result{Content: fmt.Sprintf("the MCP server %s did not answer %s within %s; the call was abandoned (the limit is timeout in [mcp.servers.%s] or [mcp] call_timeout in yolop's settings.toml)", t.server, t.remote.Name, t.timeout, t.server), IsError: true, Display: disp, External: true}, nil
		}
		// A server that crashed or answered nonsense costs this call, not
		// the turn: the model reads why and can go on without it.
		return tools.Result{Content: fmt.Sprintf("the MCP server %s failed: %v", t.server, err), IsError: true, Display: disp, External: true}, nil
	}
	return tools.Result{Content: resultText(res), IsError: res.IsError, Display: disp, External: true}, nil
}

// resultText flattens a tool result for the model.
func resultText(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		switch c := c.(type) {
		case *sdk.TextContent:
			b.WriteString(c.Text)
		case *sdk.ImageContent:
			fmt.Fprintf(&b, "[image, %s, %d bytes]", c.MIMEType, len(c.Data))
		case *sdk.AudioContent:
			fmt.Fprintf(&b, "[audio, %s, %d bytes]", c.MIMEType, len(c.Data))
		case *sdk.ResourceLink:
			fmt.Fprintf(&b, "[resource %s]", c.URI)
		case *sdk.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				b.WriteString(c.Resource.Text)
			} else if c.Resource != nil {
				fmt.Fprintf(&b, "[resource %s]", c.Resource.URI)
			}
		default:
			raw, _ := json.Marshal(c)
			b.Write(raw)
		}
	}
	if b.Len() == 0 && res.StructuredContent != nil {
		raw, err := json.Marshal(res.StructuredContent)
		if err == nil {
			b.Write(raw)
		}
	}
	if b.Len() == 0 {
		b.WriteString("(no content)")
	}
	return b.String()
}
