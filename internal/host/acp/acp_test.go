package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/agent"
)

// wireMsg is one message the agent wrote.
type wireMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	raw string
}

// client is a raw JSON-RPC peer over io.Pipe: it writes exact bytes and
// sees exact messages, in order.
type client struct {
	t      *testing.T
	in     *io.PipeWriter
	msgs   chan wireMsg
	served chan error
	cancel context.CancelFunc
	log    *syncBuffer
	id     int
	// early holds responses that arrived while another request was awaited
	// (two requests in flight may be answered in either order).
	early map[string]wireMsg
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func connect(t *testing.T, opener Opener) *client {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	c := &client{t: t, in: inW, msgs: make(chan wireMsg, 256), served: make(chan error, 1), cancel: cancel, log: &syncBuffer{}}
	go func() {
		err := Serve(ctx, inR, outW, opener, c.log)
		outW.Close()
		c.served <- err
	}()
	go func() {
		defer close(c.msgs)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var m wireMsg
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m.Method = "!unparseable"
			}
			m.raw = sc.Text()
			c.msgs <- m
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		cancel()
		for range c.msgs {
		}
		<-c.served
	})
	return c
}

func (c *client) writeLine(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, s+"\n"); err != nil {
		c.t.Fatalf("write to agent: %v", err)
	}
}

// send writes a request and returns its id.
func (c *client) send(method string, params any) int {
	c.t.Helper()
	c.id++
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if err != nil {
		c.t.Fatal(err)
	}
	c.writeLine(string(b))
	return c.id
}

func (c *client) notify(method string, params any) {
	c.t.Helper()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	c.writeLine(string(b))
}

// next returns the agent's next message. The deadline only keeps a broken
// build from hanging the test run; no assertion depends on timing.
func (c *client) next() wireMsg {
	c.t.Helper()
	select {
	case m, ok := <-c.msgs:
		if !ok {
			c.t.Fatalf("agent closed its output\nlog:\n%s", c.log.String())
		}
		return m
	case <-time.After(20 * time.Second):
		c.t.Fatalf("no message from the agent\nlog:\n%s", c.log.String())
	}
	return wireMsg{}
}

// await returns the notifications received before the response to id,
// and the response.
func (c *client) await(id int) ([]wireMsg, wireMsg) {
	c.t.Helper()
	want := fmt.Sprint(id)
	if m, ok := c.early[want]; ok {
		delete(c.early, want)
		return nil, m
	}
	var before []wireMsg
	for {
		m := c.next()
		if m.Method == "" && string(m.ID) == want {
			return before, m
		}
		if m.Method == "" && len(m.ID) > 0 && string(m.ID) != "null" {
			if c.early == nil {
				c.early = map[string]wireMsg{}
			}
			c.early[string(m.ID)] = m
			continue
		}
		before = append(before, m)
	}
}

func (c *client) call(method string, params any) ([]wireMsg, wireMsg) {
	c.t.Helper()
	return c.await(c.send(method, params))
}

