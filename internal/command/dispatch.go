package command

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/checkpoint"
)

// Checkpoints is what the restore commands need from a session's
// checkpoint controller.
type Checkpoints interface {
	List(ctx context.Context, all bool) ([]checkpoint.Row, error)
	Preview(ctx context.Context, req checkpoint.Request) (*checkpoint.Preview, error)
	Confirm(ctx context.Context, req checkpoint.Request, token string) (*checkpoint.Restored, error)
	Compact(ctx context.Context) (string, error)
	Branches() []checkpoint.BranchRow
	Retained(ctx context.Context) ([]checkpoint.Retained, error)
}

// Tasks is what /tasks needs: the background processes that can still
// write the workspace.
type Tasks interface {
	Active() []tools.Writer
	Stop(id string) error
}

// Target is what command handlers act on: a session, whether or not it
// exists on disk yet. The session lifecycle layer implements it.
type Target interface {
	Checkpoints() Checkpoints
	Background() Tasks
	// ContextReport describes what the model is given: the project
	// instructions in force, the context size and the token usage.
	ContextReport() string
}

// ResultKind says which field of a Result is set.
type ResultKind string

// Result kinds.
const (
	ResultList      ResultKind = "list"
	ResultPreview   ResultKind = "preview"
	ResultRestored  ResultKind = "restored"
	ResultCompacted ResultKind = "compacted"
	ResultTasks     ResultKind = "tasks"
	ResultHelp      ResultKind = "help"
	ResultContext   ResultKind = "context"
	ResultBranches  ResultKind = "branches"
)

// Result is what a command produced.
type Result struct {
	Kind     ResultKind
	Rows     []checkpoint.Row    // list
	Preview  *checkpoint.Preview // preview
	Restored *checkpoint.Restored
	// Branches is set for ResultBranches (Text holds them rendered).
	Branches []checkpoint.BranchRow
	// Retained lists the recovery snapshots kept besides the checkpoints
	// (a list with --all).
	Retained []checkpoint.Retained
	Text     string // compacted, tasks, help, diff, apply, commit, branches: a human message
	Data     any    // diff, apply, commit: the object JSON output prints
	Confirm  string // apply preview: the slash command that confirms it
	// Body is an apply preview without its token lines, and ConfirmWhat
	// what confirming it does, for a host that confirms with a key (the
	// TUI's y) instead of a typed line.
	Body        string
	ConfirmWhat string
}

// Run dispatches a parsed command to its handler.
func Run(ctx context.Context, t Target, c Command) (Result, error) {
	d, ok := Lookup(c.Name)
	if !ok || d.Run == nil {
		return Result{}, usagef("/%s is not available here", c.Name)
	}
	return d.Run(ctx, t, c)
}

func runRestore(ctx context.Context, t Target, c Command) (Result, error) {
	ctl := t.Checkpoints()
	if c.Name == "rewind" && c.Target == "" {
		rows, err := ctl.List(ctx, c.All)
		if err != nil {
			return Result{}, err
		}
		res := Result{Kind: ResultList, Rows: rows}
		if c.All {
			if res.Retained, err = ctl.Retained(ctx); err != nil {
				return Result{}, err
			}
		}
		return res, nil
	}
	req := c.Request()
	if c.Confirm {
		r, err := ctl.Confirm(ctx, req, c.Token)
		if err != nil {
			return Result{}, err
		}
		return Result{Kind: ResultRestored, Restored: r}, nil
	}
	p, err := ctl.Preview(ctx, req)
	if err != nil {
		return Result{}, err
	}
	return Result{Kind: ResultPreview, Preview: p}, nil
}

func runBranches(_ context.Context, t Target, _ Command) (Result, error) {
	rows := t.Checkpoints().Branches()
	return Result{Kind: ResultBranches, Branches: rows, Text: BranchesText(rows, func(t time.Time) string { return t.Local().Format("Jan 2 15:04") })}, nil
}

func runCompact(ctx context.Context, t Target, _ Command) (Result, error) {
	msg, err := t.Checkpoints().Compact(ctx)
	if errors.Is(err, agent.ErrNothingToCompact) {
		return Result{Kind: ResultCompacted, Text: "nothing to compact yet: the context is already as small as compaction can make it"}, nil
	}
	if err != nil {
		return Result{}, err
	}
	return Result{Kind: ResultCompacted, Text: msg}, nil
}

func runTasks(_ context.Context, t Target, c Command) (Result, error) {
	tasks := t.Background()
	if c.Verb == "stop" {
		if err := tasks.Stop(c.TaskID); err != nil {
			return Result{}, err
		}
		return Result{Kind: ResultTasks, Text: "stopped task " + c.TaskID}, nil
	}
	act := tasks.Active()
	if len(act) == 0 {
		return Result{Kind: ResultTasks, Text: "no running tasks"}, nil
	}
	var b strings.Builder
	for _, w := range act {
		fmt.Fprintf(&b, "%s  %s  %q  running for %s\n", w.ID, w.Kind, w.Command, time.Since(w.Started).Round(time.Second))
	}
	return Result{Kind: ResultTasks, Text: b.String()}, nil
}

func runContext(_ context.Context, t Target, _ Command) (Result, error) {
	return Result{Kind: ResultContext, Text: t.ContextReport()}, nil
}

func runHelp(context.Context, Target, Command) (Result, error) {
	return Result{Kind: ResultHelp, Text: HelpText(HostAll)}, nil
}

// HelpText lists the commands offered on host h with their hints.
func HelpText(h Host) string {
	var b strings.Builder
	for _, d := range For(h) {
		fmt.Fprintf(&b, "/%s %s\n    %s\n", d.Name, d.Hint, d.Description)
	}
	return b.String()
}
