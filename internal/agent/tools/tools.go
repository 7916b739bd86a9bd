package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/yolop-dev/yolop/internal/failpoint"
	"github.com/yolop-dev/yolop/internal/fsutil"
	"github.com/yolop-dev/yolop/internal/secret"
)

// Spec describes a tool to the model: its name, what it does, and a JSON
// schema of its arguments. It mirrors provider.ToolSpec field for field.
type Spec struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// Display kinds, for hosts that render tool calls (ACP tool_call kinds).
const (
	KindRead    = "read"
	KindEdit    = "edit"
	KindDelete  = "delete"
	KindSearch  = "search"
	KindExecute = "execute"
	KindThink   = "think"
	KindOther   = "other"
)

// Display tells a host how to render a tool call; the model never sees it.
type Display struct {
	Kind  string
	Path  string // root-relative, slash-separated; "" when not about one file
	Title string
	// OldText and NewText are the whole file before and after an edit; nil
	// when the file did not exist (OldText) or was deleted (NewText), or
	// when it is binary.
	OldText, NewText *string
}

// Result is what a tool call produced.
type Result struct {
	// Content is what the model reads.
	Content string
	// IsError marks a problem the model can fix (bad path, missing text,
	// malformed arguments). Infrastructure failures are Go errors instead.
	IsError bool
	// Display is optional rendering help for hosts.
	Display *Display
	// External marks a tool that acts outside the workspace (an MCP
	// server's): a rewind cannot undo what it did.
	External bool
	// Refused is set when the sandbox refused what the call tried (a
	// write outside the workspace, a connection to a closed port, a
	// level that cannot be applied): one line for the user, e.g. "the
	// sandbox (level write) refused writing /etc/x". Content holds the
	// full explanation for the model.
	Refused string
}

// Tool is one model-facing tool.
type Tool interface {
	Spec() Spec
	// Kind is one of the Kind constants.
	Kind() string
	// Run executes the call. args is the raw JSON object from the model.
	Run(ctx context.Context, args json.RawMessage) (Result, error)
}

// CheckpointRequest is a rewind, undo, redo or branch switch the model asks
// to preview.
type CheckpointRequest struct {
	Action string // "rewind", "undo", "redo" or "branch"
	Target string // checkpoint id for rewind ("cp3" or "3"), branch id for branch ("b2"); empty otherwise
	Mode   string // "both", "conversation", "workspace", or "" for the default
}

// Checkpoints is what the checkpoint tool needs from the checkpoint
// controller. The tool can list and queue a preview; it can never confirm.
type Checkpoints interface {
	ListForModel(ctx context.Context) (string, error)
	// BranchesForModel lists the session's branches.
	BranchesForModel(ctx context.Context) (string, error)
	QueuePreview(ctx context.Context, req CheckpointRequest) (string, error)
}

// Defaults for Env fields left zero.
const (
	DefaultBashTimeout = 2 * time.Minute
	DefaultOutputCap   = 32 << 10
	// MaxBashTimeout bounds timeout_ms so a typo cannot park a turn for days;
	// longer jobs belong in background tasks.
	MaxBashTimeout = 30 * time.Minute
)

// Env configures a Set.
type Env struct {
	// Root is the active root; every path is confined to it.
	Root string
	// SpillDir receives command output beyond OutputCap and background task
	// logs. It must lie outside Root, or the spill files would end up in
	// the workspace snapshots.
	SpillDir string
	// Tasks tracks running commands; nil makes a new one on SpillDir.
	Tasks *Tasks
	// Checkpoints serves the checkpoint tool; nil makes the tool answer that
	// checkpoints are unavailable.
	Checkpoints Checkpoints
	// BashTimeout is the default wall-clock limit of a foreground command.
	BashTimeout time.Duration
	// OutputCap is how many bytes of each output stream (and of grep
	// output) the model sees.
	OutputCap int
	// External are more tools (an MCP server's), offered after the
	// built-in ones; a name a built-in tool has is refused.
	External []Tool
}

// Set is the tools of one session, bound to its root.
type Set struct {
	root        string // absolute, symlinks resolved
	rootAsGiven string // absolute, as configured
	env         Env
	tasks       *Tasks
	tools       map[string]Tool
	order       []string
	// afterResolve runs between a file tool's path resolution and its use
	// of the path: the window a concurrent swap would need. It is the
	// pause point tools.after_resolve, which tests replace or arm.
	afterResolve func(tool, rel string)
	// dirs opens directories beneath root (beneath.go).
	dirs *beneath
}

