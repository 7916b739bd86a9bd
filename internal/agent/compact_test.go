package agent

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/provider"
)

// traceLine is one line of a YOLOP_TRACE_REQUESTS file written by the sim.
type traceLine struct {
	Provider string           `json:"provider"`
	Op       string           `json:"op"`
	Body     provider.Request `json:"body"`
}

func readTrace(t *testing.T, path string) []traceLine {
	t.Helper()
	var out []traceLine
	for _, l := range strings.Split(strings.TrimSpace(string(readFile(t, path))), "\n") {
		var tl traceLine
		if err := json.Unmarshal([]byte(l), &tl); err != nil {
			t.Fatalf("trace line %q: %v", l, err)
		}
		out = append(out, tl)
	}
	return out
}

// TestCompactFailureKeepsPrevious: a compaction that fails or does not
// shrink the context leaves the installed checkpoint (and the store) as
// they were.
func TestCompactFailureKeepsPrevious(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a long line of conversation ", 20)
	cases := []struct {
		name    string
		compact func(req provider.Request) (string, error)
		wantErr error
	}{
		{"provider error", func(provider.Request) (string, error) { return "", errors.New("upstream exploded") }, nil},
		{"summary longer than input", func(req provider.Request) (string, error) { return strings.Repeat("x", 100000), nil }, ErrNothingToCompact},
		{"empty summary", func(provider.Request) (string, error) { return "", nil }, ErrNothingToCompact},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			calls := 0
			p := &scripted{
				steps: []func(context.Context, provider.Request) (provider.Response, error){reply(provider.Message{Text: long})},
				compact: func(req provider.Request) (string, error) {
					calls++
					if calls == 1 {
						return "first summary", nil
					}
					return tc.compact(req)
				},
			}
			h := newHarness(t, p, nil)
			h.run(t, "cp1", long)
			if _, err := h.ag.Compact(context.Background()); err != nil {
				t.Fatal(err)
			}
			h.run(t, "cp2", long+" two")
			before := h.ag.Context()
			if !strings.HasPrefix(before[0].Text, summaryPrefix+"first summary") {
				t.Fatalf("context = %+v", before)
			}
			_, err := h.ag.Compact(context.Background())
			if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Fatalf("Compact err = %v, want %v", err, tc.wantErr)
			}
			after := h.ag.Context()
			if len(after) != len(before) || after[0].Text != before[0].Text {
				t.Fatalf("context changed after a failed compaction:\n%+v\n%+v", before, after)
			}
			if n := len(h.comps.All()); n != 1 {
				t.Fatalf("%d compactions stored, want 1", n)
			}
		})
	}
}

// TestCompactInstalls: /compact replaces everything up to the last event
// with the summary; later turns add raw messages after it.
func TestCompactInstalls(t *testing.T) {
	t.Parallel()
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	h := newHarness(t, newSim(t, trace), nil)
	h.run(t, "cp1", "first prompt words here now then-raw-needle-one\n$ echo tool-output-one")
	if _, err := h.ag.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := h.ag.Context()
	if len(ctx) != 1 || !strings.HasPrefix(ctx[0].Text, summaryPrefix+"summary of 4 messages: first prompt words here now") {
		t.Fatalf("context after compaction = %+v", ctx)
	}
	if _, err := h.ag.Compact(context.Background()); !errors.Is(err, ErrNothingToCompact) {
		t.Fatalf("second compaction without new events: %v", err)
	}
	out, _ := h.run(t, "cp2", "write later.txt\nlater\nEOF")
	if out.Status != StatusCompleted {
		t.Fatalf("outcome = %+v", out)
	}
	lines := readTrace(t, trace)
	last := lines[len(lines)-1]
	body, _ := json.Marshal(last.Body)
	if !strings.HasPrefix(last.Body.Messages[0].Text, summaryPrefix) || strings.Contains(string(body), "then-raw-needle-one") || strings.Contains(string(body), "tool-output-one") {
		t.Fatalf("request after compaction = %s", body)
	}
	if !strings.Contains(string(body), "later.txt") {
		t.Fatalf("the new prompt is missing from %s", body)
	}
	stored := h.comps.All()
	if len(stored) != 1 || stored[0].Turn != "cp1" || stored[0].Provider != "sim" || stored[0].SourceSeq != 4 {
		t.Fatalf("stored compactions = %+v", stored)
	}
}

// TestAutoCompaction: with a low threshold, a compaction runs before the
// model step, the prompt of the running turn stays raw (the model must read
// the request itself, not a summary of it), and the turn does what it asks.
func TestAutoCompaction(t *testing.T) {
	t.Parallel()
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	h := newHarness(t, newSim(t, trace), func(c *Config) { c.CompactAt = 40 })
	var notices []string
	onUp := func(u Update) {
		if u.Kind == UpdateNotice {
			notices = append(notices, u.Text)
		}
	}
	first := "an opening prompt long enough to pass the threshold " + strings.Repeat("padding ", 30)
	if out := h.ag.RunTurn(context.Background(), "cp1", first, onUp); out.Status != StatusCompleted {
		t.Fatalf("first turn = %+v", out)
	}
	out := h.ag.RunTurn(context.Background(), "cp2", "write auto.txt\nauto-content\nEOF", onUp)
	if out.Status != StatusCompleted || !strings.HasPrefix(out.Text, "done: 1 action\n") && out.Text != "done: 1 action" {
		t.Fatalf("second turn = %+v", out)
	}
	if got, _ := fileContent(t, h.root, "auto.txt"); got != "auto-content\n" {
		t.Fatalf("auto.txt = %q: the prompt did not reach the model intact", got)
	}
	if len(notices) != 0 {
		t.Fatalf("notices = %q", notices)
	}
	lines := readTrace(t, trace)
	var ops []string
	for _, l := range lines {
		ops = append(ops, l.Op)
	}
	// cp1: one step (nothing to compact before its first answer).
	// cp2: compaction, then the tool step and the reply step.
	if strings.Join(ops, ",") != ",compact,," {
		t.Fatalf("trace ops = %q", ops)
	}
	step := lines[2].Body.Messages
	if !strings.HasPrefix(step[0].Text, summaryPrefix) || !strings.HasSuffix(step[0].Text, "write auto.txt\nauto-content\nEOF") {
		t.Fatalf("first model step after compaction = %+v", step)
	}
	if strings.Contains(lines[1].Body.Messages[len(lines[1].Body.Messages)-1].Text, "auto.txt") {
		t.Fatalf("the running turn's prompt was summarized: %+v", lines[1].Body.Messages)
	}
	stored := h.comps.All()
	if len(stored) != 1 || stored[0].Turn != "cp1" {
		t.Fatalf("stored = %+v", stored)
	}
}
