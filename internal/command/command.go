// Package command is the one slash-command registry that every host
// (print, ACP, TUI) reads and dispatches through. A descriptor holds a
// command's name, help, the hosts that offer it, its argument parser and
// its handler, in one entry. Handlers act on a Target, a small interface
// that the session lifecycle layer implements, so this package never
// imports the layer it dispatches into. Hosts render results; they never
// re-implement what a command does.
package command

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/fault"
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

// Handler runs a parsed command against a session.
type Handler func(ctx context.Context, t Target, c Command) (Result, error)

// Descriptor describes one slash command and how it runs.
type Descriptor struct {
	Name        string // without the slash
	Hint        string // argument hint, e.g. "[checkpoint] [both|conversation|workspace]"
	Description string
	Example     string // one example line, shown by /help
	Hosts       Host
	// Args parses the positional arguments (flags such as --confirm and
	// --all are parsed before it). nil means the command takes none.
	Args func(c *Command, pos []string) error
	// Run executes the command. nil means the host handles it itself
	// (display-only commands such as /clear and /quit).
	Run Handler
}

// Registry lists every slash command, in the order help shows them. It is
// filled in init because /help's handler reads it.
var Registry []Descriptor

func init() {
	Registry = []Descriptor{
		{Name: "rewind", Hint: "[checkpoint] [both|conversation|workspace] [--confirm token]",
			Description: "List checkpoints, or preview and confirm restoring the conversation and/or files to before a turn",
			Example:     "/rewind cp2 both", Hosts: HostAll, Args: rewindArgs, Run: runRestore},
		{Name: "undo", Hint: "[--confirm token]",
			Description: "Preview and confirm undoing the most recent turn (conversation and files)",
			Example:     "/undo", Hosts: HostAll, Args: tokenOnlyArgs, Run: runRestore},
		{Name: "redo", Hint: "[--confirm token]",
			Description: "Preview and confirm restoring what the last rewind or undo abandoned",
			Example:     "/redo", Hosts: HostAll, Args: tokenOnlyArgs, Run: runRestore},
		{Name: "branches", Hint: "",
			Description: "List the conversation's branches: the active one and every one a rewind abandoned (b1, b2, …)",
			Example:     "/branches", Hosts: HostAll, Run: runBranches},
		{Name: "branch", Hint: "<branch> [both|conversation|workspace] [--confirm token]",
			Description: "Preview and confirm switching to another branch as it was left, conversation and files; /redo switches back",
			Example:     "/branch b2", Hosts: HostAll, Args: branchArgs, Run: runRestore},
		{Name: "compact", Hint: "",
			Description: "Summarize the conversation so far to free model context (the full log is kept)",
			Example:     "/compact", Hosts: HostAll, Run: runCompact},
		{Name: "tasks", Hint: "[stop <id>]",
			Description: "List running background shell tasks, or stop one",
			Example:     "/tasks stop t1", Hosts: HostAll, Args: tasksArgs, Run: runTasks},
		{Name: "context", Hint: "",
			Description: "Show what the model is given: project instructions (AGENTS.md) with their sizes, the context size and token usage",
			Example:     "/context", Hosts: HostAll, Run: runContext},
	}
	Registry = append(Registry, landDescriptors()...)
	Registry = append(Registry, []Descriptor{
		{Name: "help", Hint: "", Description: "Show the commands", Example: "/help", Hosts: HostPrint | HostTUI, Run: runHelp},
		{Name: "resume", Hint: "", Description: "Pick another session to continue: type to search, Enter opens it", Example: "/resume", Hosts: HostTUI},
		{Name: "clear", Hint: "", Description: "Clear the screen (display only; the conversation is unchanged)", Example: "/clear", Hosts: HostTUI},
		{Name: "quit", Hint: "", Description: "Leave yolop", Example: "/quit", Hosts: HostTUI},
	}...)
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
	Target  string          // rewind: checkpoint id ("cp3"); branch: branch id ("b2")
	Mode    checkpoint.Mode // rewind: "" = default
	Token   string          // --confirm
	All     bool            // rewind --all
	TaskID  string          // tasks stop <id>
	Verb    string          // tasks: "" or "stop"; apply: refuse, markers or undo
	Text    string          // commit: the message
	Raw     string
	Confirm bool
	// OnConflict is a restore in place's conflict choice:
	// checkpoint.OnConflictMarkers (--on-conflict markers) or
	// checkpoint.OnConflictOverwrite (--overwrite-mine); "" keeps the
	// user's file where changes overlap.
	OnConflict string
}

