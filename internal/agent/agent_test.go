package agent

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/provider/sim"
	"github.com/yolop-dev/yolop/internal/session"
)

func TestRunTurnTextOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, newSim(t, ""), nil)
	out, ups := h.run(t, "cp1", "hello there\nsecond line")
	if out.Status != StatusCompleted || out.Err != nil || out.Text != "hello there\nsecond line" {
		t.Fatalf("outcome = %+v", out)
	}
	var streamed strings.Builder
	for _, u := range ups {
		if u.Kind != UpdateText {
			t.Fatalf("unexpected update %+v in a text-only turn", u)
		}
		streamed.WriteString(u.Text)
	}
	if streamed.String() != out.Text {
		t.Fatalf("streamed %q, final text %q", streamed.String(), out.Text)
	}
	evs := h.diskEvents(t)
	if got, want := eventTypes(evs), []string{EventUser, EventAssistant}; !reflect.DeepEqual(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	a := decode[AssistantData](t, evs[1])
	if a.Provider != "sim" || a.Model != "sim" || a.StopReason != provider.StopEndTurn || a.Message.Text != out.Text {
		t.Fatalf("assistant event = %+v", a)
	}
	for _, ev := range evs {
		if ev.Turn != "cp1" {
			t.Fatalf("event %d is tagged %q, want cp1", ev.Seq, ev.Turn)
		}
	}
	reqs := h.rec.requests()
	if len(reqs) != 1 || reqs[0].System != "test system" || len(reqs[0].Tools) == 0 {
		t.Fatalf("requests = %+v", reqs)
	}
}

// TestRunTurnToolCalls runs real tools in a temp root and checks that the
// results are persisted in call order and that the next model step sees
// them as tool messages paired with their calls.
func TestRunTurnToolCalls(t *testing.T) {
	t.Parallel()
	h := newHarness(t, newSim(t, ""), nil)
	prompt := "write a.txt\nhello from a\nEOF\n$ cat a.txt; echo shell-ran\nread a.txt\nsummary please"
	out, ups := h.run(t, "cp1", prompt)
	if out.Status != StatusCompleted || out.Text != "done: 3 actions\nsummary please" {
		t.Fatalf("outcome = %+v", out)
	}
	if got, ok := fileContent(t, h.root, "a.txt"); !ok || got != "hello from a\n" {
		t.Fatalf("a.txt = %q (exists %v)", got, ok)
	}
	evs := h.diskEvents(t)
	want := []string{EventUser, EventAssistant, EventToolResult, EventToolResult, EventToolResult, EventAssistant}
	if got := eventTypes(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	calls := decode[AssistantData](t, evs[1]).Message.ToolCalls
	if len(calls) != 3 {
		t.Fatalf("calls = %+v", calls)
	}
	for i, ev := range evs[2:5] {
		r := decode[ToolResultData](t, ev)
		if r.CallID != calls[i].ID || r.Name != calls[i].Name || r.IsError {
			t.Fatalf("result %d = %+v for call %+v", i, r, calls[i])
		}
		if r.Info == nil || r.Info.Status != "completed" || r.Info.Result != "" {
			t.Fatalf("result %d info = %+v (stored info must not duplicate the content)", i, r.Info)
		}
	}
	if c := decode[ToolResultData](t, evs[3]).Content; !strings.Contains(c, "hello from a") || !strings.Contains(c, "shell-ran") {
		t.Fatalf("bash result = %q", c)
	}

	reqs := h.rec.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model steps, want 2", len(reqs))
	}
	second := reqs[1].Messages
	if len(second) != 5 || second[0].Role != provider.RoleUser || second[1].Role != provider.RoleAssistant {
		t.Fatalf("second step messages = %+v", second)
	}
	for i, m := range second[2:] {
		if m.Role != provider.RoleTool || m.ToolCallID != calls[i].ID || m.ToolName != calls[i].Name {
			t.Fatalf("message %d = %+v, want the result of %+v", i+2, m, calls[i])
		}
	}
	if !strings.Contains(second[4].Text, "hello from a") {
		t.Fatalf("read_file result in context = %q", second[4].Text)
	}

	var kinds []UpdateKind
	for _, u := range ups {
		if u.Kind == UpdateToolStart || u.Kind == UpdateToolEnd {
			kinds = append(kinds, u.Kind)
			if u.Kind == UpdateToolEnd && (u.Tool.Status != "completed" || u.Tool.Result == "") {
				t.Fatalf("tool end update = %+v", u.Tool)
			}
		}
	}
	if len(kinds) != 6 {
		t.Fatalf("tool updates = %v, want start/end for each of 3 calls", kinds)
	}
}