// updates extracts the update objects of session/update notifications.
func updates(t *testing.T, ms []wireMsg) []string {
	t.Helper()
	var out []string
	for _, m := range ms {
		if m.Method != "session/update" {
			t.Fatalf("unexpected message %s", m.raw)
		}
		var p struct {
			Update json.RawMessage `json:"update"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, canon(t, string(p.Update)))
	}
	return out
}

// canon re-encodes JSON with sorted keys so literals compare exactly.
func canon(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad JSON %s: %v", s, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func mustEqualJSON(t *testing.T, got []string, want ...string) {
	t.Helper()
	for i := range want {
		want[i] = canon(t, want[i])
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("updates differ\ngot:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// messageText concatenates the agent_message_chunk texts.
func messageText(t *testing.T, ms []wireMsg) string {
	t.Helper()
	var b strings.Builder
	for _, u := range updates(t, ms) {
		var v struct {
			SessionUpdate string `json:"sessionUpdate"`
			Content       struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		_ = json.Unmarshal([]byte(u), &v)
		if v.SessionUpdate == "agent_message_chunk" {
			b.WriteString(v.Content.Text)
		}
	}
	return b.String()
}

func stopReason(t *testing.T, resp wireMsg) string {
	t.Helper()
	if resp.Error != nil {
		t.Fatalf("prompt failed: %s", resp.raw)
	}
	var r struct {
		StopReason string `json:"stopReason"`
	}
	if err := json.Unmarshal(resp.Result, &r); err != nil {
		t.Fatal(err)
	}
	return r.StopReason
}

const commandsUpdate = `{"sessionUpdate":"available_commands_update","availableCommands":[
 {"name":"rewind","description":"List checkpoints, or preview and confirm restoring the conversation and/or files to before a turn","input":{"hint":"[checkpoint] [both|conversation|workspace] [--confirm token]"}},
 {"name":"undo","description":"Preview and confirm undoing the most recent turn (conversation and files)","input":{"hint":"[--confirm token]"}},
 {"name":"redo","description":"Preview and confirm restoring what the last rewind or undo abandoned","input":{"hint":"[--confirm token]"}},
 {"name":"branches","description":"List the conversation's branches: the active one and every one a rewind abandoned (b1, b2, …)"},
 {"name":"branch","description":"Preview and confirm switching to another branch as it was left, conversation and files; /redo switches back","input":{"hint":"<branch> [both|conversation|workspace] [--confirm token]"}},
 {"name":"compact","description":"Summarize the conversation so far to free model context (the full log is kept)"},
 {"name":"tasks","description":"List running background shell tasks, or stop one","input":{"hint":"[stop <id>]"}},
 {"name":"context","description":"Show what the model is given: project instructions (AGENTS.md) with their sizes, the context size and token usage"},
 {"name":"diff","description":"Show the session's work: its files against the commit its worktree started from (or a checkpoint)","input":{"hint":"[checkpoint]"}},
 {"name":"apply","description":"Preview, then merge the session's work into your checkout as uncommitted changes (undo takes it back)","input":{"hint":"[refuse|markers|undo] [--confirm token]"}},
 {"name":"commit","description":"Commit the session's files on its own branch (then git merge it from your checkout)","input":{"hint":"[message]"}}]}`

// newSession initializes and creates a session, consuming the commands
// update that follows the response.
func (c *client) newSession() string {
	c.t.Helper()
	if _, r := c.call("initialize", map[string]any{"protocolVersion": 1}); r.Error != nil {
		c.t.Fatalf("initialize: %s", r.raw)
	}
	before, r := c.call("session/new", map[string]any{"cwd": "/repo", "mcpServers": []any{}})
	if r.Error != nil || len(before) != 0 {
		c.t.Fatalf("session/new: %s (after %d messages)", r.raw, len(before))
	}
	var res struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(r.Result, &res)
	mustEqualJSON(c.t, updates(c.t, []wireMsg{c.next()}), commandsUpdate)
	return res.SessionID
}

func (c *client) prompt(sid, text string) ([]wireMsg, wireMsg) {
	c.t.Helper()
	return c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}})
}

func TestInitialize(t *testing.T) {
	t.Parallel()
	c := connect(t, newFakeOpener(t.TempDir()))
	before, r := c.call("initialize", map[string]any{"protocolVersion": 1, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	if len(before) != 0 || r.Error != nil {
		t.Fatalf("initialize: %s", r.raw)
	}
	want := `{"protocolVersion":1,"authMethods":[],"agentInfo":{"name":"yolop","version":"` + version() + `"},
	  "agentCapabilities":{"loadSession":true,"sessionCapabilities":{"close":{}},"auth":{},"mcpCapabilities":{"http":true},"promptCapabilities":{}}}`
	if got := canon(t, string(r.Result)); got != canon(t, want) {
		t.Fatalf("initialize result\ngot  %s\nwant %s", got, canon(t, want))
	}
}

func TestNewSessionAdvertisesCommandsAfterResponse(t *testing.T) {
	t.Parallel()
	c := connect(t, newFakeOpener(t.TempDir()))
	// newSession asserts: nothing before the response, then exactly the
	// commands update (rewind, undo, redo, compact, tasks; no TUI-only
	// /clear or /quit, no /help).
	if sid := c.newSession(); sid != "s_001" {
		t.Fatalf("session id %q", sid)
	}
}

func TestPromptStreamsTurnAsUpdates(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	c := connect(t, newFakeOpener(root))
	sid := c.newSession()
	before, r := c.prompt(sid, "think plan first\nwrite a.txt\nhello\nEOF\n$ ls\nthanks")
	if got := stopReason(t, r); got != "end_turn" {
		t.Fatalf("stop reason %q", got)
	}
	wt := root + "/worktree"
	mustEqualJSON(t, updates(t, before),
		`{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"plan first"}}`,
		`{"sessionUpdate":"tool_call","toolCallId":"call_cp1_1","title":"write a.txt","kind":"edit","status":"in_progress",
		  "rawInput":{"path":"a.txt"},"locations":[{"path":"`+wt+`/a.txt"}],
		  "content":[{"type":"diff","path":"`+wt+`/a.txt","newText":"hello\n"}]}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"call_cp1_1","title":"write a.txt","status":"completed",
		  "locations":[{"path":"`+wt+`/a.txt"}],
		  "content":[{"type":"diff","path":"`+wt+`/a.txt","newText":"hello\n"},{"type":"content","content":{"type":"text","text":"wrote a.txt"}}]}`,
		`{"sessionUpdate":"tool_call","toolCallId":"call_cp1_2","title":"bash: ls","kind":"execute","status":"in_progress","rawInput":{"command":"ls"}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"call_cp1_2","title":"bash: ls","status":"failed",
		  "content":[{"type":"content","content":{"type":"text","text":"exit status 127"}}]}`,
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"done: 2 actions\nthanks"}}`,
	)
}

