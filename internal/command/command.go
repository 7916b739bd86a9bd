// Package command is the one slash-command registry and parser that every
// host (print, ACP, TUI) reads. Hosts render results; they never re-implement
// what a command does.
package command

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/yolop-dev/yolop/internal/checkpoint"
)

// Host is a bit set of the front-ends a command is offered on.
type Host uint8

// Hosts.
const (
	HostPrint Host = 1 << iota
	HostACP
	HostTUI
	HostAll = HostPrint | HostACP | HostTUI
)

// Descriptor describes one slash command.
type Descriptor struct {
	Name        string // without the slash
	Hint        string // argument hint, e.g. "[checkpoint] [both|conversation|workspace]"
	Description string
	Hosts       Host
}

// Registry lists every slash command, in the order help shows them.
var Registry = []Descriptor{
	{Name: "rewind", Hint: "[checkpoint] [both|conversation|workspace] [--confirm token]",
		Description: "List checkpoints, or preview and confirm restoring the conversation and/or files to before a turn", Hosts: HostAll},
	{Name: "undo", Hint: "[--confirm token]",
		Description: "Preview and confirm undoing the most recent turn (conversation and files)", Hosts: HostAll},
	{Name: "redo", Hint: "[--confirm token]",
		Description: "Preview and confirm restoring what the last rewind or undo abandoned", Hosts: HostAll},
	{Name: "compact", Hint: "",
		Description: "Summarize the conversation so far to free model context (the full log is kept)", Hosts: HostAll},
	{Name: "tasks", Hint: "[stop <id>]",
		Description: "List running background shell tasks, or stop one", Hosts: HostAll},
	{Name: "help", Hint: "", Description: "Show the commands", Hosts: HostPrint | HostTUI},
	{Name: "clear", Hint: "", Description: "Clear the screen (display only; the conversation is unchanged)", Hosts: HostTUI},
	{Name: "quit", Hint: "", Description: "Leave yolop", Hosts: HostTUI},
}

// For returns the descriptors offered on host h.
func For(h Host) []Descriptor {
	var out []Descriptor
	for _, d := range Registry {
		if d.Hosts&h != 0 {
			out = append(out, d)
		}
	}
	return out
}

// Lookup finds a descriptor by name (without slash).
func Lookup(name string) (Descriptor, bool) {
	for _, d := range Registry {
		if d.Name == name {
			return d, true
		}
	}
	return Descriptor{}, false
}

// Command is a parsed slash command.
type Command struct {
	Name    string
	Target  string          // rewind: checkpoint id ("cp3")
	Mode    checkpoint.Mode // rewind: "" = default
	Token   string          // --confirm
	All     bool            // rewind --all
	TaskID  string          // tasks stop <id>
	Verb    string          // tasks: "" or "stop"
	Raw     string
	Confirm bool
}

// UsageError is a malformed or unknown command; hosts map it to exit code 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

var (
	tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	cpRE    = regexp.MustCompile(`^(cp)?[1-9][0-9]*$`)
)

// IsCommand reports whether a prompt is a slash command: its first line
// starts with "/".
func IsCommand(prompt string) bool {
	return strings.HasPrefix(strings.TrimLeft(prompt, " \t"), "/")
}

