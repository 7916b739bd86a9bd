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
	"github.com/yolop-dev/yolop/internal/cli/checkpoints"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/cli/demo"
	"github.com/yolop-dev/yolop/internal/cli/land"
	"github.com/yolop-dev/yolop/internal/cli/sessions"
	"github.com/yolop-dev/yolop/internal/cli/version"
	"github.com/yolop-dev/yolop/internal/cli/worktree"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/fault"
	printhost "github.com/yolop-dev/yolop/internal/host/print"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/spawn"
)

// rootOptions are the root command's flags.
type rootOptions struct {
	f           *cmdutil.Factory
	print       string
	printSet    bool
	sessionID   string
	cont        bool
	resume      bool
	acp         bool
	worktree    string
	worktreeSet bool // --worktree was given
	workspace   string
	inPlace     bool
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
	return Run(os.Args[1:], cmdutil.System())
}

// Run runs yolop with args and streams; it returns the exit code.
//
// Errors are reported here, at one edge, whatever command returned them:
// in JSON mode as the one object of the invocation on stdout (flag errors
// too, when the arguments ask for JSON), else as one line on stderr; the
// code and the exit status come from the error (fault.Of and its table).
func Run(args []string, streams *cmdutil.IOStreams) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f := cmdutil.New(streams)
	root := newRoot(f)
	root.SetArgs(args)
	c, err := root.ExecuteContextC(ctx)
	if err == nil {
		return fault.ExitOK
	}
	path := "yolop"
	if c != nil {
		path = c.CommandPath()
	}
	return edge{io: streams, args: args, json: f.Flags.JSON(), interrupted: ctx.Err() != nil, path: path}.fail(err)
}

// edge is what reporting a failed invocation needs to know of it.
type edge struct {
	io   *cmdutil.IOStreams
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
	var sh *cmdutil.ShownError
	if errors.As(err, &sh) {
		return sh.Code.Exit()
	}
	var t *cmdutil.ToldError
	final := errors.As(err, &t)
	if final {
		err = t.Err
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
	b, jerr := printhost.JSONLine(cmdutil.ErrorOf(err, code))
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
		return cmdutil.Usagef("unexpected argument %q after the prompt: quote a prompt that has spaces, e.g. yolop -p 'fix the failing test'", args[0])
	}
	if s := cmdutil.Suggest(c, args[0]); len(s) > 0 {
		return cmdutil.Usagef("unknown command %q: did you mean %s? (see the commands in yolop --help)", args[0], s[0])
	}
	if strings.ContainsAny(args[0], " \t\n") {
		// Almost always a prompt given without -p.
		return cmdutil.Usagef("unknown command %q: to send it as a prompt, use yolop -p %s (or start yolop and type it)", args[0], cmdutil.ShellQuote(args[0]))
	}
	return cmdutil.Usagef("unknown command %q: see the commands in yolop --help", args[0])
}