// TestBadToolCallsBecomeErrorResults: problems the model can fix are tool
// results, and the turn goes on to the next model step, which sees them.
func TestBadToolCallsBecomeErrorResults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		call provider.ToolCall
		want string
	}{
		{"malformed JSON", provider.ToolCall{ID: "c1", Name: "write_file", Arguments: `{"path": "x.txt", "content": "a`}, "not valid JSON"},
		{"not an object", provider.ToolCall{ID: "c1", Name: "read_file", Arguments: `["x.txt"]`}, "must be a JSON object"},
		{"unknown tool", provider.ToolCall{ID: "c1", Name: "launch_rockets", Arguments: `{}`}, `unknown tool "launch_rockets"`},
		{"unknown argument", provider.ToolCall{ID: "c1", Name: "read_file", Arguments: `{"file":"x.txt"}`}, "invalid arguments for read_file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := &scripted{steps: []func(context.Context, provider.Request) (provider.Response, error){
				reply(provider.Message{ToolCalls: []provider.ToolCall{tc.call}}),
				reply(provider.Message{Text: "recovered"}),
			}}
			h := newHarness(t, p, nil)
			out, ups := h.run(t, "cp1", "go")
			if out.Status != StatusCompleted || out.Text != "recovered" {
				t.Fatalf("outcome = %+v", out)
			}
			evs := h.diskEvents(t)
			r := decode[ToolResultData](t, evs[2])
			if !r.IsError || !strings.Contains(r.Content, tc.want) || r.CallID != "c1" {
				t.Fatalf("result = %+v, want an error result containing %q", r, tc.want)
			}
			if _, ok := fileContent(t, h.root, "x.txt"); ok {
				t.Fatal("a rejected call wrote a file")
			}
			reqs := h.rec.requests()
			last := reqs[len(reqs)-1].Messages
			m := last[len(last)-1]
			if m.Role != provider.RoleTool || !m.IsError || m.ToolCallID != "c1" || m.Text != r.Content {
				t.Fatalf("the next step saw %+v, want the error result", m)
			}
			failed := false
			for _, u := range ups {
				failed = failed || (u.Kind == UpdateToolEnd && u.Tool.Status == "failed" && u.Tool.IsError)
			}
			if !failed {
				t.Fatal("no failed tool_end update")
			}
		})
	}
}

func TestProviderErrorFailsTurn(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		prompt string
		events []string
		file   string // created before the failure
	}{
		{"first step", "fail", []string{EventUser, EventTurnError}, ""},
		{"after a tool step", "write made.txt\nx\nEOF\nfail", []string{EventUser, EventAssistant, EventToolResult, EventTurnError}, "made.txt"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, newSim(t, ""), nil)
			out, ups := h.run(t, "cp1", tc.prompt)
			if out.Status != StatusFailed || !errors.Is(out.Err, sim.ErrFail) {
				t.Fatalf("outcome = %+v", out)
			}
			evs := h.diskEvents(t)
			if got := eventTypes(evs); !reflect.DeepEqual(got, tc.events) {
				t.Fatalf("events = %v, want %v", got, tc.events)
			}
			te := decode[TurnErrorData](t, evs[len(evs)-1])
			if te.Status != StatusFailed || !strings.Contains(te.Error, "fail instruction") {
				t.Fatalf("turn.error = %+v", te)
			}
			if n := len(ups); n == 0 || ups[n-1].Kind != UpdateError {
				t.Fatalf("updates = %+v, want a final error update", ups)
			}
			if tc.file != "" {
				if _, ok := fileContent(t, h.root, tc.file); !ok {
					t.Fatalf("%s was not created before the failure", tc.file)
				}
			}
			items := h.ag.Transcript()
			if last := items[len(items)-1]; last.Kind != ItemError || !strings.Contains(last.Text, "failed") {
				t.Fatalf("transcript ends with %+v", last)
			}
			// The session goes on.
			if out, _ := h.run(t, "cp2", "still here"); out.Status != StatusCompleted {
				t.Fatalf("next turn = %+v", out)
			}
		})
	}
}

