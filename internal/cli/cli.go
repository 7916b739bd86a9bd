// Package cli is yolop's command line: flags, subcommands and exit codes.
// Exit statuses and JSON codes are reported here, at one edge, from the
// codes the errors carry (internal/fault).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/buildinfo"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/fault"
	printhost "github.com/yolop-dev/yolop/internal/host/print"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/spawn"
)

// shown is a failure already reported (its JSON object or its text is
// out): only its exit status, its code's, remains.
type shown struct{ code fault.Code }

func (e *shown) Error() string { return fmt.Sprintf("%s (exit %d)", e.code, e.code.Exit()) }

// told is a command's own failure, reported as it is: not read as an
// interruption when the context was cancelled, and given no usage hint.
type told struct{ err error }

func (e *told) Error() string { return e.err.Error() }
func (e *told) Unwrap() error { return e.err }

// IO are the streams a command writes to; nothing writes to os.Stdout
// directly, so ACP mode can keep stdout for protocol messages.
type IO struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// rootOptions are the global flags.
type rootOptions struct {
	io           IO
	print        string
	printSet     bool
	outputFormat string
	sessionID    string
	cont         bool
	resume       bool
	dir          string
	// dataDirTold: the resolution of a relative data directory was said.
	dataDirTold bool
	provider    string
	model       string
	baseURL     string
	acp         bool
	worktree    string
	worktreeSet bool // --worktree was given
	workspace   string
	inPlace     bool
	dataDir     string
	sandbox     string
}

// Main runs yolop and returns the process exit code.
func Main() int {
	// The environment yolop was started with (its keys) stays in its
	// memory: no command running as the same user may read it.
	if err := spawn.Seal(); err != nil {
		fmt.Fprintf(os.Stderr, "yolop: warning: %v; commands running as you can read yolop's environment and memory\n", err)
	}
	// A reader that goes away (yolop -p … | head -1, a closed terminal)
	// must not kill a turn halfway: with SIGPIPE handled, a write to a
	// closed stdout or stderr fails with EPIPE instead, and the turn runs
	// to its end and is recorded. (A handled signal, unlike an ignored
	// one, is reset for the commands the tools run.)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	return Run(os.Args[1:], IO{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
}

// Run runs yolop with args and streams; it returns the exit code.
//
// Errors are reported here, at one edge, whatever command returned them:
// in JSON mode as the one object of the invocation on stdout (flag errors
// too, when the arguments ask for JSON), else as one line on stderr; the
// code and the exit status come from the error (fault.Of and its table).
func Run(args []string, streams IO) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, o := newRootOptions(streams)
	root.SetArgs(args)
	c, err := root.ExecuteContextC(ctx)
	if err == nil {
		return fault.ExitOK
	}
	path := "yolop"
	if c != nil {
		path = c.CommandPath()
	}
	return edge{io: streams, args: args, json: o.outputFormat == "json", interrupted: ctx.Err() != nil, path: path}.fail(err)
}

// edge is what reporting a failed invocation needs to know of it.
type edge struct {
	io   IO
	args []string // the arguments, read for JSON mode when flags did not parse
	json bool     // --output-format json
	// interrupted: the user stopped yolop (SIGINT, SIGTERM).
	interrupted bool
	path        string // the command, for the usage hint
}

// fail reports err and returns the exit status: its code's in fault's
// table.
func (e edge) fail(err error) int {
	if errors.Is(err, syscall.EPIPE) {
		// The reader went away (yolop sessions | head): stop quietly, with
		// the status a process killed by SIGPIPE has.
		return fault.ExitBrokenPipe
	}
	var sh *shown
	if errors.As(err, &sh) {
		return sh.code.Exit()
	}
	var t *told
	final := errors.As(err, &t)
	if final {
		err = t.err
	}
	code := fault.Of(err)
	if !final && code != fault.Usage && e.interrupted {
		code = fault.Interrupted
	}
	// Flag errors happen before any flag value is known, so JSON mode is
	// then read from the arguments: a script asking for JSON gets an error
	// object, never text on stdout.
	if e.json || code == fault.Usage && wantsJSON(e.args) {
		writeError(e.io.Out, err, code)
		return code.Exit()
	}
	fmt.Fprintln(e.io.ErrOut, "yolop:", command.ErrorText(err))
	if code == fault.Usage && !final {
		fmt.Fprintf(e.io.ErrOut, "Run '%s --help' for usage.\n", e.path)
	}
	return code.Exit()
}

