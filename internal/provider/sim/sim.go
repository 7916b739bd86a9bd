// Package sim is an offline, deterministic provider. It turns the lines of
// the latest user prompt into real tool calls so every feature of yolop can
// be driven and tested without a network or an API key.
//
// The language (one instruction per line, everything else is echoed):
//
//	$ <command>             bash {"command"}: everything after "$ "
//	write <path>            write_file {"path","content"}: the following lines up
//	  …content…             to a line that is exactly EOF (or the end of the
//	EOF                     prompt), each ending with "\n"; keywords inside are content
//	read <path>             read_file {"path"}
//	rm <path>               delete_file {"path"}
//	think <text>            a signed reasoning artifact on this turn's assistant message
//	undo | redo             checkpoint {"action":"undo"|"redo"}
//	undo the last turn      checkpoint {"action":"undo"}
//	rewind <cp> [mode]      checkpoint {"action":"rewind","target","mode"}
//	branches                checkpoint {"action":"branches"}
//	branch <bN> [mode]      checkpoint {"action":"branch","target","mode"} (bN like b2)
//	sleep <ms>              the model step waits (ctx cancels the wait)
//	fail                    the model step returns an error; later lines are not reached
//
// write, read, rm take exactly one token, rewind one or two, undo and redo
// none; any other shape ("write a poem about x") is an ordinary line and is
// echoed. Trailing "\r" is ignored so CRLF prompts behave the same.
//
// Steps: when the last message is the prompt, all tool calls are answered in
// one assistant message (ids call_N, numbered after the calls already in the
// conversation). Once tool results follow, the reply is "done: <n> actions" ("done: 1 action")
// followed by the echoed lines. Without tool instructions the reply is the
// echoed lines, or "ok". sleep and fail act in the step that reaches them:
// before (or between) tool instructions they act in the first step, after the
// last tool instruction in the reply step, so "$ touch x" then "fail" creates
// x and then fails the turn.
//
// Reasoning artifacts are signed with HMAC-SHA256 under a fixed key; every
// sim artifact sent back is verified, and an altered one fails the request,
// the way a real provider rejects a tampered thinking block.
package sim

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/provider"
)

func init() {
	provider.Register(provider.NameSim, func(cfg provider.Config) (provider.Provider, error) {
		return New(cfg)
	})
}

// signingKey is fixed so that signatures survive restarts: artifacts stored
// in events.jsonl by one process are verified by the next.
var signingKey = []byte("yolop-sim-reasoning-v1")

// Sign returns the signature the sim gives a reasoning text.
func Sign(text string) string {
	m := hmac.New(sha256.New, signingKey)
	m.Write([]byte(text))
	return hex.EncodeToString(m.Sum(nil))
}

// Provider is the sim provider.
type Provider struct {
	model string
	trace *provider.Trace
}

var _ provider.Provider = (*Provider)(nil)

// New returns a sim provider. Only Model and TracePath of cfg are used.
func New(cfg provider.Config) (*Provider, error) {
	model := cfg.Model
	if model == "" {
		model = provider.DefaultSimModel
	}
	return &Provider{model: model, trace: provider.NewTrace(cfg.TracePath)}, nil
}

// Name implements provider.Provider.
func (p *Provider) Name() string { return provider.NameSim }

// Model implements provider.Provider.
func (p *Provider) Model() string { return p.model }

// call is one tool call of a program.
type call struct {
	name string
	args any
}

// program is a parsed prompt.
type program struct {
	calls     []call
	reasoning []string
	echo      []string
	// sleepFirst and sleepReply are the waits of the first step and of the
	// reply step after tool results.
	sleepFirst, sleepReply time.Duration
	// failFirst and failReply say which step a fail instruction reaches.
	failFirst, failReply bool
}

type bashArgs struct {
	Command string `json:"command"`
}

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

type pathArgs struct {
	Path string `json:"path"`
}

type checkpointArgs struct {
	Action string `json:"action"`
	Target string `json:"target,omitempty"`
	Mode   string `json:"mode,omitempty"`
}