// newRoot makes the command tree.
func newRoot(fac *cmdutil.Factory) *cobra.Command {
	o := &rootOptions{f: fac}
	streams := fac.IO
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
					return o.report(cmdutil.Usagef("--session: %v; `yolop sessions` lists the ids", err))
				}
			}
			return runRoot(c.Context(), o)
		},
	}
	// --version, as most command-line tools have it; `yolop version`
	// says more.
	cmd.Version = buildinfo.Version()
	cmd.SetVersionTemplate("yolop {{.Version}}\n")
	cmd.SetFlagErrorFunc(cmdutil.FlagError)
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	f := cmd.PersistentFlags()
	cmd.Flags().StringVarP(&o.print, "print", "p", "", "run one prompt or slash command and print the result (- reads it from stdin)")
	f.StringVar(&fac.Flags.OutputFormat, "output-format", "text", "output: text, or json (one object per invocation, errors included)")
	cmd.Flags().StringVar(&o.sessionID, "session", "", "resume the session with this id")
	cmd.Flags().BoolVarP(&o.cont, "continue", "c", false, "continue the session of this repository used last (a turn ran or a restore was confirmed)")
	cmd.Flags().BoolVarP(&o.resume, "resume", "r", false, "pick a session to continue: type to search, Enter opens it in the TUI, Esc quits")
	f.StringVarP(&fac.Flags.Dir, "cd", "C", "", "run as if started in this directory")
	cmd.Flags().StringVar(&fac.Flags.Provider.Name, "provider", "", "model provider: sim, openai or anthropic (default: sim unless an API key is configured)")
	cmd.Flags().StringVar(&fac.Flags.Provider.Model, "model", "", "model id")
	cmd.Flags().StringVar(&fac.Flags.Provider.BaseURL, "base-url", "", "OpenAI-compatible API base URL (OpenRouter, Ollama, vLLM, llama.cpp)")
	cmd.Flags().BoolVar(&o.acp, "acp", false, "serve the Agent Client Protocol on stdin/stdout")
	cmd.Flags().StringVar(&o.worktree, "worktree", app.WorktreeAlways, "session worktree: always (inside a git repository) or off (= --workspace in-place)")
	cmd.Flags().StringVar(&o.workspace, "workspace", "", "where a new session works: worktree (its own git worktree, the default), in-place (your checkout; restores undo the agent's changes, never yours) or none (conversation-only checkpoints)")
	cmd.Flags().BoolVar(&o.inPlace, "in-place", false, "short for --workspace in-place")
	f.StringVar(&fac.Flags.DataDir, "data-dir", "", "data directory (default $YOLOP_DATA_DIR or $XDG_DATA_HOME/yolop)")
	f.StringVar(&fac.Flags.Sandbox, "sandbox", "", "confine the tools' commands: off, write (default; writes only where a rewind can undo them, plus declared caches) or strict (also outbound TCP only to listed ports)")
	// Completion functions cannot fail a command: a failure means no
	// suggestions.
	_ = cmd.RegisterFlagCompletionFunc("session", fac.CompleteSessionIDs)
	_ = cmd.RegisterFlagCompletionFunc("print", completePrompt(o))
	cmd.InitDefaultCompletionCmd()
	if cc, _, err := cmd.Find([]string{"completion"}); err == nil && cc != cmd {
		cc.Example = "  yolop completion bash > ~/.local/share/bash-completion/completions/yolop\n  yolop completion zsh > \"${fpath[1]}/_yolop\"\n  yolop completion fish > ~/.config/fish/completions/yolop.fish"
	}
	cmd.AddCommand(version.NewCmdVersion(fac, nil), sessions.NewCmdSessions(fac, nil), checkpoints.NewCmdCheckpoints(fac, nil), worktree.NewCmdWorktree(fac), demo.NewCmdDemo(fac, nil), land.NewCmdDiff(fac, nil), land.NewCmdApply(fac, nil), land.NewCmdCommit(fac, nil))
	return cmd
}