// Parse parses a slash command line.
func Parse(line string) (Command, error) {
	line = strings.TrimSpace(line)
	if first, _, _ := strings.Cut(line, "\n"); first != line {
		if strings.TrimSpace(line[len(first):]) != "" {
			return Command{}, &UsageError{Msg: "a slash command is a single line; put the prompt in a separate message"}
		}
		line = strings.TrimSpace(first)
	}
	if !strings.HasPrefix(line, "/") {
		return Command{}, &UsageError{Msg: fmt.Sprintf("%q is not a slash command", line)}
	}
	fields := strings.Fields(line[1:])
	if len(fields) == 0 {
		return Command{}, &UsageError{Msg: "empty command: try /help"}
	}
	c := Command{Name: strings.ToLower(fields[0]), Raw: line}
	if _, ok := Lookup(c.Name); !ok {
		msg := fmt.Sprintf("unknown command /%s", fields[0])
		if near := nearest(c.Name); near != "" {
			msg += fmt.Sprintf(" (did you mean /%s?)", near)
		}
		return Command{}, &UsageError{Msg: msg + ": known commands are " + names()}
	}
	var pos []string
	args := fields[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--confirm" || a == "-y":
			if i+1 >= len(args) {
				return Command{}, &UsageError{Msg: fmt.Sprintf("/%s: --confirm needs the token from the preview", c.Name)}
			}
			i++
			c.Token, c.Confirm = args[i], true
		case strings.HasPrefix(a, "--confirm="):
			c.Token, c.Confirm = strings.TrimPrefix(a, "--confirm="), true
		case a == "--all":
			c.All = true
		case strings.HasPrefix(a, "-"):
			return Command{}, &UsageError{Msg: fmt.Sprintf("/%s: unknown flag %s", c.Name, a)}
		default:
			pos = append(pos, a)
		}
	}
	if c.Confirm && !tokenRE.MatchString(c.Token) {
		return Command{}, &UsageError{Msg: fmt.Sprintf("/%s: %q is not a confirmation token (letters, digits, _ and - only)", c.Name, c.Token)}
	}
	switch c.Name {
	case "rewind":
		if c.All && (len(pos) > 0 || c.Confirm) {
			return Command{}, &UsageError{Msg: "/rewind --all lists every checkpoint; it takes no other arguments"}
		}
		if len(pos) > 2 {
			return Command{}, &UsageError{Msg: "usage: /rewind [checkpoint] [both|conversation|workspace] [--confirm token]"}
		}
		if len(pos) == 0 && c.Confirm {
			return Command{}, &UsageError{Msg: "/rewind --confirm needs the checkpoint and mode from the preview"}
		}
		if len(pos) >= 1 {
			id := strings.ToLower(pos[0])
			if !cpRE.MatchString(id) {
				return Command{}, &UsageError{Msg: fmt.Sprintf("/rewind: %q is not a checkpoint id (like cp3 or 3); run /rewind to list them", pos[0])}
			}
			if !strings.HasPrefix(id, "cp") {
				id = "cp" + id
			}
			c.Target = id
		}
		if len(pos) == 2 {
			m, err := checkpoint.ParseMode(pos[1])
			if err != nil {
				return Command{}, &UsageError{Msg: "/rewind: " + err.Error()}
			}
			c.Mode = m
		}
	case "undo", "redo":
		if len(pos) > 0 || c.All {
			return Command{}, &UsageError{Msg: fmt.Sprintf("usage: /%s [--confirm token]", c.Name)}
		}
	case "tasks":
		if c.Confirm || c.All {
			return Command{}, &UsageError{Msg: "usage: /tasks [stop <id>]"}
		}
		switch {
		case len(pos) == 0:
		case len(pos) == 2 && pos[0] == "stop":
			c.Verb, c.TaskID = "stop", pos[1]
		default:
			return Command{}, &UsageError{Msg: "usage: /tasks [stop <id>]"}
		}
	default:
		if len(pos) > 0 || c.Confirm || c.All {
			return Command{}, &UsageError{Msg: fmt.Sprintf("/%s takes no arguments", c.Name)}
		}
	}
	return c, nil
}

// Request converts a rewind/undo/redo command to a controller request.
func (c Command) Request() checkpoint.Request {
	switch c.Name {
	case "undo":
		return checkpoint.Request{Action: checkpoint.ActionUndo}
	case "redo":
		return checkpoint.Request{Action: checkpoint.ActionRedo}
	}
	return checkpoint.Request{Action: checkpoint.ActionRewind, Target: c.Target, Mode: c.Mode}
}

func names() string {
	var n []string
	for _, d := range Registry {
		n = append(n, "/"+d.Name)
	}
	return strings.Join(n, ", ")
}

// nearest returns the registered command closest to name (at most two
// edits away), or "".
func nearest(name string) string {
	best, bestD := "", 3
	for _, d := range Registry {
		if dist := editDistance(name, d.Name); dist < bestD {
			best, bestD = d.Name, dist
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