// The worktree's setup command is shown as a command: its first update
// starts a tool call, the later ones (its output so far, its end) update
// it.
func TestSetupIsShownAsACommand(t *testing.T) {
	t.Parallel()
	c := connect(t, newFakeOpener(t.TempDir()))
	sid := c.newSession()
	before, r := c.prompt(sid, "setup npm ci")
	if got := stopReason(t, r); got != "end_turn" {
		t.Fatalf("stop reason %q", got)
	}
	mustEqualJSON(t, updates(t, before),
		`{"sessionUpdate":"tool_call","toolCallId":"setup","title":"setup: npm ci","kind":"execute","status":"in_progress","rawInput":{"command":"npm ci"}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"setup","title":"setup: npm ci","status":"in_progress",
		  "content":[{"type":"content","content":{"type":"text","text":"installing\n"}}]}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"setup","title":"setup: npm ci","status":"failed",
		  "content":[{"type":"content","content":{"type":"text","text":"installing\nregistry unreachable\n"}}]}`,
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"done: 0 actions"}}`,
	)
}

func TestFailedTurnIsShownAndEndsNormally(t *testing.T) {
	t.Parallel()
	tests := []struct{ prompt, want string }{
		{"fail", "\nError: provider said no\n"},                   // streamed error, not repeated
		{"fail quietly", "\nThe turn failed: connection reset\n"}, // only in the result
	}
	for _, tt := range tests {
		t.Run(tt.prompt, func(t *testing.T) {
			t.Parallel()
			c := connect(t, newFakeOpener(t.TempDir()))
			sid := c.newSession()
			before, r := c.prompt(sid, tt.prompt)
			if got := stopReason(t, r); got != "end_turn" {
				t.Fatalf("stop reason %q", got)
			}
			if got := messageText(t, before); got != tt.want {
				t.Fatalf("message %q, want %q", got, tt.want)
			}
		})
	}
}

var confirmRE = regexp.MustCompile(`(?m)^(/\S+.* --confirm ([A-Za-z0-9_-]+))$`)

func TestRewindIsTwoStep(t *testing.T) {
	t.Parallel()
	o := newFakeOpener(t.TempDir())
	c := connect(t, o)
	sid := c.newSession()
	for _, p := range []string{"write a.txt\none\nEOF", "write b.txt\ntwo\nEOF", "write c.txt\nthree\nEOF"} {
		if _, r := c.prompt(sid, p); stopReason(t, r) != "end_turn" {
			t.Fatal(r.raw)
		}
	}

	before, r := c.prompt(sid, "/rewind")
	list := messageText(t, before)
	if stopReason(t, r) != "end_turn" || !strings.HasPrefix(list, "ID ") ||
		!regexp.MustCompile(`(?m)^cp2 +Jan 2 10:01:00 +completed +1 +yes +write b.txt …$`).MatchString(list) || strings.Index(list, "cp3") > strings.Index(list, "cp1") {
		t.Fatalf("list:\n%s", list)
	}

	before, r = c.prompt(sid, "/rewind cp2 both")
	preview := messageText(t, before)
	if stopReason(t, r) != "end_turn" {
		t.Fatal(r.raw)
	}
	for _, want := range []string{
		"Rewind preview — back to before cp2 — restores: conversation and workspace\n",
		"Turns leaving the active conversation (2; kept, /redo brings them back):\n  cp2  write b.txt …\n  cp3  write c.txt …\n",
		"Files that will change (1):\n  deleted      a.txt\n",
		"Changed outside agent turns since the last turn ended (the recovery checkpoint keeps them):\n  notes.md\n",
		"recovery checkpoint r1",
		"Confirmation token: tok1\n",
	} {
		if !strings.Contains(preview, want) {
			t.Fatalf("preview lacks %q:\n%s", want, preview)
		}
	}
	m := confirmRE.FindStringSubmatch(preview)
	if m == nil || m[1] != "/rewind cp2 both --confirm tok1" || m[2] != "tok1" {
		t.Fatalf("no confirm line in preview:\n%s", preview)
	}
	if n := len(o.session(sid).Transcript()); n != 9 {
		t.Fatalf("a preview changed the transcript: %d items", n)
	}

	before, r = c.prompt(sid, m[1])
	restored := messageText(t, before)
	if stopReason(t, r) != "end_turn" {
		t.Fatal(r.raw)
	}
	// The controller's summary, once (as in print mode).
	if !strings.HasPrefix(restored, "Restored cp2; recovery checkpoint r1 holds the previous state.\nTurns shown above") ||
		!strings.HasSuffix(restored, "\nRestored prompt (edit and resend):\nwrite b.txt\ntwo\nEOF\n") {
		t.Fatalf("restored:\n%s", restored)
	}
	if n := len(o.session(sid).Transcript()); n != 3 {
		t.Fatalf("after the rewind the transcript has %d items, want 3 (turn 1)", n)
	}

	// The token is single use: a second confirm is refused as a message.
	before, r = c.prompt(sid, m[1])
	if got := messageText(t, before); stopReason(t, r) != "end_turn" || got != `Refused (unknown_token): unknown confirmation token "tok1": run the preview again` {
		t.Fatalf("reused token: %q %s", got, r.raw)
	}
}

func TestCommandsAndRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		prompt string
		want   string // the whole agent message
		prefix bool
	}{
		{"/undo", "Undo preview — back to before cp1 — restores: conversation and workspace\n", true},
		{"/redo", "Refused (nothing_to_redo): nothing to redo: no restore has abandoned a branch", false},
		{"/rewind cp9", "Refused (unknown_checkpoint): no checkpoint cp9 on the active branch; run /rewind to list them", false},
		{"/rewind banana", `Usage: /rewind: "banana" is not a checkpoint id (like cp3 or 3); run /rewind to list them`, false},
		{"/rewind cp1 both --confirm nope", `Refused (unknown_token): unknown confirmation token "nope": run the preview again`, false},
		{"/frobnicate", "Usage: unknown command /frobnicate: known commands are", true},
		{"/clear", "/clear is not available in an editor. Commands here: /rewind, /undo, /redo, /branches, /branch, /compact, /tasks, /context, /diff, /apply, /commit", false},
		{"/quit", "/quit is not available in an editor. Commands here: /rewind, /undo, /redo, /branches, /branch, /compact, /tasks, /context, /diff, /apply, /commit", false},
		{"/compact", "Compacted 3 turns.", false},
	}
	for _, tt := range tests {
		t.Run(tt.prompt, func(t *testing.T) {
			t.Parallel()
			c := connect(t, newFakeOpener(t.TempDir()))
			sid := c.newSession()
			if _, r := c.prompt(sid, "hello"); stopReason(t, r) != "end_turn" {
				t.Fatal(r.raw)
			}
			before, r := c.prompt(sid, tt.prompt)
			if r.Error != nil {
				t.Fatalf("a refusal must not be a JSON-RPC error: %s", r.raw)
			}
			got := messageText(t, before)
			if stopReason(t, r) != "end_turn" || (tt.prefix && !strings.HasPrefix(got, tt.want)) || (!tt.prefix && got != tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestUndoConfirmRestoresPrompt(t *testing.T) {
	t.Parallel()
	c := connect(t, newFakeOpener(t.TempDir()))
	sid := c.newSession()
	c.prompt(sid, "first")
	c.prompt(sid, "second")
	before, _ := c.prompt(sid, "/undo")
	m := confirmRE.FindStringSubmatch(messageText(t, before))
	if m == nil || m[1] != "/undo --confirm tok1" {
		t.Fatalf("preview: %s", messageText(t, before))
	}
	before, _ = c.prompt(sid, m[1])
	if got := messageText(t, before); !strings.HasPrefix(got, "Restored cp2; recovery checkpoint r1 holds the previous state.\n") || strings.Contains(got, "Undone:") ||
		!strings.HasSuffix(got, "Restored prompt (edit and resend):\nsecond\n") {
		t.Fatalf("undo: %q", got)
	}
}

func TestPendingPreviewFollowsTheTurn(t *testing.T) {
	t.Parallel()
	c := connect(t, newFakeOpener(t.TempDir()))
	sid := c.newSession()
	before, r := c.prompt(sid, "undo")
	if stopReason(t, r) != "end_turn" {
		t.Fatal(r.raw)
	}
	got := messageText(t, before)
	want := "done: 1 action\n\nThe model asked for a restore. Nothing has changed yet.\n\nUndo preview — back to before cp1 — restores: conversation and workspace\n"
	if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "To confirm, send exactly:\n/undo --confirm tok1\n\nTo cancel, send anything else.") {
		t.Fatalf("got:\n%s", got)
	}
}

// startSleeping begins a turn that runs until cancelled and returns its
// request id once the session reports it running.
func startSleeping(t *testing.T, c *client, o *fakeOpener, sid string) int {
	t.Helper()
	id := c.send("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "sleep"}}})
	select {
	case <-o.session(sid).started:
	case <-time.After(20 * time.Second):
		t.Fatal("the turn did not start")
	}
	return id
}

func TestCancel(t *testing.T) {
	t.Parallel()
	o := newFakeOpener(t.TempDir())
	c := connect(t, o)
	sid := c.newSession()

	// Cancel while idle, and for an unknown session: no-ops, no response.
	c.notify("session/cancel", map[string]any{"sessionId": sid})
	c.notify("session/cancel", map[string]any{"sessionId": "s_nope"})

	id := startSleeping(t, c, o, sid)
	c.notify("session/cancel", map[string]any{"sessionId": sid})
	before, r := c.await(id)
	if len(before) != 0 || stopReason(t, r) != "cancelled" {
		t.Fatalf("cancelled turn: %d updates, %s", len(before), r.raw)
	}
	// The session takes the next prompt.
	if _, r := c.prompt(sid, "again"); stopReason(t, r) != "end_turn" {
		t.Fatal(r.raw)
	}
}

func TestPromptWhileTurnRunsIsAnError(t *testing.T) {
	t.Parallel()
	o := newFakeOpener(t.TempDir())
	c := connect(t, o)
	sid := c.newSession()
	first := startSleeping(t, c, o, sid)

	for _, text := range []string{"second", "/rewind"} {
		_, r := c.prompt(sid, text)
		if r.Error == nil || r.Error.Code != -32600 || !strings.Contains(r.Error.Message, "already running a turn") {
			t.Fatalf("%q during a turn: %s", text, r.raw)
		}
	}
	_, r := c.call("session/load", map[string]any{"sessionId": sid, "cwd": "/repo", "mcpServers": []any{}})
	if r.Error == nil || !strings.Contains(r.Error.Message, "is running a turn") {
		t.Fatalf("load during a turn: %s", r.raw)
	}
	c.notify("session/cancel", map[string]any{"sessionId": sid})
	if _, r := c.await(first); stopReason(t, r) != "cancelled" {
		t.Fatal(r.raw)
	}
}

func TestLoadReplaysActiveBranch(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	o := newFakeOpener(root)
	c := connect(t, o)
	sid := c.newSession()
	c.prompt(sid, "think hmm\nwrite a.txt\nhi\nEOF")
	c.prompt(sid, "second")
	c.prompt(sid, "third")
	before, _ := c.prompt(sid, "/rewind cp2 both")
	m := confirmRE.FindStringSubmatch(messageText(t, before))
	c.prompt(sid, m[1])

	// A new process: the first connection goes away and closes the session.
	c.in.Close()
	for range c.msgs {
	}
	if err := <-c.served; err != nil {
		t.Fatalf("Serve after disconnect: %v", err)
	}
	c.served <- nil // for the cleanup
	if n := o.session(sid).closeCount(); n != 1 {
		t.Fatalf("session closed %d times on disconnect", n)
	}

	c2 := connect(t, o)
	c2.call("initialize", map[string]any{"protocolVersion": 1})
	before, r := c2.call("session/load", map[string]any{"sessionId": sid, "cwd": "/repo", "mcpServers": []any{}})
	if r.Error != nil || string(r.Result) != "{}" {
		t.Fatalf("load: %s", r.raw)
	}
	wt := root + "/worktree"
	mustEqualJSON(t, updates(t, before),
		`{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"think hmm\nwrite a.txt\nhi\nEOF"}}`,
		`{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hmm"}}`,
		`{"sessionUpdate":"tool_call","toolCallId":"call_cp1_1","title":"write a.txt","kind":"edit","status":"completed",
		  "rawInput":{"path":"a.txt"},"locations":[{"path":"`+wt+`/a.txt"}],
		  "content":[{"type":"diff","path":"`+wt+`/a.txt","newText":"hi\n"},{"type":"content","content":{"type":"text","text":"wrote a.txt"}}]}`,
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"done: 1 action"}}`,
	)
	mustEqualJSON(t, updates(t, []wireMsg{c2.next()}), commandsUpdate)

	// The loaded session runs turns.
	if _, r := c2.prompt(sid, "fourth"); stopReason(t, r) != "end_turn" {
		t.Fatal(r.raw)
	}
}

func TestLoadNotesRepairs(t *testing.T) {
	t.Parallel()
	o := newFakeOpener(t.TempDir())
	s, _ := o.New(context.Background(), "/repo", nil)
	fs := s.(*fakeSession)
	fs.repairs = []string{"kept a torn log tail aside in events.jsonl.torn-1"}
	c := connect(t, o)
	_, r := c.call("session/load", map[string]any{"sessionId": s.ID(), "cwd": "/repo", "mcpServers": []any{}})
	if r.Error != nil {
		t.Fatal(r.raw)
	}
	mustEqualJSON(t, updates(t, []wireMsg{c.next(), c.next()}), commandsUpdate,
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"yolop repaired this session when opening it:\n- kept a torn log tail aside in events.jsonl.torn-1\n"}}`)
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	o := newFakeOpener(t.TempDir())
	s, _ := o.New(context.Background(), "/repo", nil)
	o.locked[s.ID()] = true
	c := connect(t, o)
	tests := []struct {
		id, cwd string
		code    int
		want    string
	}{
		{s.ID(), "/repo", -32603, "load session s_001: session s_001 is locked by another yolop process (pid 4242); close it there first"},
		{"s_999", "/repo", -32603, "load session s_999: no session s_999 in the data directory"},
		{s.ID(), "relative", -32602, `cwd must be an absolute path, got "relative"`},
		{"", "/repo", -32602, "sessionId is required"},
	}
	for _, tt := range tests {
		before, r := c.call("session/load", map[string]any{"sessionId": tt.id, "cwd": tt.cwd, "mcpServers": []any{}})
		if len(before) != 0 || r.Error == nil || r.Error.Code != tt.code || r.Error.Message != tt.want {
			t.Errorf("load %q: %s", tt.id, r.raw)
		}
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	c := connect(t, newFakeOpener(t.TempDir()))
	sid := c.newSession()
	tests := []struct {
		name string
		line string
		code int
		want string // substring of the error message
		id   string
	}{
		{"malformed JSON", `{"jsonrpc":"2.0","id":7,"method":`, -32700, "Parse error", "null"},
		{"not an object", `[1,2`, -32700, "Parse error", "null"},
		{"no method", `{"jsonrpc":"2.0","id":8}`, -32600, "a request needs a method", "8"},
		{"unknown method", `{"jsonrpc":"2.0","id":9,"method":"session/frobnicate","params":{}}`, -32601, "method not found: session/frobnicate (yolop supports initialize", "9"},
		{"unknown session", `{"jsonrpc":"2.0","id":10,"method":"session/prompt","params":{"sessionId":"s_nope","prompt":[{"type":"text","text":"hi"}]}}`, -32602, `unknown session "s_nope": create one with session/new or open it with session/load`, "10"},
		{"set mode", `{"jsonrpc":"2.0","id":11,"method":"session/set_mode","params":{"sessionId":"` + sid + `","modeId":"x"}}`, -32601, "yolop has no session modes", "11"},
		{"authenticate", `{"jsonrpc":"2.0","id":12,"method":"authenticate","params":{"methodId":"x"}}`, -32602, "yolop needs no authentication", "12"},
		{"relative cwd", `{"jsonrpc":"2.0","id":13,"method":"session/new","params":{"cwd":"repo","mcpServers":[]}}`, -32602, `cwd must be an absolute path, got "repo"`, "13"},
		{"missing params", `{"jsonrpc":"2.0","id":14,"method":"session/new"}`, -32602, "invalid params", "14"},
		{"image prompt", `{"jsonrpc":"2.0","id":15,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"image","data":"AA==","mimeType":"image/png"}]}}`, -32602, "image content is not supported", "15"},
		{"empty prompt", `{"jsonrpc":"2.0","id":16,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"  "}]}}`, -32602, "the prompt is empty", "16"},
		{"string id", `{"jsonrpc":"2.0","id":"x y","method":"session/list","params":{}}`, -32601, "yolop sessions list", `"x y"`},
	}
	for _, tt := range tests {
		c.writeLine(tt.line)
		m := c.next()
		if m.Method != "" || m.Error == nil || m.Error.Code != tt.code || !strings.Contains(m.Error.Message, tt.want) || string(m.ID) != tt.id {
			t.Errorf("%s: got %s", tt.name, m.raw)
		}
	}
	// The connection survives all of it.
	if _, r := c.prompt(sid, "still here"); stopReason(t, r) != "end_turn" {
		t.Fatal(r.raw)
	}
}