// parse reads a prompt into a program.
func parse(prompt string) program {
	var p program
	type sleepAt struct {
		d     time.Duration
		calls int // tool calls before this sleep
	}
	var sleeps []sleepAt
	failAt := -1

	lines := strings.Split(prompt, "\n")
	for i := range lines {
		lines[i] = strings.TrimSuffix(lines[i], "\r")
	}
lines:
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "$ ") && strings.TrimSpace(line[2:]) != "":
			p.calls = append(p.calls, call{"bash", bashArgs{Command: line[2:]}})
		case len(f) == 2 && f[0] == "write":
			var content strings.Builder
			for i++; i < len(lines) && lines[i] != "EOF"; i++ {
				content.WriteString(lines[i])
				content.WriteByte('\n')
			}
			p.calls = append(p.calls, call{"write_file", writeArgs{Path: f[1], Content: content.String()}})
		case len(f) == 2 && f[0] == "read":
			p.calls = append(p.calls, call{"read_file", pathArgs{Path: f[1]}})
		case len(f) == 2 && f[0] == "rm":
			p.calls = append(p.calls, call{"delete_file", pathArgs{Path: f[1]}})
		case len(f) >= 2 && f[0] == "think" && strings.HasPrefix(strings.TrimLeft(line, " \t"), "think "):
			text := strings.TrimSpace(strings.TrimLeft(line, " \t")[len("think "):])
			p.reasoning = append(p.reasoning, text)
		case len(f) == 1 && (f[0] == "undo" || f[0] == "redo"):
			p.calls = append(p.calls, call{"checkpoint", checkpointArgs{Action: f[0]}})
		case strings.Join(f, " ") == "undo the last turn":
			p.calls = append(p.calls, call{"checkpoint", checkpointArgs{Action: "undo"}})
		case (len(f) == 2 || len(f) == 3) && f[0] == "rewind":
			a := checkpointArgs{Action: "rewind", Target: f[1]}
			if len(f) == 3 {
				a.Mode = f[2]
			}
			p.calls = append(p.calls, call{"checkpoint", a})
		case len(f) >= 3 && f[0] == "call" && callArgs(line) != nil:
			// call <tool> <json-arguments>: any named tool (an MCP
			// server's too), an instruction only when the JSON parses.
			p.calls = append(p.calls, call{f[1], callArgs(line)})
		case len(f) == 1 && f[0] == "branches":
			p.calls = append(p.calls, call{"checkpoint", checkpointArgs{Action: "branches"}})
		case (len(f) == 2 || len(f) == 3) && f[0] == "branch" && isBranchID(f[1]):
			a := checkpointArgs{Action: "branch", Target: f[1]}
			if len(f) == 3 {
				a.Mode = f[2]
			}
			p.calls = append(p.calls, call{"checkpoint", a})
		case len(f) == 2 && f[0] == "sleep" && isMillis(f[1]):
			ms, _ := strconv.Atoi(f[1])
			sleeps = append(sleeps, sleepAt{time.Duration(ms) * time.Millisecond, len(p.calls)})
		case len(f) == 1 && f[0] == "fail":
			failAt = len(p.calls)
			break lines
		default:
			if strings.TrimSpace(line) != "" {
				p.echo = append(p.echo, line)
			}
		}
	}
	for _, s := range sleeps {
		if s.calls < len(p.calls) || len(p.calls) == 0 {
			p.sleepFirst += s.d
		} else {
			p.sleepReply += s.d
		}
	}
	if failAt >= 0 {
		if len(p.calls) == 0 {
			p.failFirst = true
		} else {
			p.failReply = true
		}
	}
	return p
}

// callArgs returns the JSON object after "call <tool> ", or nil when the
// rest of the line is not a JSON object.
func callArgs(line string) json.RawMessage {
	rest := strings.TrimSpace(strings.TrimLeft(line, " \t")[len("call"):])
	_, args, ok := strings.Cut(rest, " ")
	args = strings.TrimSpace(args)
	if !ok || !strings.HasPrefix(args, "{") || !json.Valid([]byte(args)) {
		return nil
	}
	return json.RawMessage(args)
}

