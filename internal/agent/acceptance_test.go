package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/provider"
	// The real providers, against local servers (app links only sim).
	_ "github.com/yolop-dev/yolop/internal/provider/all"
	"github.com/yolop-dev/yolop/internal/provider/sim"
	"github.com/yolop-dev/yolop/internal/session"
)

// world is one user's machine: a data directory, a project directory and a
// provider configuration. Each open is a process-equivalent: everything is
// rebuilt from disk.
type world struct {
	data, dir, trace string
	mode             string // a new session's workspace mode
	prov             provider.Config
}

func newWorld(t *testing.T, prov provider.Config, dir, mode string) *world {
	t.Helper()
	w := &world{data: t.TempDir(), dir: dir, mode: mode, prov: prov}
	w.trace = filepath.Join(t.TempDir(), "trace.jsonl")
	w.prov.TracePath = w.trace
	return w
}

// open opens session id, or a new session when id is "".
func (w *world) open(t *testing.T, id string) *app.Session {
	t.Helper()
	var req app.Request = app.Resume{ID: id}
	if id == "" {
		req = app.New{Mode: w.mode}
	}
	s, err := app.Open(context.Background(), app.Env{DataDir: w.data, Dir: w.dir, Provider: w.prov}, req)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func prompt(t *testing.T, s *app.Session, text string) app.TurnResult {
	t.Helper()
	res, err := s.Prompt(context.Background(), text, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agent.StatusCompleted {
		t.Fatalf("turn %q: %+v", text, res)
	}
	return res
}

func exec(t *testing.T, s *app.Session, line string) command.Result {
	t.Helper()
	cmd, err := command.Parse(line)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Exec(context.Background(), cmd)
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return res
}

// rewind previews and confirms a restore through the session, as every
// host does.
func rewind(t *testing.T, s *app.Session, target, mode string) command.Result {
	t.Helper()
	pv := exec(t, s, "/rewind "+target+" "+mode)
	if pv.Kind != command.ResultPreview || pv.Preview.Token == "" {
		t.Fatalf("preview = %+v", pv)
	}
	res := exec(t, s, "/rewind "+target+" "+mode+" --confirm "+pv.Preview.Token)
	if res.Kind != command.ResultRestored {
		t.Fatalf("confirm = %+v", res)
	}
	return res
}

// traceLines returns the raw lines of the request trace (model steps only
// unless ops is set).
func traceLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var tl struct {
			Op string `json:"op"`
		}
		if err := json.Unmarshal([]byte(l), &tl); err != nil {
			t.Fatalf("trace line %q: %v", l, err)
		}
		if tl.Op == "" {
			out = append(out, l)
		}
	}
	return out
}

