package checkpoint_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// TestLongPromptKeptInTheEventLog: a prompt longer than the timeline keeps
// is recorded there by its start and its length; listings show that start
// (in a new process too, from resume.bin and from a replay of the logs),
// and a rewind puts the whole prompt back, read from the event log.
func TestLongPromptKeptInTheEventLog(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	// Multi-byte characters across the cut, so it must move back to a
	// character boundary.
	long := "summarize this log\n" + strings.Repeat("é line of a pasted log\n", 1000)
	r.turn(long)
	r.turn("$ echo two > two.txt")

	data := readFile(t, filepath.Join(session.SessionsDir(r.data), r.id, session.TimelineFile))
	if n := len(data); n > timeline.PromptKept+4096 {
		t.Errorf("timeline.jsonl is %d bytes after a %d-byte prompt; want the prompt cut to %d", n, len(long), timeline.PromptKept)
	}
	check := func(when string) {
		t.Helper()
		rows, err := r.ctl.List(context.Background(), false)
		if err != nil {
			t.Fatal(err)
		}
		row := rows[len(rows)-1]
		if row.ID != "cp1" || !strings.HasPrefix(row.Title, "summarize this log") || row.PromptBytes != int64(len(long)) {
			t.Fatalf("%s: row %s %q bytes %d; want cp1 %q bytes %d", when, row.ID, row.Title, row.PromptBytes, "summarize this log", len(long))
		}
		if !strings.HasPrefix(long, row.Prompt) || len(row.Prompt) > timeline.PromptKept || len(row.Prompt) < timeline.PromptKept-4 {
			t.Fatalf("%s: listed prompt is %d bytes, not the start of the prompt cut near %d", when, len(row.Prompt), timeline.PromptKept)
		}
		if !bytes.Equal([]byte(row.Prompt), []byte(strings.ToValidUTF8(row.Prompt, "?"))) {
			t.Fatalf("%s: listed prompt cut inside a character", when)
		}
	}
	check("same process")
	r.reopen()
	check("reopened")
	if err := os.Remove(filepath.Join(session.SessionsDir(r.data), r.id, "resume.bin")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	r.reopen()
	check("logs replayed")

	res := r.restore(rewind("cp1", checkpoint.ModeConversation))
	if res.Prompt != long {
		t.Fatalf("rewind put back %d bytes of the prompt; want the whole %d", len(res.Prompt), len(long))
	}
}

// promptLostRuntime ends a turn with a long prompt before recording
// anything, as a full disk does ("record prompt: no space left"); other
// turns run on the agent.
type promptLostRuntime struct{ base *agent.Agent }

func (p *promptLostRuntime) RunTurn(ctx context.Context, turnID, prompt string, onUpdate func(agent.Update)) agent.Outcome {
	if len(prompt) > timeline.PromptKept {
		return agent.Outcome{Status: agent.StatusFailed, Err: errors.New("record prompt: no space left on device")}
	}
	return p.base.RunTurn(ctx, turnID, prompt, onUpdate)
}

func (p *promptLostRuntime) Reseed(active []session.Event, comps []timeline.Compaction, in func(string, int64) bool) {
	p.base.Reseed(active, comps, in)
}
func (p *promptLostRuntime) Note(turn string, n agent.NoticeData) error { return p.base.Note(turn, n) }
func (p *promptLostRuntime) Compact(ctx context.Context) (string, error) {
	return p.base.Compact(ctx)
}

// TestLongPromptOfATurnThatDiedFirst: a turn that ends before its prompt
// reaches the event log (a full disk, a crash) still gives the whole
// prompt back on a rewind: it was kept beside the journal first. A turn
// that recorded it leaves no such file.
func TestLongPromptOfATurnThatDiedFirst(t *testing.T) {
	t.Parallel()
	pr := &promptLostRuntime{}
	r := newRig(t, rigOpts{runtime: func(a *agent.Agent) checkpoint.Runtime { pr.base = a; return pr }})
	r.turn("$ echo one > one.txt")
	long := "retry this\n" + strings.Repeat("a pasted line of a log\n", 400)
	out, err := r.ctl.RunTurn(context.Background(), long, func(agent.Update) {})
	if err != nil || out.Status != agent.StatusFailed {
		t.Fatalf("turn: %+v %v", out, err)
	}
	prompts := filepath.Join(session.SessionsDir(r.data), r.id, "prompts")
	if ents, err := os.ReadDir(prompts); err != nil || len(ents) != 1 {
		t.Fatalf("kept prompts: %v %v", ents, err)
	}
	r.reopen()
	res := r.restore(rewind("cp2", checkpoint.ModeConversation))
	if res.Prompt != long {
		t.Fatalf("rewind put back %d bytes of the prompt; want the whole %d", len(res.Prompt), len(long))
	}

	// A long prompt that was recorded leaves nothing beside the journal.
	r2 := newRig(t, rigOpts{})
	r2.turn("$ true # " + strings.Repeat("x", timeline.PromptKept))
	if ents, err := os.ReadDir(filepath.Join(session.SessionsDir(r2.data), r2.id, "prompts")); err != nil || len(ents) != 0 {
		t.Fatalf("a recorded prompt left %d kept files (%v)", len(ents), err)
	}
}