// TestCancelMidStream: a model step that is streaming when the user cancels
// ends the turn as cancelled (not an error), with the log flushed, and the
// next turn works.
func TestCancelMidStream(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	p := &scripted{steps: []func(context.Context, provider.Request) (provider.Response, error){
		func(ctx context.Context, _ provider.Request) (provider.Response, error) {
			close(started)
			<-ctx.Done()
			return provider.Response{}, ctx.Err()
		},
		reply(provider.Message{Text: "second turn answer"}),
	}}
	h := newHarness(t, p, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	var ups []Update
	out := h.ag.RunTurn(ctx, "cp1", "long question", func(u Update) { ups = append(ups, u) })
	if out.Status != StatusCancelled || out.Err != nil {
		t.Fatalf("outcome = %+v, want cancelled without an error", out)
	}
	for _, u := range ups {
		if u.Kind == UpdateError {
			t.Fatalf("a cancelled turn reported an error update: %+v", u)
		}
	}
	evs := h.diskEvents(t)
	if got, want := eventTypes(evs), []string{EventUser, EventTurnError}; !reflect.DeepEqual(got, want) {
		t.Fatalf("events on disk = %v, want %v", got, want)
	}
	if te := decode[TurnErrorData](t, evs[1]); te.Status != StatusCancelled {
		t.Fatalf("turn.error = %+v", te)
	}
	out2, _ := h.run(t, "cp2", "next question")
	if out2.Status != StatusCompleted || out2.Text != "second turn answer" {
		t.Fatalf("next turn = %+v", out2)
	}
	reqs := h.rec.requests()
	// The unanswered prompt is closed by a synthetic reply instead of being
	// merged into the next prompt, where it would be acted on again.
	got := reqs[len(reqs)-1].Messages
	if len(got) != 3 || got[0].Text != "long question" || got[2].Text != "next question" ||
		got[1].Role != provider.RoleAssistant || got[1].Text != unansweredReply+" (cancelled by the user)." {
		t.Fatalf("next turn context = %+v", got)
	}
}

// TestCancelMidTool cancels while a real shell command runs: the command is
// stopped, the calls after it are recorded as not run, and the next turn
// sees complete call/result pairs.
func TestCancelMidTool(t *testing.T) {
	t.Parallel()
	h := newHarness(t, newSim(t, ""), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ups []Update
	prompt := "$ sleep 60\nwrite after.txt\nnot written\nEOF"
	out := h.ag.RunTurn(ctx, "cp1", prompt, func(u Update) {
		ups = append(ups, u)
		if u.Kind == UpdateToolStart && u.Tool.Name == "bash" {
			cancel()
		}
	})
	if out.Status != StatusCancelled || out.Err != nil {
		t.Fatalf("outcome = %+v", out)
	}
	if _, ok := fileContent(t, h.root, "after.txt"); ok {
		t.Fatal("a call after the cancellation ran")
	}
	evs := h.diskEvents(t)
	want := []string{EventUser, EventAssistant, EventToolResult, EventToolResult, EventTurnError}
	if got := eventTypes(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("events on disk = %v, want %v", got, want)
	}
	if r := decode[ToolResultData](t, evs[3]); !r.IsError || r.Name != "write_file" || !strings.Contains(r.Content, "cancelled before it ran") {
		t.Fatalf("second result = %+v", r)
	}
	if te := decode[TurnErrorData](t, evs[4]); te.Status != StatusCancelled {
		t.Fatalf("turn.error = %+v", te)
	}
	if len(h.ag.cfg.Tools.Tasks().Active()) != 0 {
		t.Fatalf("the cancelled command still runs: %+v", h.ag.cfg.Tools.Tasks().Active())
	}

	out2, _ := h.run(t, "cp2", "write next.txt\nyes\nEOF")
	if out2.Status != StatusCompleted {
		t.Fatalf("next turn = %+v", out2)
	}
	if got, _ := fileContent(t, h.root, "next.txt"); got != "yes\n" {
		t.Fatalf("next.txt = %q", got)
	}
	// Every call in the context has exactly one result.
	reqs := h.rec.requests()
	checkPaired(t, reqs[len(reqs)-1].Messages)
}

// checkPaired fails unless every tool call is followed by exactly one result
// before the next non-tool message.
func checkPaired(t *testing.T, msgs []provider.Message) {
	t.Helper()
	for i, m := range msgs {
		if m.Role != provider.RoleAssistant {
			continue
		}
		seen := map[string]int{}
		for j := i + 1; j < len(msgs) && msgs[j].Role == provider.RoleTool; j++ {
			seen[msgs[j].ToolCallID]++
		}
		for _, c := range m.ToolCalls {
			if seen[c.ID] != 1 {
				t.Fatalf("call %s has %d results in %+v", c.ID, seen[c.ID], msgs)
			}
		}
		if len(seen) != len(m.ToolCalls) {
			t.Fatalf("results without calls after message %d: %+v", i, msgs)
		}
	}
}

func TestStepLimit(t *testing.T) {
	t.Parallel()
	n := 0
	p := &scripted{steps: []func(context.Context, provider.Request) (provider.Response, error){
		func(context.Context, provider.Request) (provider.Response, error) {
			n++
			return provider.Response{Message: provider.Message{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "c" + string(rune('0'+n)), Name: "list_directory", Arguments: `{}`}}}}, nil
		},
	}}
	h := newHarness(t, p, func(c *Config) { c.MaxSteps = 3 })
	out, _ := h.run(t, "cp1", "loop forever")
	if out.Status != StatusFailed || out.Err == nil || !strings.Contains(out.Err.Error(), "3 steps") {
		t.Fatalf("outcome = %+v", out)
	}
	if got := len(h.rec.requests()); got != 3 {
		t.Fatalf("%d model steps, want 3", got)
	}
	evs := h.diskEvents(t)
	want := []string{EventUser}
	for range 3 {
		want = append(want, EventAssistant, EventToolResult)
	}
	want = append(want, EventTurnError)
	if got := eventTypes(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
}

// TestMessagesInterrupted: a call whose result was never recorded (the
// process stopped mid-call) materializes with a synthetic interrupted
// result, wherever the materialization has to close it.
func TestMessagesInterrupted(t *testing.T) {
	t.Parallel()
	call := func(ids ...string) AssistantData {
		var cs []provider.ToolCall
		for _, id := range ids {
			cs = append(cs, provider.ToolCall{ID: id, Name: "bash", Arguments: `{"command":"make"}`})
		}
		return AssistantData{Provider: "sim", Model: "sim", Message: provider.Message{Role: provider.RoleAssistant, ToolCalls: cs}}
	}
	type ev struct {
		typ  string
		data any
	}
	cases := []struct {
		name string
		evs  []ev
		want []string // role:callID:text-prefix per message
	}{
		{"log ends after the call", []ev{{EventUser, UserData{"build"}}, {EventAssistant, call("a")}},
			[]string{"user::build", "assistant::", "tool:a:interrupted"}},
		{"one of two results recorded", []ev{{EventUser, UserData{"build"}}, {EventAssistant, call("a", "b")}, {EventToolResult, ToolResultData{CallID: "a", Name: "bash", Content: "ok"}}},
			[]string{"user::build", "assistant::", "tool:a:ok", "tool:b:interrupted"}},
		{"next prompt follows", []ev{{EventUser, UserData{"build"}}, {EventAssistant, call("a")}, {EventTurnError, TurnErrorData{Status: StatusInterrupted}}, {EventUser, UserData{"again"}}},
			[]string{"user::build", "assistant::", "tool:a:interrupted", "user::again"}},
		{"unanswered prompt is closed", []ev{{EventUser, UserData{"fail"}}, {EventTurnError, TurnErrorData{Status: StatusFailed, Error: "boom"}}, {EventUser, UserData{"again"}}},
			[]string{"user::fail", "assistant::" + unansweredReply + " (failed: boom).", "user::again"}},
		{"crash before the answer", []ev{{EventUser, UserData{"one"}}, {EventNotice, NoticeData{Text: "files changed", Model: true}}, {EventUser, UserData{"two"}}},
			[]string{"user::one", "assistant::" + unansweredReply + ".", "user::" + noticePrefix + "files changed\n\ntwo"}},
		{"stray result is dropped", []ev{{EventUser, UserData{"build"}}, {EventToolResult, ToolResultData{CallID: "zz", Content: "orphan"}}},
			[]string{"user::build"}},
		{"model notice merges with the prompt", []ev{{EventNotice, NoticeData{Text: "files changed", Model: true}}, {EventNotice, NoticeData{Text: "host only"}}, {EventUser, UserData{"go"}}},
			[]string{"user::" + noticePrefix + "files changed\n\ngo"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var evs []session.Event
			for i, e := range tc.evs {
				b, err := json.Marshal(e.data)
				if err != nil {
					t.Fatal(err)
				}
				evs = append(evs, session.Event{V: 1, Seq: int64(i + 1), Type: e.typ, Turn: "cp1", Data: b})
			}
			var got []string
			for _, m := range Messages(evs) {
				s := string(m.Role) + ":" + m.ToolCallID + ":" + m.Text
				got = append(got, s)
				if m.Role == provider.RoleTool && strings.HasPrefix(m.Text, "interrupted") && !m.IsError {
					t.Fatalf("synthetic result is not an error: %+v", m)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("messages = %q, want %q", got, tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Fatalf("message %d = %q, want prefix %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestInterruptedTurnResumes writes a crash-shaped log (a call without a
// result) to a real session, reseeds an agent from it as a resumed process
// would, and runs the next turn: the provider gets a paired context.
func TestInterruptedTurnResumes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, newSim(t, ""), nil)
	if _, err := h.sess.Append(EventUser, "cp1", UserData{Text: "$ make"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.sess.Append(EventAssistant, "cp1", AssistantData{Provider: "sim", Model: "sim", Message: provider.Message{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "call_1", Name: "bash", Arguments: `{"command":"make"}`}}}}); err != nil {
		t.Fatal(err)
	}
	h.ag.Reseed(h.sess.Events(), nil, func(string, int64) bool { return true })
	out, _ := h.run(t, "cp2", "status?")
	if out.Status != StatusCompleted || out.Text != "status?" {
		t.Fatalf("outcome = %+v", out)
	}
	msgs := h.rec.requests()[0].Messages
	checkPaired(t, msgs)
	if len(msgs) != 4 || msgs[2].Text != interruptedResult || !msgs[2].IsError {
		t.Fatalf("context = %+v", msgs)
	}
	items := h.ag.Transcript()
	if len(items) == 0 || items[0].Text != "$ make" {
		t.Fatalf("transcript = %+v", items)
	}
}

// TestReasoningStaysWithItsMessage: a sim reasoning artifact is stored on
// its assistant message with its signature, comes back on the next turn
// (the sim verifies it), and appears in the transcript.
func TestReasoningStaysWithItsMessage(t *testing.T) {
	t.Parallel()
	h := newHarness(t, newSim(t, ""), nil)
	out, ups := h.run(t, "cp1", "think plan carefully\nwrite r.txt\nr\nEOF")
	if out.Status != StatusCompleted {
		t.Fatalf("outcome = %+v", out)
	}
	gotReasoning := false
	for _, u := range ups {
		gotReasoning = gotReasoning || (u.Kind == UpdateReasoning && u.Text == "plan carefully")
	}
	if !gotReasoning {
		t.Fatal("no reasoning update")
	}
	evs := h.diskEvents(t)
	a := decode[AssistantData](t, evs[1])
	want := []provider.Reasoning{{Provider: "sim", Text: "plan carefully", Signature: sim.Sign("plan carefully")}}
	if !reflect.DeepEqual(a.Message.Reasoning, want) || len(a.Message.ToolCalls) != 1 {
		t.Fatalf("assistant message = %+v", a.Message)
	}
	// The reply step and the next turn carry the artifact on the same
	// assistant message, unaltered.
	if out, _ := h.run(t, "cp2", "and now?"); out.Status != StatusCompleted {
		t.Fatalf("second turn = %+v", out)
	}
	reqs := h.rec.requests()
	for _, req := range reqs[1:] {
		if !reflect.DeepEqual(req.Messages[1].Reasoning, want) || len(req.Messages[1].ToolCalls) != 1 {
			t.Fatalf("assistant message sent back = %+v", req.Messages[1])
		}
	}
	items := h.ag.Transcript()
	if items[1].Kind != ItemReasoning || items[1].Text != "plan carefully" {
		t.Fatalf("transcript = %+v", items)
	}
}

// TestForeignReasoningIsNotSent: artifacts are only meaningful to their
// issuer; a session whose earlier turns ran on another provider sends the
// current one none of them.
func TestForeignReasoningIsNotSent(t *testing.T) {
	t.Parallel()
	trace := t.TempDir() + "/trace.jsonl"
	h := newHarness(t, newSim(t, trace), nil)
	foreign := AssistantData{Provider: "anthropic", Model: "claude", Message: provider.Message{Role: provider.RoleAssistant, Text: "earlier answer",
		Reasoning: []provider.Reasoning{{Provider: "anthropic", Text: "foreign-thought", Signature: "foreign-signature"}, {Provider: "anthropic", Redacted: "foreign-redacted-blob"}}}}
	own := AssistantData{Provider: "sim", Model: "sim", Message: provider.Message{Role: provider.RoleAssistant, Text: "sim answer",
		Reasoning: []provider.Reasoning{{Provider: "sim", Text: "own-thought", Signature: sim.Sign("own-thought")}}}}
	for _, e := range []struct {
		typ  string
		data any
	}{{EventUser, UserData{"q1"}}, {EventAssistant, foreign}, {EventUser, UserData{"q2"}}, {EventAssistant, own}} {
		if _, err := h.sess.Append(e.typ, "cp1", e.data); err != nil {
			t.Fatal(err)
		}
	}
	h.ag.Reseed(h.sess.Events(), nil, func(string, int64) bool { return true })
	if out, _ := h.run(t, "cp2", "q3"); out.Status != StatusCompleted {
		t.Fatalf("outcome = %+v", out)
	}
	body := string(readFile(t, trace))
	for _, s := range []string{"foreign-thought", "foreign-signature", "foreign-redacted-blob"} {
		if strings.Contains(body, s) {
			t.Errorf("the sim was sent another provider's artifact %q", s)
		}
	}
	if !strings.Contains(body, "own-thought") || !strings.Contains(body, sim.Sign("own-thought")) {
		t.Error("the sim's own artifact was not sent back")
	}
	// The transcript still shows every reasoning text.
	var texts []string
	for _, it := range h.ag.Transcript() {
		if it.Kind == ItemReasoning {
			texts = append(texts, it.Text)
		}
	}
	if !reflect.DeepEqual(texts, []string{"foreign-thought", "own-thought"}) {
		t.Fatalf("transcript reasoning = %q", texts)
	}
}