func TestResourceLinksBecomePaths(t *testing.T) {
	t.Parallel()
	c := connect(t, newFakeOpener(t.TempDir()))
	sid := c.newSession()
	before, r := c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{
		map[string]any{"type": "text", "text": "look at "},
		map[string]any{"type": "resource_link", "name": "main.go", "uri": "file:///repo/main.go"},
	}})
	if got := messageText(t, before); stopReason(t, r) != "end_turn" || got != "done: 0 actions\nlook at /repo/main.go" {
		t.Fatalf("got %q", got)
	}
}

func TestDisconnectMidTurnCancelsAndCloses(t *testing.T) {
	t.Parallel()
	o := newFakeOpener(t.TempDir())
	c := connect(t, o)
	sid := c.newSession()
	startSleeping(t, c, o, sid)
	c.in.Close()
	for range c.msgs {
	}
	if err := <-c.served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	c.served <- nil
	fs := o.session(sid)
	fs.mu.Lock()
	cancelled := fs.cancelled
	fs.mu.Unlock()
	if !cancelled || fs.closeCount() != 1 {
		t.Fatalf("turn cancelled=%v, closes=%d", cancelled, fs.closeCount())
	}
}

func TestContextCancelStopsServe(t *testing.T) {
	t.Parallel()
	o := newFakeOpener(t.TempDir())
	c := connect(t, o)
	sid := c.newSession()
	startSleeping(t, c, o, sid)
	c.cancel()
	if err := <-c.served; !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve: %v", err)
	}
	c.served <- nil
	if n := o.session(sid).closeCount(); n != 1 {
		t.Fatalf("closes=%d", n)
	}
}

