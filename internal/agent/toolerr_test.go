package agent

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/provider"
)

// TestToolInfrastructureErrorFailsTheTurn: a tool that cannot run at all
// (here: its working directory vanished) is an infrastructure failure the
// user must see, not only a tool result the model reads. The turn fails
// with the error, every call still gets a result, and the turn is
// recorded as failed.
func TestToolInfrastructureErrorFailsTheTurn(t *testing.T) {
	t.Parallel()
	p := &scripted{steps: []func(context.Context, provider.Request) (provider.Response, error){
		reply(provider.Message{ToolCalls: []provider.ToolCall{
			{ID: "c1", Name: "bash", Arguments: `{"command":"echo hi"}`},
			{ID: "c2", Name: "bash", Arguments: `{"command":"echo again"}`},
		}}),
		reply(provider.Message{Text: "done"}),
	}}
	h := newHarness(t, p, nil)
	if err := os.RemoveAll(h.root); err != nil {
		t.Fatal(err)
	}
	var errs []string
	out := h.ag.RunTurn(context.Background(), "cp1", "go", func(u Update) {
		if u.Kind == UpdateError {
			errs = append(errs, u.Text)
		}
	})
	if out.Status != StatusFailed || out.Err == nil || !strings.Contains(out.Err.Error(), "tool bash") {
		t.Fatalf("outcome %+v; want a failed turn naming the tool", out)
	}
	if len(errs) == 0 {
		t.Fatal("the user was not shown the error")
	}
	results := 0
	for _, ev := range h.diskEvents(t) {
		if ev.Type == EventToolResult {
			results++
		}
	}
	if results != 2 {
		t.Fatalf("%d tool results recorded, want one for each call", results)
	}
}