// New builds the tool set for env. Root must be an existing directory;
// SpillDir must be set and lie outside it.
func New(env Env) (*Set, error) {
	if env.Root == "" {
		return nil, errors.New("tools: root is empty")
	}
	given, err := filepath.Abs(env.Root)
	if err != nil {
		return nil, fmt.Errorf("tools: root %s: %w", env.Root, err)
	}
	root, err := filepath.EvalSymlinks(given)
	if err != nil {
		return nil, fmt.Errorf("tools: resolve root %s: %w", env.Root, err)
	}
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("tools: root %s: %w", env.Root, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("tools: root %s is not a directory", env.Root)
	}
	if env.SpillDir == "" {
		return nil, errors.New("tools: spill directory is empty; set Env.SpillDir to a directory outside the root")
	}
	spill, err := filepath.Abs(env.SpillDir)
	if err != nil {
		return nil, fmt.Errorf("tools: spill directory %s: %w", env.SpillDir, err)
	}
	s := &Set{root: root, rootAsGiven: given, env: env, afterResolve: pauseAfterResolve, dirs: newBeneath(root)}
	if within(root, fsutil.ResolveExisting(spill)) || within(given, spill) {
		return nil, fmt.Errorf("tools: spill directory %s is inside the root %s; choose one outside it so spilled output is not captured in checkpoints", env.SpillDir, env.Root)
	}
	s.env.SpillDir = spill
	if s.env.BashTimeout <= 0 {
		s.env.BashTimeout = DefaultBashTimeout
	}
	if s.env.OutputCap <= 0 {
		s.env.OutputCap = DefaultOutputCap
	}
	s.tasks = env.Tasks
	if s.tasks == nil {
		s.tasks = NewTasks(spill)
	}
	s.env.Tasks = s.tasks
	s.tools = map[string]Tool{}
	for _, t := range []Tool{
		&readFile{s}, &writeFile{s}, &editFile{s}, &listDirectory{s}, &grepTool{s},
		&deleteFile{s}, &bashTool{s}, &tasksTool{s}, &checkpointTool{s},
	} {
		name := t.Spec().Name
		s.tools[name] = t
		s.order = append(s.order, name)
	}
	for _, t := range env.External {
		name := t.Spec().Name
		if _, dup := s.tools[name]; dup {
			return nil, fmt.Errorf("tools: %q is already a tool's name", name)
		}
		s.tools[name] = t
		s.order = append(s.order, name)
	}
	return s, nil
}

func pauseAfterResolve(tool, rel string) { failpoint.Pause("tools.after_resolve", tool+" "+rel) }

// Root returns the resolved active root.
func (s *Set) Root() string { return s.root }

// Tasks returns the task registry the bash and tasks tools use.
func (s *Set) Tasks() *Tasks { return s.tasks }

// Specs lists every tool, in a fixed order.
func (s *Set) Specs() []Spec {
	out := make([]Spec, 0, len(s.order))
	for _, name := range s.order {
		out = append(out, s.tools[name].Spec())
	}
	return out
}

// Lookup finds a tool by name.
func (s *Set) Lookup(name string) (Tool, bool) {
	t, ok := s.tools[name]
	return t, ok
}

// Run calls tool name with the raw JSON arguments from the model. An unknown
// tool or arguments that are not a JSON object give an error result naming
// the problem, so the model can correct itself.
func (s *Set) Run(ctx context.Context, name string, args string) (Result, error) {
	t, ok := s.tools[name]
	if !ok {
		names := append([]string(nil), s.order...)
		sort.Strings(names)
		return errResult("unknown tool %q; the available tools are %s", name, strings.Join(names, ", ")), nil
	}
	raw := bytes.TrimSpace([]byte(args))
	if len(raw) == 0 {
		// Some providers send an empty string for a call without arguments.
		raw = []byte("{}")
	}
	if !json.Valid(raw) {
		return errResult("arguments for %s are not valid JSON: %.200q; send a JSON object matching the tool's schema", name, args), nil
	}
	if raw[0] != '{' {
		return errResult("arguments for %s must be a JSON object, got %.200s", name, raw), nil
	}
	r, err := t.Run(ctx, raw)
	return redact(r), err
}

// redact removes every known secret value (yolop's provider keys, the
// values of secret-looking environment variables) from a result before it
// is recorded or sent to the model: a command can print them, a file can
// hold them (`cat` of the settings file).
func redact(r Result) Result {
	r.Content = secret.Redact(r.Content)
	if d := r.Display; d != nil {
		c := *d
		c.Title = secret.Redact(c.Title)
		for _, p := range []**string{&c.OldText, &c.NewText} {
			if *p != nil {
				v := secret.Redact(**p)
				*p = &v
			}
		}
		r.Display = &c
	}
	return r
}

// decodeArgs decodes a JSON object strictly: an unknown field is reported,
// because it usually means the model misspelled an argument it relies on.
func decodeArgs(tool string, raw json.RawMessage, v any) *Result {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		r := errResult("invalid arguments for %s: %v; see the tool's schema", tool, strings.TrimPrefix(err.Error(), "json: "))
		return &r
	}
	return nil
}

func errResult(format string, args ...any) Result {
	return Result{Content: fmt.Sprintf(format, args...), IsError: true}
}

// pathResult converts a path problem into an error result; other errors stay
// Go errors.
func pathResult(err error) (Result, error) {
	var pe *pathError
	if errors.As(err, &pe) {
		return Result{Content: pe.msg, IsError: true}, nil
	}
	return Result{}, err
}

// within reports whether p is dir or inside it (both absolute and clean).
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)))
}

func mustSchema(s string) json.RawMessage {
	if !json.Valid([]byte(s)) {
		panic("tools: invalid schema: " + s)
	}
	return json.RawMessage(s)
}

func strPtr(s string) *string { return &s }