func eventsFile(t *testing.T, w *world, id string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(w.data, "sessions", id, session.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// turnScript is what a turn asks for and the strings that identify it in
// requests: its prompt, tool arguments, tool output and reasoning.
type turnScript struct {
	name      string // one, two, three
	reasoning string
}

func (ts turnScript) marker() string { return "marker-turn-" + ts.name }

// needles are strings only this turn puts into a request. Reasoning is
// included when the provider stores it.
func (ts turnScript) needles(withReasoning bool) []string {
	n := []string{ts.marker(), "content-" + ts.name, "echo output-" + ts.name, "output-" + ts.name + "-42"}
	if withReasoning {
		n = append(n, ts.reasoning, sim.Sign(ts.reasoning))
	}
	if ts.name == "three" {
		n = append(n, "bad-args-three")
	}
	return n
}

var turns = []turnScript{{"one", "alpha-reasoning-one"}, {"two", "beta-reasoning-two"}, {"three", "gamma-reasoning-three"}}

func simPrompt(ts turnScript) string {
	p := fmt.Sprintf("think %s\nwrite %s.txt\ncontent-%s\nEOF\n$ echo output-%s-$((6*7))\n%s", ts.reasoning, ts.name, ts.name, ts.name, ts.marker())
	if ts.name == "three" {
		// The sim sends well-formed arguments only; a path the tool
		// rejects gives turn 3 an error result instead.
		p += "\nread bad-args-three"
	}
	return p
}

// chatServer speaks the Chat Completions streaming API. A request whose
// last message is a user prompt naming a turn marker gets that turn's
// reasoning and tool calls (arguments split across chunks, one of turn 3's
// malformed); a request ending in tool results gets a text reply.
type chatServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newChatServer(t *testing.T) *chatServer {
	t.Helper()
	cs := &chatServer{}
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		raw := new(strings.Builder)
		if err := json.NewDecoder(readerTee(r, raw)).Decode(&body); err != nil || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		cs.mu.Lock()
		cs.bodies = append(cs.bodies, raw.String())
		cs.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		last := body.Messages[len(body.Messages)-1]
		text, _ := last.Content.(string)
		var chunks []map[string]any
		finish := "stop"
		switch {
		case last.Role == "tool":
			chunks = append(chunks, delta(map[string]any{"role": "assistant", "content": "finished "}), delta(map[string]any{"content": "the work"}))
		default:
			var ts *turnScript
			for i := range turns {
				if strings.Contains(text, turns[i].marker()) {
					ts = &turns[i]
				}
			}
			if ts == nil {
				chunks = append(chunks, delta(map[string]any{"role": "assistant", "content": "ok"}))
				break
			}
			finish = "tool_calls"
			chunks = append(chunks, delta(map[string]any{"role": "assistant", "reasoning_content": ts.reasoning}))
			calls := []struct{ name, args string }{
				{"write_file", fmt.Sprintf(`{"path":"%s.txt","content":"content-%s\n"}`, ts.name, ts.name)},
				{"bash", fmt.Sprintf(`{"command":"echo output-%s-$((6*7))"}`, ts.name)},
			}
			if ts.name == "three" {
				calls = append(calls, struct{ name, args string }{"read_file", `{"path": "bad-args-three`})
			}
			for i, c := range calls {
				id := fmt.Sprintf("call_%s_%d", ts.name, i)
				chunks = append(chunks, delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": id, "type": "function", "function": map[string]any{"name": c.name, "arguments": ""}}}}))
				half := len(c.args) / 2
				for _, part := range []string{c.args[:half], c.args[half:]} {
					chunks = append(chunks, delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": part}}}}))
				}
			}
		}
		end := delta(map[string]any{})
		end["choices"].([]any)[0].(map[string]any)["finish_reason"] = finish
		chunks = append(chunks, end)
		for _, c := range chunks {
			b, _ := json.Marshal(c)
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(cs.Close)
	return cs
}

func delta(d map[string]any) map[string]any {
	return map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
		"choices": []any{map[string]any{"index": 0, "delta": d, "finish_reason": nil}}}
}

// TestRewindThenResumeSendsNothingAbandoned is the spec's first acceptance
// criterion: after three turns with tool calls, rewinding to cp2 and
// resuming in a new process sends the model nothing of turns 2 and 3 (their
// prompts, tool arguments, tool outputs, reasoning text and signatures),
// while events.jsonl keeps them.
func TestRewindThenResumeSendsNothingAbandoned(t *testing.T) {
	// Not parallel: these close and reopen a session, and a child process
	// forked by a concurrent test holds a copy of the session lock until it
	// execs, which can make the reopen fail as "in use".
	cases := []struct {
		name      string
		prov      func(t *testing.T) provider.Config
		prompt    func(turnScript) string
		reasoning bool // the provider stores reasoning artifacts
	}{
		{"sim", func(*testing.T) provider.Config { return provider.Config{Provider: provider.NameSim} }, simPrompt, true},
		{"openai", func(t *testing.T) provider.Config {
			cs := newChatServer(t)
			return provider.Config{Provider: provider.NameOpenAI, Model: "gpt-test", BaseURL: cs.URL + "/v1", APIKey: "sk-test"}
		}, func(ts turnScript) string { return "please do " + ts.marker() }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.prov(t), t.TempDir(), config.WorkspaceInPlace)
			s := w.open(t, "")
			for _, ts := range turns {
				res := prompt(t, s, tc.prompt(ts))
				if got, err := os.ReadFile(filepath.Join(w.dir, ts.name+".txt")); err != nil || string(got) != "content-"+ts.name+"\n" {
					t.Fatalf("%s: %s.txt = %q, %v", res.CheckpointID, ts.name, got, err)
				}
			}
			id := s.ID()
			// The last request before the rewind carried everything: the
			// needles are detectable, so their absence below means something.
			before := traceLines(t, w.trace)
			for _, ts := range turns {
				for _, n := range ts.needles(tc.reasoning) {
					if !strings.Contains(before[len(before)-1], n) {
						t.Fatalf("the turn-3 request lacks %q; the needles do not work", n)
					}
				}
			}
			res := rewind(t, s, "cp2", "conversation")
			if res.Restored.Prompt != tc.prompt(turns[1]) {
				t.Fatalf("restored prompt = %q", res.Restored.Prompt)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			s = w.open(t, id)
			defer s.Close()
			if got := s.Info().Checkpoints; got != 1 {
				t.Fatalf("%d checkpoints on the resumed active branch, want 1", got)
			}
			for _, it := range s.Transcript() {
				if it.Turn != "cp1" && it.Turn != "" {
					t.Fatalf("resumed transcript holds %+v", it)
				}
			}
			r4 := prompt(t, s, "marker-turn-four and carry on")
			if r4.CheckpointID != "cp4" {
				t.Fatalf("new turn = %+v", r4)
			}
			after := traceLines(t, w.trace)
			last := after[len(after)-1]
			for _, ts := range turns[1:] {
				for _, n := range ts.needles(tc.reasoning) {
					if strings.Contains(last, n) {
						t.Errorf("the request after the rewind contains %q from turn %s", n, ts.name)
					}
				}
			}
			for _, n := range append(turns[0].needles(tc.reasoning), "marker-turn-four") {
				if !strings.Contains(last, n) {
					t.Errorf("the request after the rewind lacks %q", n)
				}
			}
			if strings.Contains(last, "[yolop notice]") {
				t.Errorf("a conversation restore put a notice into the model context: %s", last)
			}

			// Abandoned, not deleted.
			log := eventsFile(t, w, id)
			for _, ts := range turns[1:] {
				want := []string{ts.marker(), "output-" + ts.name + "-42"}
				if tc.reasoning {
					want = append(want, ts.reasoning)
				}
				for _, n := range want {
					if !strings.Contains(log, n) {
						t.Errorf("events.jsonl lost %q of abandoned turn %s", n, ts.name)
					}
				}
			}
		})
	}
}

// TestCompactionFollowsTheActiveBranch: a compaction made on a branch that
// a rewind abandons never shadows what survives; the context falls back to
// an earlier compaction or to raw messages, also after a restart.
func TestCompactionFollowsTheActiveBranch(t *testing.T) {
	// Not parallel: these close and reopen a session, and a child process
	// forked by a concurrent test holds a copy of the session lock until it
	// execs, which can make the reopen fail as "in use".
	long := " " + strings.Repeat("filler words to make compaction worth it ", 8)
	cases := []struct {
		name       string
		compactAt  []int // compact after these turns (1-based)
		rewindTo   string
		wantPrefix string // the context starts with this ("" = the raw first prompt)
		absent     []string
	}{
		{"abandoned compaction falls back to raw messages", []int{3}, "cp2", "", []string{"summary of", "prompt-three", "prompt-two"}},
		{"abandoned compaction falls back to an earlier one", []int{2, 3}, "cp3", "[yolop] Summary of the earlier conversation (compacted; the full log is kept):\nsummary of 8 messages: prompt-one", []string{"prompt-three"}},
		{"surviving compaction stays installed", []int{1}, "cp3", "[yolop] Summary of the earlier conversation (compacted; the full log is kept):\nsummary of 4 messages: prompt-one", []string{"prompt-three"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, provider.Config{Provider: provider.NameSim}, t.TempDir(), config.WorkspaceInPlace)
			s := w.open(t, "")
			for i, n := range []string{"one", "two", "three"} {
				prompt(t, s, "prompt-"+n+long+"\n$ echo out-"+n)
				for _, c := range tc.compactAt {
					if c == i+1 {
						if r := exec(t, s, "/compact"); !strings.HasPrefix(r.Text, "compacted") {
							t.Fatalf("/compact after turn %d: %+v", c, r)
						}
						if ctx := s.Parts().Agent.Context(); len(ctx) != 1 || !strings.HasPrefix(ctx[0].Text, "[yolop] Summary") {
							t.Fatalf("context after /compact = %+v", ctx)
						}
					}
				}
			}
			rewind(t, s, tc.rewindTo, "conversation")
			check := func(when string, msgs []provider.Message) {
				t.Helper()
				if len(msgs) == 0 {
					t.Fatalf("%s: empty context", when)
				}
				first := msgs[0].Text
				if tc.wantPrefix == "" && !strings.HasPrefix(first, "prompt-one") {
					t.Fatalf("%s: context starts with %q, want the raw first prompt", when, first)
				}
				if !strings.HasPrefix(first, tc.wantPrefix) {
					t.Fatalf("%s: context starts with %q, want %q", when, first, tc.wantPrefix)
				}
				b, _ := json.Marshal(msgs)
				for _, a := range tc.absent {
					if strings.Contains(string(b), a) {
						t.Fatalf("%s: context contains %q: %s", when, a, b)
					}
				}
			}
			check("after the rewind", s.Parts().Agent.Context())
			id := s.ID()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = w.open(t, id)
			defer s.Close()
			check("after reopening", s.Parts().Agent.Context())
			prompt(t, s, "prompt-four")
			lines := traceLines(t, w.trace)
			var req struct {
				Body provider.Request `json:"body"`
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &req); err != nil {
				t.Fatal(err)
			}
			check("in the next request", req.Body.Messages)
		})
	}
}

// TestRestoreNotices: a workspace-only restore tells the model the files
// changed under it; a restore that moves the conversation adds nothing to
// the context and quotes nothing abandoned.
func TestRestoreNotices(t *testing.T) {
	t.Parallel()
	cases := []struct {
		mode        string
		modelNotice bool // the next request carries the notice
		keepsTurn2  bool // turn 2 stays in the context
	}{
		{"workspace", true, true},
		{"conversation", false, false},
		{"both", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, provider.Config{Provider: provider.NameSim}, gittest.NewRepo(t), config.WorkspaceWorktree)
			s := w.open(t, "")
			defer s.Close()
			prompt(t, s, "write a.txt\nA\nEOF")
			prompt(t, s, "write b.txt\nsecret-two-content\nEOF\nmarker-ws-two")
			root := s.Info().ActiveRoot
			res := rewind(t, s, "cp2", tc.mode)
			if n := res.Restored.Notice; strings.Contains(n, "marker-ws-two") || strings.Contains(n, "secret-two") || !strings.Contains(n, "cp2") {
				t.Fatalf("notice = %q", n)
			}
			_, err := os.Stat(filepath.Join(root, "b.txt"))
			if tc.mode != "conversation" && !os.IsNotExist(err) {
				t.Fatalf("b.txt after a %s restore: %v", tc.mode, err)
			}
			prompt(t, s, "next-turn")
			lines := traceLines(t, w.trace)
			last := lines[len(lines)-1]
			want := "[yolop notice] Rewound to cp2 (workspace only"
			if got := strings.Contains(last, want); got != tc.modelNotice {
				t.Fatalf("request contains %q: %v, want %v\n%s", want, got, tc.modelNotice, last)
			}
			if got := strings.Contains(last, "marker-ws-two"); got != tc.keepsTurn2 {
				t.Fatalf("request contains turn 2: %v, want %v", got, tc.keepsTurn2)
			}
			if !tc.modelNotice && strings.Contains(last, "[yolop notice]") {
				t.Fatalf("unexpected notice in %s", last)
			}
		})
	}
}

// readerTee returns the request body as a reader that also copies what is
// read into sb.
func readerTee(r *http.Request, sb *strings.Builder) *teeReader { return &teeReader{r: r, sb: sb} }

type teeReader struct {
	r  *http.Request
	sb *strings.Builder
}

func (t *teeReader) Read(p []byte) (int, error) {
	n, err := t.r.Body.Read(p)
	t.sb.Write(p[:n])
	return n, err
}