// flagError makes cobra's flag parsing errors usage errors.
func flagError(_ *cobra.Command, err error) error {
	return &command.UsageError{Msg: err.Error()}
}

// noArgs rejects arguments: a command with subcommands names the one it
// does not know.
func noArgs(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if c.HasSubCommands() {
		if s := suggest(c, args[0]); len(s) > 0 {
			return usagef("unknown command %q for %q: did you mean %s? The commands are %s", args[0], c.CommandPath(), s[0], subcommandNames(c))
		}
		return usagef("unknown command %q for %q: the commands are %s", args[0], c.CommandPath(), subcommandNames(c))
	}
	return usagef("%s takes no arguments, got %q", c.CommandPath(), args[0])
}

// sessionArg requires exactly one session id.
func sessionArg(c *cobra.Command, args []string) error {
	switch {
	case len(args) == 0:
		return usagef("%s needs a session id; `yolop sessions` lists them", c.CommandPath())
	case len(args) > 1:
		return usagef("%s takes one session id, got %d arguments", c.CommandPath(), len(args))
	case args[0] == "":
		return usagef("%s: the session id is empty; `yolop sessions` lists them", c.CommandPath())
	}
	return nil
}

// suggest names the subcommands of c that name is a typo of (at most two
// edits away, or a prefix).
func suggest(c *cobra.Command, name string) []string {
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2
	}
	return c.SuggestionsFor(name)
}

func subcommandNames(c *cobra.Command) string {
	var names []string
	for _, sc := range c.Commands() {
		if sc.IsAvailableCommand() {
			names = append(names, sc.Name())
		}
	}
	return strings.Join(names, ", ")
}

// wantsJSON reports whether args ask for --output-format json.
func wantsJSON(args []string) bool {
	for i, a := range args {
		if a == "--" {
			return false
		}
		if a == "--output-format=json" || a == "--output-format" && i+1 < len(args) && args[i+1] == "json" {
			return true
		}
	}
	return false
}

// writeError prints the one JSON object of a failed invocation.
func writeError(w io.Writer, err error, code fault.Code) {
	b, jerr := printhost.JSONLine(map[string]string{"error": command.ErrorText(err), "code": string(code)})
	if jerr != nil {
		fmt.Fprintf(w, `{"error":"encoding the error failed","code":%q}`+"\n", fault.Internal)
		return
	}
	fmt.Fprint(w, string(b))
}

// rootArgs rejects positional arguments with a hint: after -p they are
// almost always an unquoted prompt.
func rootArgs(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if c.Flags().Changed("print") {
		return usagef("unexpected argument %q after the prompt: quote a prompt that has spaces, e.g. yolop -p 'fix the failing test'", args[0])
	}
	if s := suggest(c, args[0]); len(s) > 0 {
		return usagef("unknown command %q: did you mean %s? (see the commands in yolop --help)", args[0], s[0])
	}
	if strings.ContainsAny(args[0], " \t\n") {
		// Almost always a prompt given without -p.
		return usagef("unknown command %q: to send it as a prompt, use yolop -p %s (or start yolop and type it)", args[0], shellQuote(args[0]))
	}
	return usagef("unknown command %q: see the commands in yolop --help", args[0])
}

func usagef(format string, args ...any) error {
	return &command.UsageError{Msg: fmt.Sprintf(format, args...)}
}

func newRoot(streams IO) *cobra.Command {
	c, _ := newRootOptions(streams)
	return c
}