// isMillis accepts a plain non-negative decimal of at most a day.
// isBranchID reports whether s names a branch (b1, b2, …), so that
// "branch out" stays prose.
func isBranchID(s string) bool {
	if len(s) < 2 || s[0] != 'b' || s[1] == '0' {
		return false
	}
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func isMillis(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && n <= 24*60*60*1000 && !strings.HasPrefix(s, "+")
}

// ErrFail is returned by Stream when the prompt reaches a fail instruction.
var ErrFail = fault.Plain("sim: the prompt asked the model to fail (fail instruction)")

// Stream implements provider.Provider.
func (p *Provider) Stream(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	if err := ctx.Err(); err != nil {
		return provider.Response{}, err
	}
	if err := p.record("", req); err != nil {
		return provider.Response{}, err
	}
	if err := verify(req.Messages); err != nil {
		return provider.Response{}, err
	}
	last := lastUser(req.Messages)
	if last < 0 {
		return provider.Response{}, fmt.Errorf("sim: the request has no user message to act on")
	}
	prog := parse(req.Messages[last].Text)
	if onDelta == nil {
		onDelta = func(provider.Delta) {}
	}
	usage := provider.Usage{InputTokens: requestTokens(req)}

	if last < len(req.Messages)-1 {
		// Reply step: tool results (or anything else) follow the prompt.
		if err := wait(ctx, prog.sleepReply); err != nil {
			return provider.Response{}, err
		}
		if prog.failReply {
			return provider.Response{}, ErrFail
		}
		n := 0
		for _, m := range req.Messages[last+1:] {
			if m.Role == provider.RoleAssistant {
				n += len(m.ToolCalls)
			}
		}
		text := strings.Join(append([]string{"done: " + plural(n, "action", "actions")}, prog.echo...), "\n")
		streamText(text, onDelta)
		usage.OutputTokens = tokens(text)
		return provider.Response{
			Message:    provider.Message{Role: provider.RoleAssistant, Text: text},
			StopReason: provider.StopEndTurn,
			Usage:      usage,
		}, nil
	}

	if err := wait(ctx, prog.sleepFirst); err != nil {
		return provider.Response{}, err
	}
	if prog.failFirst {
		return provider.Response{}, ErrFail
	}
	msg := provider.Message{Role: provider.RoleAssistant}
	for _, r := range prog.reasoning {
		onDelta(provider.Delta{Reasoning: r})
		msg.Reasoning = append(msg.Reasoning, provider.Reasoning{Provider: provider.NameSim, Text: r, Signature: Sign(r)})
		usage.OutputTokens += tokens(r)
	}
	if len(prog.calls) == 0 {
		msg.Text = "ok"
		if len(prog.echo) > 0 {
			msg.Text = strings.Join(prog.echo, "\n")
		}
		streamText(msg.Text, onDelta)
		usage.OutputTokens += tokens(msg.Text)
		return provider.Response{Message: msg, StopReason: provider.StopEndTurn, Usage: usage}, nil
	}
	prior := 0
	for _, m := range req.Messages {
		prior += len(m.ToolCalls)
	}
	for i, c := range prog.calls {
		args, err := marshal(c.args)
		if err != nil {
			return provider.Response{}, fmt.Errorf("sim: encode %s arguments: %w", c.name, err)
		}
		msg.ToolCalls = append(msg.ToolCalls, provider.ToolCall{
			ID:        fmt.Sprintf("call_%d", prior+i+1),
			Name:      c.name,
			Arguments: args,
		})
		usage.OutputTokens += tokens(args)
	}
	return provider.Response{Message: msg, StopReason: provider.StopToolUse, Usage: usage}, nil
}

// Summary bounds: a real model's summary has a size budget whatever the
// length of the conversation, and so does the sim's, so that long-session
// measurements are not inflated by the test double.
const (
	summaryPrompts    = 20 // prompt beginnings named, the most recent ones
	summaryPromptRune = 60 // runes kept of each beginning
)

// Compact implements provider.Provider with a deterministic summary naming
// how many messages it replaces and how the last summaryPrompts user
// prompts began (earlier ones are counted).
func (p *Provider) Compact(ctx context.Context, req provider.Request) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if err := p.record("compact", req); err != nil {
		return "", err
	}
	if err := verify(req.Messages); err != nil {
		return "", err
	}
	var starts []string
	for _, m := range req.Messages {
		if m.Role != provider.RoleUser {
			continue
		}
		f := strings.Fields(m.Text)
		if len(f) > 5 {
			f = f[:5]
		}
		start := strings.Join(f, " ")
		if r := []rune(start); len(r) > summaryPromptRune {
			start = string(r[:summaryPromptRune-1]) + "…"
		}
		starts = append(starts, start)
	}
	if n := len(starts) - summaryPrompts; n > 0 {
		starts = append([]string{fmt.Sprintf("(%d earlier prompts)", n)}, starts[n:]...)
	}
	return fmt.Sprintf("summary of %d messages: %s", len(req.Messages), strings.Join(starts, "; ")), nil
}

func (p *Provider) record(op string, req provider.Request) error {
	if p.trace == nil {
		return nil
	}
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("sim: encode request for trace: %w", err)
	}
	if err := p.trace.Append(provider.NameSim, op, "", body); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	return nil
}

// verify checks every sim reasoning artifact in the conversation.
func verify(msgs []provider.Message) error {
	for i, m := range msgs {
		for j, r := range m.Reasoning {
			if r.Provider != provider.NameSim {
				continue
			}
			if !hmac.Equal([]byte(r.Signature), []byte(Sign(r.Text))) {
				return fmt.Errorf("sim: reasoning artifact %d of message %d was altered (its signature does not match its text); the stored conversation must not be edited", j+1, i+1)
			}
		}
	}
	return nil
}

func lastUser(msgs []provider.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == provider.RoleUser {
			return i
		}
	}
	return -1
}

// wait sleeps for d unless ctx ends first.
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// streamText sends text in up to three chunks split on rune boundaries, so
// hosts exercise their incremental rendering.
func streamText(text string, onDelta func(provider.Delta)) {
	n := utf8.RuneCountInString(text)
	size := (n + 2) / 3
	if size == 0 {
		return
	}
	var chunk strings.Builder
	count := 0
	for _, r := range text {
		chunk.WriteRune(r)
		count++
		if count == size {
			onDelta(provider.Delta{Text: chunk.String()})
			chunk.Reset()
			count = 0
		}
	}
	if chunk.Len() > 0 {
		onDelta(provider.Delta{Text: chunk.String()})
	}
}

// marshal encodes without HTML escaping so commands like "a > b" stay
// readable in events and traces.
func marshal(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func tokens(s string) int { return (len(s) + 3) / 4 }

func requestTokens(req provider.Request) int {
	n := tokens(req.System)
	for _, m := range req.Messages {
		n += tokens(m.Text) + 4
		for _, c := range m.ToolCalls {
			n += tokens(c.Name) + tokens(c.Arguments)
		}
	}
	return n
}

// plural writes a count with the noun's singular or plural form.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