// UsageError is a malformed or unknown command, flag or argument (code
// usage, exit 2).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// FaultCode is usage.
func (e *UsageError) FaultCode() fault.Code { return fault.Usage }

func usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

var (
	tokenRE  = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	cpRE     = regexp.MustCompile(`^(cp)?[1-9][0-9]*$`)
	branchRE = regexp.MustCompile(`^b[1-9][0-9]*$`)
	nameRE   = regexp.MustCompile(`^/[a-z][a-z0-9-]*$`)
)

// IsCommand reports whether a prompt is a slash command: the first word of
// its first line matches ^/[a-z][a-z0-9-]*$. A leading space, a path such
// as /usr/bin/foo or /src/main.go:12, and //text are prompts.
func IsCommand(prompt string) bool {
	first, _, _ := strings.Cut(prompt, "\n")
	word, _, _ := strings.Cut(first, " ")
	word, _, _ = strings.Cut(word, "\t")
	return nameRE.MatchString(strings.TrimRight(word, "\r"))
}

// Prompt returns the text a prompt sends to the model: a prompt starting
// with "//" sends the rest from its second slash, so "//text" sends
// "/text" literally. Other prompts are sent as they are.
func Prompt(prompt string) string {
	if strings.HasPrefix(prompt, "//") {
		return prompt[1:]
	}
	return prompt
}

// Parse parses a slash command line.
func Parse(line string) (Command, error) {
	line = strings.TrimSpace(line)
	if first, _, _ := strings.Cut(line, "\n"); first != line {
		if strings.TrimSpace(line[len(first):]) != "" {
			return Command{}, usagef("a slash command is a single line; put the prompt in a separate message")
		}
		line = strings.TrimSpace(first)
	}
	if !strings.HasPrefix(line, "/") {
		return Command{}, usagef("%q is not a slash command", line)
	}
	fields := strings.Fields(line[1:])
	if len(fields) == 0 {
		return Command{}, usagef("empty command: try /help")
	}
	c := Command{Name: strings.ToLower(fields[0]), Raw: line}
	d, ok := Lookup(c.Name)
	if !ok {
		msg := fmt.Sprintf("unknown command /%s", fields[0])
		if near := nearest(c.Name); near != "" {
			msg += fmt.Sprintf(" (did you mean /%s?)", near)
		}
		return Command{}, usagef("%s: known commands are %s", msg, names())
	}
	var pos []string
	args := fields[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--confirm" || a == "-y":
			if i+1 >= len(args) {
				return Command{}, usagef("/%s: --confirm needs the token from the preview", c.Name)
			}
			i++
			c.Token, c.Confirm = args[i], true
		case strings.HasPrefix(a, "--confirm="):
			c.Token, c.Confirm = strings.TrimPrefix(a, "--confirm="), true
		case a == "--all":
			c.All = true
		case a == "--overwrite-mine":
			if c.OnConflict != "" && c.OnConflict != checkpoint.OnConflictOverwrite {
				return Command{}, usagef("/%s: --overwrite-mine and --on-conflict markers exclude each other", c.Name)
			}
			c.OnConflict = checkpoint.OnConflictOverwrite
		case a == "--on-conflict" || strings.HasPrefix(a, "--on-conflict="):
			v, ok := strings.CutPrefix(a, "--on-conflict=")
			if !ok {
				if i+1 >= len(args) {
					return Command{}, usagef("/%s: --on-conflict needs a choice: keep or markers", c.Name)
				}
				i++
				v = args[i]
			}
			switch v {
			case "keep":
			case "markers":
				if c.OnConflict == checkpoint.OnConflictOverwrite {
					return Command{}, usagef("/%s: --overwrite-mine and --on-conflict markers exclude each other", c.Name)
				}
				c.OnConflict = checkpoint.OnConflictMarkers
			default:
				return Command{}, usagef("/%s: --on-conflict takes keep or markers, not %q", c.Name, v)
			}
		case strings.HasPrefix(a, "-"):
			return Command{}, usagef("/%s: unknown flag %s", c.Name, a)
		default:
			pos = append(pos, a)
		}
	}
	if c.Confirm && !tokenRE.MatchString(c.Token) {
		return Command{}, usagef("/%s: %q is not a confirmation token (letters, digits, _ and - only)", c.Name, c.Token)
	}
	if c.OnConflict != "" && c.Name != "rewind" && c.Name != "undo" && c.Name != "redo" && c.Name != "branch" {
		return Command{}, usagef("/%s takes no --on-conflict or --overwrite-mine; they choose how a restore in place treats your edits", c.Name)
	}
	if d.Args == nil {
		if len(pos) > 0 || c.Confirm || c.All {
			return Command{}, usagef("/%s takes no arguments", c.Name)
		}
		return c, nil
	}
	if err := d.Args(&c, pos); err != nil {
		return Command{}, err
	}
	return c, nil
}