// newRootOptions makes the command tree and the options its flags fill.
func newRootOptions(streams IO) (*cobra.Command, *rootOptions) {
	o := &rootOptions{io: streams}
	cmd := &cobra.Command{
		Use:   "yolop [flags]",
		Short: "A terminal coding agent with checkpoints you can rewind",
		Long: `yolop is a terminal coding agent. Before every turn it records a checkpoint of
the conversation and of the session's own git worktree, so any turn can be
undone exactly (files changed by shell commands included) and redone.

Run without flags for the interactive terminal UI, with -p for one turn, or
with --acp to serve an editor over the Agent Client Protocol.

A prompt whose first word matches ^/[a-z][a-z0-9-]*$ is a slash command
(/rewind, /undo, /redo, ...); /usr/bin/foo or /src/main.go:12 start an
ordinary prompt, and //text sends /text literally.`,
		Example: `  yolop demo                                   # a 10-second offline tour
  yolop -p '$ echo hello > hello.txt'          # one turn (the offline sim provider runs the shell line)
  yolop -c -p /rewind                          # list checkpoints of the latest session
  yolop --session s_… -p '/rewind cp2 both'    # preview a rewind (prints the confirm command)`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		Args:              rootArgs,
		PersistentPreRunE: o.check,
		RunE: func(c *cobra.Command, _ []string) error {
			o.printSet = c.Flags().Changed("print")
			if c.Flags().Changed("session") {
				if err := session.CheckID(o.sessionID); err != nil {
					return o.report(usagef("--session: %v; `yolop sessions` lists the ids", err))
				}
			}
			return runRoot(c.Context(), o)
		},
	}
	// --version, as most command-line tools have it; `yolop version`
	// says more.
	cmd.Version = buildinfo.Version()
	cmd.SetVersionTemplate("yolop {{.Version}}\n")
	cmd.SetFlagErrorFunc(flagError)
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	f := cmd.PersistentFlags()
	cmd.Flags().StringVarP(&o.print, "print", "p", "", "run one prompt or slash command and print the result (- reads it from stdin)")
	f.StringVar(&o.outputFormat, "output-format", "text", "output: text, or json (one object per invocation, errors included)")
	cmd.Flags().StringVar(&o.sessionID, "session", "", "resume the session with this id")
	cmd.Flags().BoolVarP(&o.cont, "continue", "c", false, "continue the session of this repository used last (a turn ran or a restore was confirmed)")
	cmd.Flags().BoolVarP(&o.resume, "resume", "r", false, "pick a session to continue: type to search, Enter opens it in the TUI, Esc quits")
	f.StringVarP(&o.dir, "cd", "C", "", "run as if started in this directory")
	cmd.Flags().StringVar(&o.provider, "provider", "", "model provider: sim, openai or anthropic (default: sim unless an API key is configured)")
	cmd.Flags().StringVar(&o.model, "model", "", "model id")
	cmd.Flags().StringVar(&o.baseURL, "base-url", "", "OpenAI-compatible API base URL (OpenRouter, Ollama, vLLM, llama.cpp)")
	cmd.Flags().BoolVar(&o.acp, "acp", false, "serve the Agent Client Protocol on stdin/stdout")
	cmd.Flags().StringVar(&o.worktree, "worktree", app.WorktreeAlways, "session worktree: always (inside a git repository) or off (= --workspace in-place)")
	cmd.Flags().StringVar(&o.workspace, "workspace", "", "where a new session works: worktree (its own git worktree, the default), in-place (your checkout; restores undo the agent's changes, never yours) or none (conversation-only checkpoints)")
	cmd.Flags().BoolVar(&o.inPlace, "in-place", false, "short for --workspace in-place")
	f.StringVar(&o.dataDir, "data-dir", "", "data directory (default $YOLOP_DATA_DIR or $XDG_DATA_HOME/yolop)")
	f.StringVar(&o.sandbox, "sandbox", "", "confine the tools' commands: off, write (default; writes only where a rewind can undo them, plus declared caches) or strict (also outbound TCP only to listed ports)")
	// Completion functions cannot fail a command: a failure means no
	// suggestions.
	_ = cmd.RegisterFlagCompletionFunc("session", completeSessionIDs(o))
	_ = cmd.RegisterFlagCompletionFunc("print", completePrompt(o))
	cmd.InitDefaultCompletionCmd()
	if cc, _, err := cmd.Find([]string{"completion"}); err == nil && cc != cmd {
		cc.Example = "  yolop completion bash > ~/.local/share/bash-completion/completions/yolop\n  yolop completion zsh > \"${fpath[1]}/_yolop\"\n  yolop completion fish > ~/.config/fish/completions/yolop.fish"
	}
	cmd.AddCommand(newVersionCmd(o), newSessionsCmd(o), newCheckpointsCmd(o), newWorktreeCmd(o), newDemoCmd(o), newDiffCmd(o), newApplyCmd(o), newCommitCmd(o))
	return cmd, o
}

