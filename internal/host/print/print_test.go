package print

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/fault"
)

// failing is a session whose commands and prompts fail with err, or whose
// turn ends with status.
type failing struct {
	err    error
	status string
}

func (f failing) ID() string     { return "s_1" }
func (f failing) Exists() bool   { return true }
func (f failing) Info() app.Info { return app.Info{SessionID: "s_1"} }
func (f failing) Exec(context.Context, command.Command) (command.Result, error) {
	return command.Result{}, f.err
}

func (f failing) Prompt(context.Context, string, func(agent.Update)) (app.TurnResult, error) {
	if f.err != nil {
		return app.TurnResult{}, f.err
	}
	return app.TurnResult{CheckpointID: "cp1", Status: f.status}, nil
}

func run(t *testing.T, ctx context.Context, s Session, prompt string) (fault.Code, map[string]any) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(ctx, s, Options{Prompt: prompt, JSON: true, Stdout: &out, Stderr: &errOut})
	var obj map[string]any
	if err := json.Unmarshal(out.Bytes(), &obj); err != nil {
		t.Fatalf("stdout %q: %v", out.String(), err)
	}
	return code, obj
}

// TestFailuresReportTheirCodes: print mode reports every failure with the
// code its error carries, for slash commands and turns alike, and returns
// that code (whose exit status the command line ends with).
func TestFailuresReportTheirCodes(t *testing.T) {
	t.Parallel()
	for _, e := range fault.Table() {
		err := fmt.Errorf("session s_1: %w", fault.New(e.Code, "land: refused"))
		for _, prompt := range []string{"/apply", "hello"} {
			code, obj := run(t, context.Background(), failing{err: err}, prompt)
			if code != e.Code || obj["code"] != string(e.Code) || obj["error"] != "session s_1: refused" {
				t.Errorf("%s from %q: returned %q, printed %v", e.Code, prompt, code, obj)
			}
		}
	}
	// A cancelled context makes any failure but a usage error interrupted.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if code, obj := run(t, ctx, failing{err: fault.New(fault.Conflict, "land: conflicts")}, "/apply"); code != fault.Interrupted || obj["code"] != "interrupted" {
		t.Errorf("cancelled: returned %q, printed %v", code, obj)
	}
	if code, _ := run(t, ctx, failing{err: &command.UsageError{Msg: "bad"}}, "/apply"); code != fault.Usage {
		t.Errorf("cancelled usage error: returned %q", code)
	}
	// A turn that did not complete carries its code.
	for status, want := range map[string]fault.Code{
		agent.StatusFailed:      fault.TurnFailed,
		agent.StatusCancelled:   fault.Interrupted,
		agent.StatusInterrupted: fault.TurnInterrupted,
		agent.StatusCompleted:   "",
	} {
		code, obj := run(t, context.Background(), failing{status: status}, "hello")
		got, _ := obj["code"].(string)
		if code != want || got != string(want) {
			t.Errorf("turn %s: returned %q, printed code %q", status, code, got)
		}
		if want != "" && code.Exit() != want.Exit() {
			t.Errorf("turn %s exits %d", status, code.Exit())
		}
	}
}