func rewindArgs(c *Command, pos []string) error {
	if c.All && (len(pos) > 0 || c.Confirm) {
		return usagef("/rewind --all lists every checkpoint; it takes no other arguments")
	}
	if len(pos) > 2 {
		return usagef("usage: /rewind [checkpoint] [both|conversation|workspace] [--confirm token]")
	}
	if len(pos) == 0 && c.Confirm {
		return usagef("/rewind --confirm needs the checkpoint and mode from the preview")
	}
	if len(pos) >= 1 {
		id := strings.ToLower(pos[0])
		if !cpRE.MatchString(id) {
			return usagef("/rewind: %q is not a checkpoint id (like cp3 or 3); run /rewind to list them", pos[0])
		}
		if !strings.HasPrefix(id, "cp") {
			id = "cp" + id
		}
		c.Target = id
	}
	return modeArg(c, pos, "/rewind")
}

// modeArg parses the optional mode after a restore's target.
func modeArg(c *Command, pos []string, name string) error {
	if len(pos) == 2 {
		m, err := checkpoint.ParseMode(pos[1])
		if err != nil {
			return usagef("%s: %v", name, err)
		}
		c.Mode = m
	}
	return nil
}

func branchArgs(c *Command, pos []string) error {
	if c.All {
		return usagef("/branch takes no --all; /branches lists every branch")
	}
	if len(pos) == 0 || len(pos) > 2 {
		return usagef("usage: /branch <branch> [both|conversation|workspace] [--confirm token]; /branches lists the branches")
	}
	id := strings.ToLower(pos[0])
	if !branchRE.MatchString(id) {
		hint := ""
		if cpRE.MatchString(id) {
			hint = "; to go back to a checkpoint of the active branch use /rewind " + id
		}
		return usagef("/branch: %q is not a branch id (like b2); /branches lists them%s", pos[0], hint)
	}
	c.Target = id
	return modeArg(c, pos, "/branch")
}

func tokenOnlyArgs(c *Command, pos []string) error {
	if len(pos) > 0 || c.All {
		return usagef("usage: /%s [--confirm token]", c.Name)
	}
	return nil
}

func tasksArgs(c *Command, pos []string) error {
	if c.Confirm || c.All {
		return usagef("usage: /tasks [stop <id>]")
	}
	switch {
	case len(pos) == 0:
	case len(pos) == 2 && pos[0] == "stop":
		c.Verb, c.TaskID = "stop", pos[1]
	default:
		return usagef("usage: /tasks [stop <id>]")
	}
	return nil
}

// Request converts a rewind/undo/redo command to a controller request.
func (c Command) Request() checkpoint.Request {
	switch c.Name {
	case "undo":
		return checkpoint.Request{Action: checkpoint.ActionUndo, OnConflict: c.OnConflict}
	case "redo":
		return checkpoint.Request{Action: checkpoint.ActionRedo, OnConflict: c.OnConflict}
	case "branch":
		return checkpoint.Request{Action: checkpoint.ActionBranch, Target: c.Target, Mode: c.Mode, OnConflict: c.OnConflict}
	}
	return checkpoint.Request{Action: checkpoint.ActionRewind, Target: c.Target, Mode: c.Mode, OnConflict: c.OnConflict}
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