// check validates the flags every command shares, before any command
// runs, so a typo leaves nothing behind.
func (o *rootOptions) check(c *cobra.Command, _ []string) error {
	if f := c.Flags().Lookup("worktree"); f != nil {
		o.worktreeSet = f.Changed
	}
	if o.f.Flags.OutputFormat != "text" && o.f.Flags.OutputFormat != "json" {
		f := o.f.Flags.OutputFormat
		o.f.Flags.OutputFormat = "text"
		return cmdutil.Usagef("--output-format must be text or json, not %q", f)
	}
	if o.f.Flags.OutputFormat == "json" && !hasJSON(c) {
		return cmdutil.Usagef("%s has no JSON output; run it without --output-format json", c.CommandPath())
	}
	if o.f.Flags.Dir != "" {
		if st, err := os.Stat(o.f.Flags.Dir); err != nil || !st.IsDir() {
			return cmdutil.Usagef("-C %s: no such directory", o.f.Flags.Dir)
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

func (o *rootOptions) resolveDataDir() (string, error) { return o.f.DataDir() }

func (o *rootOptions) providerConfig() (provider.Config, error) { return o.f.Provider() }

// workspaceMode resolves where a new session works: --workspace or
// --in-place (explicit), else --worktree when given (off is in place),
// else the settings' [workspace] mode, else a worktree.
func (o *rootOptions) workspaceMode() (string, bool, error) {
	if err := config.CheckWorkspaceMode(o.workspace); err != nil {
		return "", false, cmdutil.Usagef("%v", err)
	}
	switch {
	case o.inPlace && o.workspace != "" && o.workspace != config.WorkspaceInPlace:
		return "", false, cmdutil.Usagef("--in-place and --workspace %s say different things; use one", o.workspace)
	case o.inPlace:
		return config.WorkspaceInPlace, true, nil
	case o.workspace != "":
		if o.worktreeSet && (o.workspace == config.WorkspaceWorktree) != (o.worktree == app.WorktreeAlways) {
			return "", false, cmdutil.Usagef("--worktree %s and --workspace %s say different things; use --workspace", o.worktree, o.workspace)
		}
		return o.workspace, true, nil
	case o.worktreeSet:
		if o.worktree == app.WorktreeOff {
			return config.WorkspaceInPlace, false, nil
		}
		return config.WorkspaceWorktree, false, nil
	}
	m, err := o.f.Config.WorkspaceMode()
	if err != nil {
		return "", false, cmdutil.Usagef("%v", err)
	}
	return m, false, nil
}

func runRoot(ctx context.Context, o *rootOptions) error {
	if o.worktree != app.WorktreeAlways && o.worktree != app.WorktreeOff {
		return cmdutil.Usagef("--worktree must be always or off, not %q", o.worktree)
	}
	if o.sessionID != "" && o.cont {
		return cmdutil.Usagef("use either --session or --continue, not both")
	}
	mode, explicit, err := o.workspaceMode()
	if err != nil {
		return o.reportUsage(err)
	}
	if err := o.f.Flags.CheckSandbox(); err != nil {
		return err
	}
	if o.resume && (o.sessionID != "" || o.cont || o.printSet || o.acp) {
		return cmdutil.Usagef("--resume opens a session picker in the terminal UI; it cannot be combined with --session, --continue, -p or --acp")
	}
	if o.acp && (o.printSet || o.sessionID != "" || o.cont) {
		return cmdutil.Usagef("--acp serves an editor; it cannot be combined with -p, --session or --continue")
	}
	if !o.acp && !o.printSet {
		// Checked before a session exists: without a terminal the UI
		// cannot read keys or draw, and `echo prompt | yolop` is almost
		// always meant as `yolop -p -`.
		if err := needTerminal(o.f.IO, o.resume); err != nil {
			return o.reportUsage(err)
		}
	}
	dataDir, err := o.resolveDataDir()
	if err != nil {
		return err
	}
	pcfg, err := o.providerConfig()
	if err != nil {
		if errors.Is(err, provider.ErrUnknown) && o.f.Flags.Provider.Name != "" {
			return o.report(cmdutil.Usagef("--provider: %v", err))
		}
		// A missing key or a bad setting is a configuration error: no
		// turn ran (exit 2, like a bad flag).
		return o.report(cmdutil.Usagef("%v", err))
	}
	servers, err := o.f.Config.MCPServers()
	if err != nil {
		return o.report(cmdutil.Usagef("%v", err))
	}
	opts := app.Options{DataDir: dataDir, Dir: o.f.Flags.Dir, SessionID: o.sessionID, Continue: o.cont, Worktree: o.worktree, Workspace: mode, WorkspaceExplicit: explicit, Provider: pcfg, MCP: servers, Sandbox: o.f.Flags.Sandbox, OneShot: o.printSet}
	// A file watcher spares a capture the walk of the whole tree: the
	// TUI and ACP arm it in the background, print mode with the first
	// capture's walk (app.Options.Watch).
	opts.Watch = true
	if opts, err = o.f.WithSpares(opts); err != nil {
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
		b, err := io.ReadAll(o.f.IO.In)
		if err != nil {
			return err
		}
		prompt = string(b)
	}
	if strings.TrimSpace(prompt) == "" {
		return o.report(cmdutil.Usagef("-p needs a prompt (or - to read it from stdin)"))
	}
	s, err := o.f.Open(ctx, opts)
	if err != nil {
		return o.report(err)
	}
	defer func() {
		// The result is out (in JSON mode, its one object): a failure to
		// close cleanly is told on stderr.
		if err := s.Close(); err != nil {
			fmt.Fprintln(o.f.IO.ErrOut, "yolop: warning: closing the session:", err)
		}
	}()
	popts := printhost.Options{Prompt: prompt, JSON: o.f.Flags.OutputFormat == "json", Stdout: o.f.IO.Out, Stderr: o.f.IO.ErrOut, ConfirmPrefix: o.sessionCommand(s.ID())}
	if !s.Exists() && !command.IsCommand(prompt) && app.ChecksOutWorktree(ctx, opts) {
		// Checking out a large repository into the new session's worktree
		// takes seconds; say what the wait is for.
		popts.Starting = "new session: preparing its own git worktree…"
	}
	return cmdutil.ShownAs(printhost.Run(ctx, s, popts))
}

// report returns err as the command's own failure; Run prints it in the
// selected format, with its code and exit status.
func (o *rootOptions) report(err error) error { return cmdutil.Told(err) }

// reportUsage is report for a failure that is the caller's to fix like a
// bad flag (exit 2, code usage) though it is not a flag error.
func (o *rootOptions) reportUsage(err error) error {
	return cmdutil.ToldUsage(err)
}

// sessionCommand is the command line that reaches session id again.
func (o *rootOptions) sessionCommand(id string) string {
	prefix := "yolop"
	if d := o.f.Flags.DataDir; d != "" {
		// Absolute: the command must work from any directory.
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		prefix += " --data-dir " + cmdutil.ShellQuote(d)
	}
	return prefix + " --session " + id
}
