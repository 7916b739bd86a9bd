package command

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/yolop-dev/yolop/internal/land"
)

// Land is what /diff, /apply and /commit need from a session: the land
// operations, bound to the session and to the checkout it applies to.
type Land interface {
	Diff(ctx context.Context, o land.DiffOptions) (*land.DiffResult, error)
	Apply(ctx context.Context, o land.ApplyOptions) (*land.ApplyResult, error)
	UndoApply(ctx context.Context, o land.UndoOptions) (*land.UndoResult, error)
	Commit(ctx context.Context, o land.CommitOptions) (*land.CommitResult, error)
}

// LandTarget is a Target that can bring a session's work home.
type LandTarget interface {
	Land() Land
}

// Result kinds of the land commands. Text holds what to show; Data the
// object JSON output prints.
const (
	ResultDiff         ResultKind = "diff"
	ResultApplyPreview ResultKind = "apply_preview"
	ResultApplied      ResultKind = "applied"
	ResultCommitted    ResultKind = "committed"
)

func landDescriptors() []Descriptor {
	return []Descriptor{
		{Name: "diff", Hint: "[checkpoint]",
			Description: "Show the session's work: its files against the commit its worktree started from (or a checkpoint)",
			Example:     "/diff", Hosts: HostAll, Args: diffArgs, Run: runDiff},
		{Name: "apply", Hint: "[refuse|markers|undo] [--confirm token]",
			Description: "Preview, then merge the session's work into your checkout as uncommitted changes (undo takes it back)",
			Example:     "/apply", Hosts: HostAll, Args: applyArgs, Run: runApply},
		{Name: "commit", Hint: "[message]",
			Description: "Commit the session's files on its own branch (then git merge it from your checkout)",
			Example:     "/commit", Hosts: HostAll, Args: commitArgs, Run: runCommit},
	}
}

func landOf(t Target, name string) (Land, error) {
	lt, ok := t.(LandTarget)
	if !ok || lt.Land() == nil {
		return nil, usagef("/%s is not available here", name)
	}
	return lt.Land(), nil
}

func diffArgs(c *Command, pos []string) error {
	if c.Confirm || c.All || len(pos) > 1 {
		return usagef("usage: /diff [checkpoint]")
	}
	if len(pos) == 1 {
		id := strings.ToLower(pos[0])
		if !cpRE.MatchString(id) {
			return usagef("/diff: %q is not a checkpoint id (like cp3 or 3); run /rewind to list them", pos[0])
		}
		if !strings.HasPrefix(id, "cp") {
			id = "cp" + id
		}
		c.Target = id
	}
	return nil
}

func applyArgs(c *Command, pos []string) error {
	if c.All || len(pos) > 1 {
		return usagef("usage: /apply [refuse|markers|undo] [--confirm token]")
	}
	c.Verb = land.OnConflictRefuse
	if len(pos) == 1 {
		switch v := strings.ToLower(pos[0]); v {
		case land.OnConflictRefuse, land.OnConflictMarkers:
			c.Verb = v
		case "undo":
			if c.Confirm {
				return usagef("/apply undo takes no token: it puts back exactly what the last apply wrote and refuses if you edited those files since")
			}
			c.Verb = "undo"
		default:
			return usagef("/apply: %q is not refuse, markers or undo", pos[0])
		}
	}
	return nil
}

func commitArgs(c *Command, pos []string) error {
	if c.Confirm || c.All {
		return usagef("usage: /commit [message]")
	}
	msg := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(c.Raw), "/"+c.Name))
	if msg == "" && len(pos) > 0 {
		msg = strings.Join(pos, " ")
	}
	c.Text = msg
	return nil
}

func runDiff(ctx context.Context, t Target, c Command) (Result, error) {
	l, err := landOf(t, c.Name)
	if err != nil {
		return Result{}, err
	}
	res, err := l.Diff(ctx, land.DiffOptions{From: c.Target})
	if err != nil {
		return Result{}, err
	}
	text := res.Text
	if text == "" {
		text = fmt.Sprintf("No changes against %s.\n", map[bool]string{true: "the base commit", false: res.From}[res.From == "base"])
	}
	for _, n := range res.Notes {
		text += "note: " + n + "\n"
	}
	return Result{Kind: ResultDiff, Text: text, Data: res}, nil
}

func runApply(ctx context.Context, t Target, c Command) (Result, error) {
	l, err := landOf(t, c.Name)
	if err != nil {
		return Result{}, err
	}
	if c.Verb == "undo" {
		res, err := l.UndoApply(ctx, land.UndoOptions{Hints: land.GrammarSlash})
		if err != nil {
			return Result{}, err
		}
		return Result{Kind: ResultApplied, Text: repaired(res.Repairs) + res.Text(), Data: res}, nil
	}
	if !c.Confirm {
		res, err := l.Apply(ctx, land.ApplyOptions{DryRun: true, OnConflict: c.Verb, Hints: land.GrammarSlash})
		if res == nil || errors.Is(err, land.ErrInTheWay) {
			// Files in the way: no apply can be confirmed until they
			// are moved, and the error names them.
			return Result{}, err
		}
		text := repaired(res.Repairs) + strings.TrimSuffix(res.Text(), "Nothing was written.\n")
		if res.Token == "" && res.MarkersToken != "" {
			// This apply would be refused: the only one to confirm
			// writes conflict markers.
			confirm := "/apply markers --confirm " + res.MarkersToken
			what := "write conflict markers into " + strings.Join(res.Markers, ", ")
			if len(res.Markers) == 0 {
				what = "apply with each conflicting path keeping one side, as the notes say"
			}
			body := text + "\n/apply would write nothing, so what is offered is `/apply markers`.\n"
			text += fmt.Sprintf("\n/apply would write nothing, so there is no token for it.\nConfirmation token for /apply markers: %s\nTo %s instead (undo with /apply undo), send exactly:\n%s\n",
				res.MarkersToken, what, confirm)
			return Result{Kind: ResultApplyPreview, Text: text, Data: res, Confirm: confirm, Body: body, ConfirmWhat: what + " (undo with /apply undo)"}, nil
		}
		confirm := "/apply --confirm " + res.Token
		if c.Verb != land.OnConflictRefuse {
			confirm = "/apply " + c.Verb + " --confirm " + res.Token
		}
		body := text
		text += fmt.Sprintf("\nConfirmation token: %s\nTo apply, send exactly:\n%s\n", res.Token, confirm)
		return Result{Kind: ResultApplyPreview, Text: text, Data: res, Confirm: confirm, Body: body, ConfirmWhat: "apply these changes to " + res.Target + " (undo with /apply undo)"}, nil
	}
	res, err := l.Apply(ctx, land.ApplyOptions{OnConflict: c.Verb, Token: c.Token, Hints: land.GrammarSlash})
	if err != nil {
		return Result{}, err
	}
	return Result{Kind: ResultApplied, Text: repaired(res.Repairs) + res.Text(), Data: res}, nil
}

// repaired words the repairs an apply or undo made first (an interrupted
// one settled) as every host words repairs.
func repaired(rs []string) string {
	var b strings.Builder
	for _, r := range rs {
		b.WriteString("repaired: " + r + "\n")
	}
	return b.String()
}

func runCommit(ctx context.Context, t Target, c Command) (Result, error) {
	l, err := landOf(t, c.Name)
	if err != nil {
		return Result{}, err
	}
	res, err := l.Commit(ctx, land.CommitOptions{Message: c.Text})
	if err != nil {
		return Result{}, err
	}
	return Result{Kind: ResultCommitted, Text: res.Text(), Data: res}, nil
}
