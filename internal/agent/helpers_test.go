package agent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/provider/sim"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// harness is an agent over real parts: a session store in a temp data
// directory, the real tool set bound to a temp root, and the compaction
// store of that session.
type harness struct {
	ag    *Agent
	sess  *session.Session
	comps *timeline.CompactionLog
	root  string
	rec   *recorder
}

func newHarness(t *testing.T, p provider.Provider, mut func(*Config)) *harness {
	t.Helper()
	root := t.TempDir()
	sess, err := session.Create(t.TempDir(), session.Workspace{Kind: session.KindConversation, ActiveRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	comps, _, err := timeline.OpenCompactions(sess.Path(session.CompactionsFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { comps.Close() })
	spill := sess.Path("spill")
	if err := os.MkdirAll(spill, 0o700); err != nil {
		t.Fatal(err)
	}
	ts, err := tools.New(tools.Env{Root: root, SpillDir: spill})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ts.Tasks().StopAll)
	rec := &recorder{Provider: p}
	cfg := Config{Log: sess, Provider: rec, Tools: ts, System: "test system", Compactions: comps}
	if mut != nil {
		mut(&cfg)
	}
	ag := New(cfg)
	ag.Reseed(nil, nil, func(string, int64) bool { return true })
	return &harness{ag: ag, sess: sess, comps: comps, root: root, rec: rec}
}

func newSim(t *testing.T, trace string) *sim.Provider {
	t.Helper()
	p, err := sim.New(provider.Config{TracePath: trace})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// diskEvents reads events.jsonl from disk: what a later process would see.
func (h *harness) diskEvents(t *testing.T) []session.Event {
	t.Helper()
	data, err := os.ReadFile(h.sess.Path(session.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	scan := session.ParseEvents(session.EventsFile, data)
	if scan.Corrupt != nil || scan.Tail != 0 {
		t.Fatalf("events.jsonl is not clean: corrupt=%v tail=%d", scan.Corrupt, scan.Tail)
	}
	return scan.Events
}

func (h *harness) run(t *testing.T, turn, prompt string) (Outcome, []Update) {
	t.Helper()
	var ups []Update
	out := h.ag.RunTurn(context.Background(), turn, prompt, func(u Update) { ups = append(ups, u) })
	return out, ups
}

func eventTypes(evs []session.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func decode[T any](t *testing.T, ev session.Event) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(ev.Data, &v); err != nil {
		t.Fatalf("decode %s event %d: %v", ev.Type, ev.Seq, err)
	}
	return v
}

// recorder wraps a provider and keeps a copy of every request it is sent.
type recorder struct {
	provider.Provider
	mu       sync.Mutex
	reqs     []provider.Request
	compacts []provider.Request
}

func clone(req provider.Request) provider.Request {
	b, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	var out provider.Request
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

func (r *recorder) Stream(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, clone(req))
	r.mu.Unlock()
	return r.Provider.Stream(ctx, req, onDelta)
}

func (r *recorder) Compact(ctx context.Context, req provider.Request) (string, error) {
	r.mu.Lock()
	r.compacts = append(r.compacts, clone(req))
	r.mu.Unlock()
	return r.Provider.Compact(ctx, req)
}

func (r *recorder) requests() []provider.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]provider.Request(nil), r.reqs...)
}

// scripted is a provider whose model steps are Go functions, for replies no
// real back end gives on demand (malformed arguments, unknown tools, a
// stream that hangs until cancelled). The last step repeats.
type scripted struct {
	name    string
	steps   []func(ctx context.Context, req provider.Request) (provider.Response, error)
	compact func(req provider.Request) (string, error)

	mu sync.Mutex
	n  int
}

func (s *scripted) Name() string {
	if s.name == "" {
		return "scripted"
	}
	return s.name
}

func (s *scripted) Model() string { return "scripted-1" }

func (s *scripted) Stream(ctx context.Context, req provider.Request, _ func(provider.Delta)) (provider.Response, error) {
	s.mu.Lock()
	i := min(s.n, len(s.steps)-1)
	s.n++
	s.mu.Unlock()
	return s.steps[i](ctx, req)
}

func (s *scripted) Compact(_ context.Context, req provider.Request) (string, error) {
	if s.compact == nil {
		return "", errors.New("scripted: no compaction")
	}
	return s.compact(req)
}

func reply(msg provider.Message) func(context.Context, provider.Request) (provider.Response, error) {
	return func(context.Context, provider.Request) (provider.Response, error) {
		msg.Role = provider.RoleAssistant
		return provider.Response{Message: msg}, nil
	}
}

func fileContent(t *testing.T, root, rel string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if errors.Is(err, os.ErrNotExist) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
