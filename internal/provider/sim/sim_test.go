package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/yolop-dev/yolop/internal/provider"
)

func user(text string) provider.Message {
	return provider.Message{Role: provider.RoleUser, Text: text}
}

func newSim(t *testing.T, trace string) *Provider {
	t.Helper()
	p, err := New(provider.Config{TracePath: trace})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFirstStepToolCalls(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		prompt string
		calls  []provider.ToolCall
		text   string
	}{
		{"bash", "$ echo hi > out.txt", []provider.ToolCall{{ID: "call_1", Name: "bash", Arguments: `{"command":"echo hi > out.txt"}`}}, ""},
		{"bash keeps spacing", "$   ls  -la ", []provider.ToolCall{{ID: "call_1", Name: "bash", Arguments: `{"command":"  ls  -la "}`}}, ""},
		{"write with EOF", "write a.txt\nline one\nline two\nEOF\nafter", []provider.ToolCall{{ID: "call_1", Name: "write_file", Arguments: `{"path":"a.txt","content":"line one\nline two\n"}`}}, ""},
		{"write without EOF runs to end", "write a.txt\nx\ny", []provider.ToolCall{{ID: "call_1", Name: "write_file", Arguments: `{"path":"a.txt","content":"x\ny\n"}`}}, ""},
		{"write empty content", "write empty.txt\nEOF", []provider.ToolCall{{ID: "call_1", Name: "write_file", Arguments: `{"path":"empty.txt","content":""}`}}, ""},
		{"keywords inside content", "write s.sh\n$ rm -rf /\nrm x\nundo\nfail\nEOF\nrm y", []provider.ToolCall{
			{ID: "call_1", Name: "write_file", Arguments: `{"path":"s.sh","content":"$ rm -rf /\nrm x\nundo\nfail\n"}`},
			{ID: "call_2", Name: "delete_file", Arguments: `{"path":"y"}`},
		}, ""},
		{"crlf prompt", "write a.txt\r\nx\r\nEOF\r\nrm b\r\n", []provider.ToolCall{
			{ID: "call_1", Name: "write_file", Arguments: `{"path":"a.txt","content":"x\n"}`},
			{ID: "call_2", Name: "delete_file", Arguments: `{"path":"b"}`},
		}, ""},
		{"rm and read", "rm old.txt\nread new.txt", []provider.ToolCall{
			{ID: "call_1", Name: "delete_file", Arguments: `{"path":"old.txt"}`},
			{ID: "call_2", Name: "read_file", Arguments: `{"path":"new.txt"}`},
		}, ""},
		{"undo redo", "undo\nredo", []provider.ToolCall{
			{ID: "call_1", Name: "checkpoint", Arguments: `{"action":"undo"}`},
			{ID: "call_2", Name: "checkpoint", Arguments: `{"action":"redo"}`},
		}, ""},
		{"undo the last turn", "undo the last turn", []provider.ToolCall{{ID: "call_1", Name: "checkpoint", Arguments: `{"action":"undo"}`}}, ""},
		{"rewind with mode", "rewind cp2 workspace", []provider.ToolCall{{ID: "call_1", Name: "checkpoint", Arguments: `{"action":"rewind","target":"cp2","mode":"workspace"}`}}, ""},
		{"rewind without mode", "rewind 3", []provider.ToolCall{{ID: "call_1", Name: "checkpoint", Arguments: `{"action":"rewind","target":"3"}`}}, ""},
		{"write a poem is echoed", "write a poem about x", nil, "write a poem about x"},
		{"rm with two tokens is echoed", "rm a b", nil, "rm a b"},
		{"read with no token is echoed", "read", nil, "read"},
		{"rewind with too many tokens is echoed", "rewind cp1 both now", nil, "rewind cp1 both now"},
		{"branches", "branches", []provider.ToolCall{{ID: "call_1", Name: "checkpoint", Arguments: `{"action":"branches"}`}}, ""},
		{"branch with mode", "branch b2 conversation", []provider.ToolCall{{ID: "call_1", Name: "checkpoint", Arguments: `{"action":"branch","target":"b2","mode":"conversation"}`}}, ""},
		{"branch that is prose is echoed", "branch out", nil, "branch out"},
		{"undo with words is echoed", "undo everything", nil, "undo everything"},
		{"dollar without command is echoed", "$ ", nil, "$ "},
		{"sleep with bad number is echoed", "sleep soon", nil, "sleep soon"},
		{"plain lines echoed, blanks dropped", "hello\n\nworld", nil, "hello\nworld"},
		{"empty prompt", "", nil, "ok"},
		{"whitespace prompt", "  \n\t\n", nil, "ok"},
		{"sleep zero is an instruction", "sleep 0", nil, "ok"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newSim(t, "")
			var streamed strings.Builder
			resp, err := p.Stream(context.Background(), provider.Request{Messages: []provider.Message{user(tc.prompt)}}, func(d provider.Delta) {
				streamed.WriteString(d.Text)
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(resp.Message.ToolCalls, tc.calls) {
				t.Fatalf("tool calls\n got %#v\nwant %#v", resp.Message.ToolCalls, tc.calls)
			}
			if resp.Message.Text != tc.text {
				t.Fatalf("text %q, want %q", resp.Message.Text, tc.text)
			}
			if streamed.String() != tc.text {
				t.Fatalf("streamed %q, want %q", streamed.String(), tc.text)
			}
			for _, c := range resp.Message.ToolCalls {
				if !json.Valid([]byte(c.Arguments)) {
					t.Fatalf("arguments of %s are not JSON: %s", c.Name, c.Arguments)
				}
			}
			wantStop := provider.StopEndTurn
			if len(tc.calls) > 0 {
				wantStop = provider.StopToolUse
			}
			if resp.StopReason != wantStop || resp.Message.Role != provider.RoleAssistant {
				t.Fatalf("stop %q role %q", resp.StopReason, resp.Message.Role)
			}
		})
	}
}

// toolResults answers every call of an assistant message.
func toolResults(m provider.Message) []provider.Message {
	var out []provider.Message
	for _, c := range m.ToolCalls {
		out = append(out, provider.Message{Role: provider.RoleTool, ToolCallID: c.ID, ToolName: c.Name, Text: "ok"})
	}
	return out
}

func TestFullTurnAndReply(t *testing.T) {
	t.Parallel()
	p := newSim(t, "")
	prompt := "think plan the change\nhello there\n$ touch a\nwrite b.txt\nbody\nEOF\nbye"
	msgs := []provider.Message{user(prompt)}
	var reasoning []string
	first, err := p.Stream(context.Background(), provider.Request{Messages: msgs}, func(d provider.Delta) {
		if d.Reasoning != "" {
			reasoning = append(reasoning, d.Reasoning)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Message.ToolCalls) != 2 || first.Message.Text != "" {
		t.Fatalf("first step: %+v", first.Message)
	}
	wantR := []provider.Reasoning{{Provider: "sim", Text: "plan the change", Signature: Sign("plan the change")}}
	if !reflect.DeepEqual(first.Message.Reasoning, wantR) || !reflect.DeepEqual(reasoning, []string{"plan the change"}) {
		t.Fatalf("reasoning %+v, streamed %q", first.Message.Reasoning, reasoning)
	}
	msgs = append(msgs, first.Message)
	msgs = append(msgs, toolResults(first.Message)...)
	var streamed []string
	final, err := p.Stream(context.Background(), provider.Request{Messages: msgs}, func(d provider.Delta) { streamed = append(streamed, d.Text) })
	if err != nil {
		t.Fatal(err)
	}
	want := "done: 2 actions\nhello there\nbye"
	if final.Message.Text != want || strings.Join(streamed, "") != want || len(streamed) < 2 {
		t.Fatalf("final %q, streamed %q", final.Message.Text, streamed)
	}
	if len(final.Message.ToolCalls) != 0 || final.StopReason != provider.StopEndTurn {
		t.Fatalf("final step must end the turn: %+v", final)
	}

	// Second turn: tool call ids continue after those already in context, so
	// they stay unique if the session later moves to a real provider.
	msgs = append(msgs, final.Message, user("rm b.txt"))
	second, err := p.Stream(context.Background(), provider.Request{Messages: msgs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Message.ToolCalls) != 1 || second.Message.ToolCalls[0].ID != "call_3" {
		t.Fatalf("second turn calls %+v", second.Message.ToolCalls)
	}
}

func TestReasoningVerification(t *testing.T) {
	t.Parallel()
	good := provider.Reasoning{Provider: "sim", Text: "secret plan", Signature: Sign("secret plan")}
	tests := []struct {
		name    string
		r       provider.Reasoning
		wantErr bool
	}{
		{"intact", good, false},
		{"text altered", provider.Reasoning{Provider: "sim", Text: "other plan", Signature: good.Signature}, true},
		{"signature altered", provider.Reasoning{Provider: "sim", Text: good.Text, Signature: strings.Repeat("0", 64)}, true},
		{"signature missing", provider.Reasoning{Provider: "sim", Text: good.Text}, true},
		{"other provider ignored", provider.Reasoning{Provider: "anthropic", Text: "x", Signature: "opaque"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newSim(t, "")
			msgs := []provider.Message{
				user("think secret plan"),
				{Role: provider.RoleAssistant, Text: "ok", Reasoning: []provider.Reasoning{tc.r}},
				user("next"),
			}
			_, err := p.Stream(context.Background(), provider.Request{Messages: msgs}, nil)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "altered") {
					t.Fatalf("want an altered-artifact error, got %v", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			_, err = p.Compact(context.Background(), provider.Request{Messages: msgs})
			if (err != nil) != tc.wantErr {
				t.Fatalf("compact err %v, wantErr %v", err, tc.wantErr)
			}
		})
	}
}

func TestFailAndSleepPlacement(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		prompt    string
		failFirst bool
		failReply bool
		calls     int
	}{
		{"fail alone", "fail", true, false, 0},
		{"fail before tools stops them", "fail\n$ touch x", true, false, 0},
		{"fail after tools fails the reply", "$ touch x\nfail\n$ touch y", false, true, 1},
		{"no fail", "$ touch x", false, false, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newSim(t, "")
			msgs := []provider.Message{user(tc.prompt)}
			first, err := p.Stream(context.Background(), provider.Request{Messages: msgs}, nil)
			if tc.failFirst {
				if !errors.Is(err, ErrFail) {
					t.Fatalf("first step: want ErrFail, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(first.Message.ToolCalls) != tc.calls {
				t.Fatalf("calls %d, want %d", len(first.Message.ToolCalls), tc.calls)
			}
			msgs = append(append(msgs, first.Message), toolResults(first.Message)...)
			_, err = p.Stream(context.Background(), provider.Request{Messages: msgs}, nil)
			if tc.failReply != errors.Is(err, ErrFail) {
				t.Fatalf("reply step err %v, want fail=%v", err, tc.failReply)
			}
		})
	}

	// Placement of sleeps is checked on the parsed program; the waits
	// themselves are covered by the cancellation test.
	prog := parse("sleep 5\n$ a\nsleep 7\n$ b\nsleep 11")
	if prog.sleepFirst.Milliseconds() != 12 || prog.sleepReply.Milliseconds() != 11 {
		t.Fatalf("sleep first %v reply %v", prog.sleepFirst, prog.sleepReply)
	}
	prog = parse("sleep 5\nhello")
	if prog.sleepFirst.Milliseconds() != 5 || prog.sleepReply != 0 {
		t.Fatalf("no tools: sleep first %v reply %v", prog.sleepFirst, prog.sleepReply)
	}
}

func TestSleepCancelledByContext(t *testing.T) {
	t.Parallel()
	p := newSim(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := p.Stream(ctx, provider.Request{Messages: []provider.Message{user("sleep 600000")}}, nil)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

func TestReconstructedMessages(t *testing.T) {
	t.Parallel()
	// As the agent rebuilds them from events.jsonl: earlier turns with
	// reasoning, a tool error result, then the current prompt's results.
	msgs := []provider.Message{
		user("think first\n$ false"),
		{Role: provider.RoleAssistant, Reasoning: []provider.Reasoning{{Provider: "sim", Text: "first", Signature: Sign("first")}},
			ToolCalls: []provider.ToolCall{{ID: "call_1", Name: "bash", Arguments: `{"command":"false"}`}}},
		{Role: provider.RoleTool, ToolCallID: "call_1", ToolName: "bash", Text: "exit status 1", IsError: true},
		{Role: provider.RoleAssistant, Text: "done: 1 action"},
		user("note\nrm a\nrm b"),
		{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "call_2", Name: "delete_file", Arguments: `{"path":"a"}`}, {ID: "call_3", Name: "delete_file", Arguments: `{"path":"b"}`}}},
		{Role: provider.RoleTool, ToolCallID: "call_2", ToolName: "delete_file", Text: "deleted"},
		{Role: provider.RoleTool, ToolCallID: "call_3", ToolName: "delete_file", Text: "deleted"},
	}
	resp, err := newSim(t, "").Stream(context.Background(), provider.Request{Messages: msgs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Text != "done: 2 actions\nnote" {
		t.Fatalf("got %q", resp.Message.Text)
	}
	if _, err := newSim(t, "").Stream(context.Background(), provider.Request{Messages: []provider.Message{{Role: provider.RoleAssistant, Text: "x"}}}, nil); err == nil {
		t.Fatal("a request without a user message must fail")
	}
}

func TestCompact(t *testing.T) {
	t.Parallel()
	msgs := []provider.Message{
		user("please refactor the parser into two files now"),
		{Role: provider.RoleAssistant, Text: "ok"},
		user("rm a.txt"),
	}
	got, err := newSim(t, "").Compact(context.Background(), provider.Request{Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if want := "summary of 3 messages: please refactor the parser into; rm a.txt"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestTrace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.jsonl")
	// A pre-existing, world-readable trace is tightened on first append.
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p := newSim(t, path)
	req := provider.Request{Model: "sim", System: "sys", Messages: []provider.Message{user("hello")}}
	const n = 20
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := p.Stream(context.Background(), req, nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if _, err := p.Compact(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("trace mode %v, want 0600", fi.Mode().Perm())
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	lines := 0
	for sc.Scan() {
		lines++
		var line struct {
			Provider string           `json:"provider"`
			Op       string           `json:"op"`
			Body     provider.Request `json:"body"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %d: %v: %s", lines, err, sc.Text())
		}
		if line.Provider != "sim" || !reflect.DeepEqual(line.Body, req) {
			t.Fatalf("line %d: %+v", lines, line)
		}
		if wantOp := map[bool]string{true: "compact", false: ""}[lines == n+1]; line.Op != wantOp {
			t.Fatalf("line %d op %q, want %q", lines, line.Op, wantOp)
		}
	}
	if lines != n+1 {
		t.Fatalf("%d lines, want %d", lines, n+1)
	}
}

func TestRegistered(t *testing.T) {
	t.Parallel()
	p, err := provider.New(provider.Config{Provider: "sim", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "sim" || p.Model() != "m" {
		t.Fatalf("%s %s", p.Name(), p.Model())
	}
}

// TestCompactIsBounded: the summary of a long conversation has a bounded
// size, like a real model's: it names the last prompts and counts the
// others.
func TestCompactIsBounded(t *testing.T) {
	t.Parallel()
	var msgs []provider.Message
	for i := range 1000 {
		msgs = append(msgs, user(fmt.Sprintf("prompt-%d %s", i, strings.Repeat("x", 500))), provider.Message{Role: provider.RoleAssistant, Text: "ok"})
	}
	got, err := newSim(t, "").Compact(context.Background(), provider.Request{Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "summary of 2000 messages: (980 earlier prompts); prompt-980 xxx") || !strings.Contains(got, "; prompt-999 x") || len(got) > 2000 {
		t.Fatalf("summary (%d bytes): %s", len(got), got)
	}
}