// check validates the flags every command shares, before any command
// runs, so a typo leaves nothing behind.
func (o *rootOptions) check(c *cobra.Command, _ []string) error {
	if f := c.Flags().Lookup("worktree"); f != nil {
		o.worktreeSet = f.Changed
	}
	if o.outputFormat != "text" && o.outputFormat != "json" {
		f := o.outputFormat
		o.outputFormat = "text"
		return usagef("--output-format must be text or json, not %q", f)
	}
	if o.outputFormat == "json" && !hasJSON(c) {
		return usagef("%s has no JSON output; run it without --output-format json", c.CommandPath())
	}
	if o.dir != "" {
		if st, err := os.Stat(o.dir); err != nil || !st.IsDir() {
			return usagef("-C %s: no such directory", o.dir)
		}
	}
	return nil
}

// hasJSON reports whether c can print its result as JSON: all commands
// but the tour, help and the shell completion scripts.
func hasJSON(c *cobra.Command) bool {
	for p := c; p.HasParent(); p = p.Parent() {
		if !p.Parent().HasParent() && (p.Name() == "demo" || p.Name() == "completion" || p.Name() == "help") {
			return false
		}
	}
	return true
}

func (o *rootOptions) resolveDataDir() (string, error) {
	dir, note, err := config.ResolveDataDir(o.dataDir)
	if err == nil && note != "" && !o.dataDirTold {
		// A relative path names another directory from elsewhere: say
		// which one this is.
		o.dataDirTold = true
		fmt.Fprintln(o.io.ErrOut, "yolop:", note)
	}
	return dir, err
}

func (o *rootOptions) providerConfig() (provider.Config, error) {
	return config.ResolveProvider(o.provider, o.model, o.baseURL)
}

// workspaceMode resolves where a new session works: --workspace or
// --in-place (explicit), else --worktree when given (off is in place),
// else the settings' [workspace] mode, else a worktree.
func (o *rootOptions) workspaceMode() (string, bool, error) {
	if err := config.CheckWorkspaceMode(o.workspace); err != nil {
		return "", false, usagef("%v", err)
	}
	switch {
	case o.inPlace && o.workspace != "" && o.workspace != config.WorkspaceInPlace:
		return "", false, usagef("--in-place and --workspace %s say different things; use one", o.workspace)
	case o.inPlace:
		return config.WorkspaceInPlace, true, nil
	case o.workspace != "":
		if o.worktreeSet && (o.workspace == config.WorkspaceWorktree) != (o.worktree == app.WorktreeAlways) {
			return "", false, usagef("--worktree %s and --workspace %s say different things; use --workspace", o.worktree, o.workspace)
		}
		return o.workspace, true, nil
	case o.worktreeSet:
		if o.worktree == app.WorktreeOff {
			return config.WorkspaceInPlace, false, nil
		}
		return config.WorkspaceWorktree, false, nil
	}
	m, err := config.WorkspaceMode()
	if err != nil {
		return "", false, usagef("%v", err)
	}
	return m, false, nil
}