func TestSessionClose(t *testing.T) {
	t.Parallel()
	o := newFakeOpener(t.TempDir())
	c := connect(t, o)
	sid := c.newSession()
	first := startSleeping(t, c, o, sid)
	closeID := c.send("session/close", map[string]any{"sessionId": sid})
	// The running turn ends cancelled, then the close succeeds.
	if _, r := c.await(first); stopReason(t, r) != "cancelled" {
		t.Fatal(r.raw)
	}
	if _, r := c.await(closeID); r.Error != nil || string(r.Result) != "{}" {
		t.Fatal(r.raw)
	}
	if n := o.session(sid).closeCount(); n != 1 {
		t.Fatalf("closes=%d", n)
	}
	if _, r := c.prompt(sid, "hi"); r.Error == nil || !strings.Contains(r.Error.Message, "unknown session") {
		t.Fatal(r.raw)
	}
}

// TestRefusedToolCall: a call the sandbox refused ends as failed, whatever
// the command's exit code, and its content opens with what was refused.
func TestRefusedToolCall(t *testing.T) {
	t.Parallel()
	ti := &agent.ToolInfo{ID: "c1", Name: "bash", Kind: "execute", Title: "bash: echo x > /etc/x || true",
		Status: "refused", Result: "exit code: 0\n(no output)\nnote: the sandbox (level write) refused writing /etc/x: …",
		Refused: "the sandbox (level write) refused writing /etc/x"}
	for _, started := range []bool{true, false} {
		ups := liveUpdate(agent.Update{Kind: agent.UpdateToolEnd, Tool: ti}, "/wt", map[string]bool{"c1": started})
		b, err := json.Marshal(ups)
		if err != nil {
			t.Fatal(err)
		}
		got := string(b)
		if !strings.Contains(got, `"status":"failed"`) {
			t.Errorf("started=%v: the refused call is not failed: %s", started, got)
		}
		i := strings.Index(got, "Refused by the sandbox: the sandbox (level write) refused writing /etc/x")
		if i < 0 || i > strings.Index(got, "exit code: 0") {
			t.Errorf("started=%v: the content does not open with the refusal: %s", started, got)
		}
	}
}
