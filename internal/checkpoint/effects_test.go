package checkpoint_test

import (
	"context"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// A turn whose shell command was asked for but never reported back (the
// process died while it ran) is named by the warning about effects outside
// the workspace, like one that finished.
func TestEffectsWarningNamesAShellCallWithoutResult(t *testing.T) {
	t.Parallel()
	cr := &callOnlyRuntime{}
	r := newRig(t, rigOpts{sandbox: "off", runtime: func(a *agent.Agent) checkpoint.Runtime { cr.base = a; return cr }})
	cr.store = r.sess
	r.ctl.Reseed()
	if _, err := r.ctl.RunTurn(context.Background(), "run a command", nil); err != nil {
		t.Fatal(err)
	}
	pv, err := r.ctl.Preview(context.Background(), checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp1", Mode: checkpoint.ModeBoth})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, w := range pv.Warnings {
		if w.Kind == checkpoint.WarnEffectsOutside && w.Turn == "cp1" && strings.Contains(w.Message, "sandbox off") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no effects warning for cp1: %+v", pv.Warnings)
	}
}

// callOnlyRuntime records a model step asking for a shell command and ends
// the turn as interrupted before any result.
type callOnlyRuntime struct {
	base  checkpoint.Runtime
	store *session.Session
}

func (c *callOnlyRuntime) RunTurn(ctx context.Context, turnID, prompt string, onUpdate func(agent.Update)) agent.Outcome {
	msg := provider.Message{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "call_1", Name: "bash", Arguments: `{"command":"sleep 60"}`}}}
	if _, err := c.store.Append(agent.EventAssistant, turnID, agent.AssistantData{Provider: "sim", Model: "sim", Message: msg, StopReason: provider.StopToolUse}); err != nil {
		return agent.Outcome{Status: agent.StatusFailed, Err: err}
	}
	return agent.Outcome{Status: agent.StatusInterrupted}
}

func (c *callOnlyRuntime) Reseed(active []session.Event, comps []timeline.Compaction, in func(string, int64) bool) {
	if c.base != nil {
		c.base.Reseed(active, comps, in)
	}
}

func (c *callOnlyRuntime) Note(turn string, n agent.NoticeData) error { return c.base.Note(turn, n) }

func (c *callOnlyRuntime) Compact(ctx context.Context) (string, error) { return c.base.Compact(ctx) }