func runRoot(ctx context.Context, o *rootOptions) error {
	if o.worktree != app.WorktreeAlways && o.worktree != app.WorktreeOff {
		return usagef("--worktree must be always or off, not %q", o.worktree)
	}
	if o.sessionID != "" && o.cont {
		return usagef("use either --session or --continue, not both")
	}
	mode, explicit, err := o.workspaceMode()
	if err != nil {
		return o.reportUsage(err)
	}
	if o.sandbox != "" {
		if err := config.CheckSandboxLevel(o.sandbox); err != nil {
			return usagef("--sandbox must be off, write or strict, not %q", o.sandbox)
		}
	}
	if o.resume && (o.sessionID != "" || o.cont || o.printSet || o.acp) {
		return usagef("--resume opens a session picker in the terminal UI; it cannot be combined with --session, --continue, -p or --acp")
	}
	if o.acp && (o.printSet || o.sessionID != "" || o.cont) {
		return usagef("--acp serves an editor; it cannot be combined with -p, --session or --continue")
	}
	if !o.acp && !o.printSet {
		// Checked before a session exists: without a terminal the UI
		// cannot read keys or draw, and `echo prompt | yolop` is almost
		// always meant as `yolop -p -`.
		if err := needTerminal(o.io, o.resume); err != nil {
			return o.reportUsage(err)
		}
	}
	dataDir, err := o.resolveDataDir()
	if err != nil {
		return err
	}
	pcfg, err := o.providerConfig()
	if err != nil {
		if errors.Is(err, provider.ErrUnknown) && o.provider != "" {
			return o.report(usagef("--provider: %v", err))
		}
		// A missing key or a bad setting is a configuration error: no
		// turn ran (exit 2, like a bad flag).
		return o.report(usagef("%v", err))
	}
	servers, err := config.MCPServers()
	if err != nil {
		return o.report(usagef("%v", err))
	}
	opts := app.Options{DataDir: dataDir, Dir: o.dir, SessionID: o.sessionID, Continue: o.cont, Worktree: o.worktree, Workspace: mode, WorkspaceExplicit: explicit, Provider: pcfg, MCP: servers, Sandbox: o.sandbox, OneShot: o.printSet}
	// A file watcher spares a capture the walk of the whole tree: the
	// TUI and ACP arm it in the background, print mode with the first
	// capture's walk (app.Options.Watch).
	opts.Watch = true
	if opts, err = withSpares(opts); err != nil {
		return o.report(err)
	}
	if o.acp {
		return runACP(ctx, o, opts)
	}
	if !o.printSet {
		return runTUI(ctx, o, opts)
	}
	prompt := o.print
	if prompt == "-" {
		b, err := io.ReadAll(o.io.In)
		if err != nil {
			return err
		}
		prompt = string(b)
	}
	if strings.TrimSpace(prompt) == "" {
		return o.report(usagef("-p needs a prompt (or - to read it from stdin)"))
	}
	s, err := app.Open(ctx, opts)
	if err != nil {
		return o.report(err)
	}
	defer func() {
		// The result is out (in JSON mode, its one object): a failure to
		// close cleanly is told on stderr.
		if err := s.Close(); err != nil {
			fmt.Fprintln(o.io.ErrOut, "yolop: warning: closing the session:", err)
		}
	}()
	popts := printhost.Options{Prompt: prompt, JSON: o.outputFormat == "json", Stdout: o.io.Out, Stderr: o.io.ErrOut, ConfirmPrefix: o.sessionCommand(s.ID())}
	if !s.Exists() && !command.IsCommand(prompt) && app.ChecksOutWorktree(ctx, opts) {
		// Checking out a large repository into the new session's worktree
		// takes seconds; say what the wait is for.
		popts.Starting = "new session: preparing its own git worktree…"
	}
	return shownAs(printhost.Run(ctx, s, popts))
}

// shownAs is the result of a run that reported its own failure (code ""
// when there was none).
func shownAs(code fault.Code) error {
	if code == "" {
		return nil
	}
	return &shown{code: code}
}

// report returns err as the command's own failure; Run prints it in the
// selected format, with its code and exit status.
func (o *rootOptions) report(err error) error { return &told{err: err} }

// reportUsage is report for a failure that is the caller's to fix like a
// bad flag (exit 2, code usage) though it is not a flag error.
func (o *rootOptions) reportUsage(err error) error {
	return o.report(fault.With(fault.Usage, err))
}

// sessionCommand is the command line that reaches session id again.
func (o *rootOptions) sessionCommand(id string) string {
	prefix := "yolop"
	if d := o.dataDir; d != "" {
		// Absolute: the command must work from any directory.
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		prefix += " --data-dir " + shellQuote(d)
	}
	return prefix + " --session " + id
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func newVersionCmd(o *rootOptions) *cobra.Command {
	var verbose bool
	cmd := &cobra.Command{
		Use:     "version",
		Example: "  yolop version\n  yolop version --verbose --sandbox strict",
		Short:   "Print yolop's version (--verbose: and the sandbox level in force, and why, and where commands get their environment)",
		Args:    noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if !verbose {
				if o.outputFormat == "json" {
					return writeJSON(o, versionJSON{Version: buildinfo.Version()})
				}
				_, err := fmt.Fprintln(o.io.Out, "yolop", buildinfo.Version())
				return err
			}
			if err := config.CheckSandboxLevel(o.sandbox); err != nil {
				return usagef("--sandbox must be off, write or strict, not %q", o.sandbox)
			}
			st, err := config.SandboxStatus(o.sandbox)
			if err != nil {
				return err
			}
			env, err := config.ToolsEnv()
			if err != nil {
				return err
			}
			if o.outputFormat == "json" {
				return writeJSON(o, versionJSON{Version: buildinfo.Version(), Sandbox: &sandboxJSON{
					Requested: string(st.Requested), InForce: string(st.InForce), LandlockABI: st.ABI, Why: st.Why,
					Refused: st.Refused, Caches: nonNil(st.Caches), Ports: nonNil(st.Ports), Warning: st.Warning(),
				}, ToolsEnv: &toolsEnvJSON{Source: env.Source, Fallback: env.Fallback, Bash: env.Bash}})
			}
			fmt.Fprintln(o.io.Out, "yolop", buildinfo.Version())
			fmt.Fprintln(o.io.Out, st.Describe())
			fmt.Fprintln(o.io.Out, "Commands run in "+env.Describe()+".")
			if w := st.Warning(); w != "" {
				fmt.Fprintln(o.io.Out, "warning:", w)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&verbose, "verbose", false, "also report the sandbox level in force and why, and where the tools' commands get their environment")
	return cmd
}

// versionJSON is `yolop version --output-format json`; sandbox only with
// --verbose.
type versionJSON struct {
	Version  string        `json:"version"`
	Sandbox  *sandboxJSON  `json:"sandbox,omitempty"`
	ToolsEnv *toolsEnvJSON `json:"tools_env,omitempty"`
}

// toolsEnvJSON is where the tools' commands get their environment.
type toolsEnvJSON struct {
	Source   string `json:"source"`             // inherit or login
	Fallback string `json:"fallback,omitempty"` // why login although inherit was asked for
	Bash     string `json:"bash"`
}

type sandboxJSON struct {
	Requested   string   `json:"requested"`
	InForce     string   `json:"in_force"`
	LandlockABI int      `json:"landlock_abi"`
	Why         string   `json:"why,omitempty"`
	Refused     string   `json:"refused,omitempty"`
	Caches      []string `json:"caches"`
	Ports       []int    `json:"ports"`
	Warning     string   `json:"warning,omitempty"`
}

// nonNil makes an empty list print as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
