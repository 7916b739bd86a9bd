// Package root is yolop's root command: the terminal UI, one turn with
// -p, the ACP server with --acp, the global flags every command shares,
// and the command tree.
package root

import (
	"context"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/buildinfo"
	"github.com/yolop-dev/yolop/internal/cli/checkpoints"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/cli/demo"
	landCmd "github.com/yolop-dev/yolop/internal/cli/land"
	"github.com/yolop-dev/yolop/internal/cli/sessions"
	"github.com/yolop-dev/yolop/internal/cli/version"
	worktreeCmd "github.com/yolop-dev/yolop/internal/cli/worktree"
	"github.com/yolop-dev/yolop/internal/provider"
)

// RootOptions are what the root command reads: its own flags and, from
// the factory, what opening a session takes.
type RootOptions struct {
	IO       *cmdutil.IOStreams
	Flags    *cmdutil.GlobalFlags
	Config   cmdutil.Config
	DataDir  func() (string, error)
	Provider func() (provider.Config, error)
	Open     func(context.Context, app.Env, app.Request) (*app.Session, error)
	// WithSpares adds the spare settings and the background preparer.
	WithSpares func(app.Env) (app.Env, error)

	Ctx         context.Context
	Print       string // -p: a prompt or slash command; - reads it from stdin
	PrintSet    bool   // -p was given, even empty
	SessionID   string
	Continue    bool
	Resume      bool
	ACP         bool
	Worktree    string
	WorktreeSet bool // --worktree was given
	Workspace   string
	InPlace     bool
	// Mode is where a new session works, from --workspace, --in-place,
	// --worktree or the settings; ModeExplicit says the command line
	// chose it.
	Mode         string
	ModeExplicit bool
}

// NewCmdRoot makes the command tree; runF, when set, runs instead of
// rootRun (the subcommands run as they are).
func NewCmdRoot(f *cmdutil.Factory, runF func(*RootOptions) error) *cobra.Command {
	opts := &RootOptions{IO: f.IO, Flags: f.Flags, Config: f.Config, DataDir: f.DataDir, Provider: f.Provider, Open: f.Open, WithSpares: f.WithSpares}
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
		PersistentPreRunE: checkGlobal(f.Flags),
		RunE: func(c *cobra.Command, _ []string) error {
			opts.Ctx = c.Context()
			opts.PrintSet, opts.WorktreeSet = c.Flags().Changed("print"), c.Flags().Changed("worktree")
			if err := opts.check(c.Flags().Changed("session")); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return rootRun(opts)
		},
	}
	// --version, as most command-line tools have it; `yolop version`
	// says more.
	cmd.Version = buildinfo.Version()
	cmd.SetVersionTemplate("yolop {{.Version}}\n")
	cmd.SetFlagErrorFunc(cmdutil.FlagError)
	cmd.SetIn(f.IO.In)
	cmd.SetOut(f.IO.Out)
	cmd.SetErr(f.IO.ErrOut)
	addFlags(cmd, f.Flags, opts)
	addCompletion(cmd, f, opts)
	cmd.AddCommand(version.NewCmdVersion(f, nil), sessions.NewCmdSessions(f, nil), checkpoints.NewCmdCheckpoints(f, nil), worktreeCmd.NewCmdWorktree(f), demo.NewCmdDemo(f, nil), landCmd.NewCmdDiff(f, nil), landCmd.NewCmdApply(f, nil), landCmd.NewCmdCommit(f, nil))
	return cmd
}

// addFlags adds the root's flags to opts and the global ones, which every
// subcommand inherits, to g.
func addFlags(cmd *cobra.Command, g *cmdutil.GlobalFlags, opts *RootOptions) {
	fl, pf := cmd.Flags(), cmd.PersistentFlags()
	fl.StringVarP(&opts.Print, "print", "p", "", "run one prompt or slash command and print the result (- reads it from stdin)")
	pf.StringVar(&g.OutputFormat, "output-format", "text", "output: text, or json (one object per invocation, errors included)")
	fl.StringVar(&opts.SessionID, "session", "", "resume the session with this id")
	fl.BoolVarP(&opts.Continue, "continue", "c", false, "continue the session of this repository used last (a turn ran or a restore was confirmed)")
	fl.BoolVarP(&opts.Resume, "resume", "r", false, "pick a session to continue: type to search, Enter opens it in the TUI, Esc quits")
	pf.StringVarP(&g.Dir, "cd", "C", "", "run as if started in this directory")
	fl.StringVar(&g.Provider.Name, "provider", "", "model provider: sim, openai or anthropic (default: sim unless an API key is configured)")
	fl.StringVar(&g.Provider.Model, "model", "", "model id")
	fl.StringVar(&g.Provider.BaseURL, "base-url", "", "OpenAI-compatible API base URL (OpenRouter, Ollama, vLLM, llama.cpp)")
	fl.BoolVar(&opts.ACP, "acp", false, "serve the Agent Client Protocol on stdin/stdout")
	fl.StringVar(&opts.Worktree, "worktree", worktreeAlways, "session worktree: always (inside a git repository) or off (= --workspace in-place)")
	fl.StringVar(&opts.Workspace, "workspace", "", "where a new session works: worktree (its own git worktree, the default), in-place (your checkout; restores undo the agent's changes, never yours) or none (conversation-only checkpoints)")
	fl.BoolVar(&opts.InPlace, "in-place", false, "short for --workspace in-place")
	pf.StringVar(&g.DataDir, "data-dir", "", "data directory (default $YOLOP_DATA_DIR or $XDG_DATA_HOME/yolop)")
	pf.StringVar(&g.Sandbox, "sandbox", "", "confine the tools' commands: off, write (default; writes only where a rewind can undo them, plus declared caches) or strict (also outbound TCP only to listed ports)")
}

// addCompletion completes --session and -p, and gives the completion
// command its examples.
func addCompletion(cmd *cobra.Command, f *cmdutil.Factory, opts *RootOptions) {
	// Registering fails only for a flag that does not exist or has a
	// completion already: neither can happen to these two.
	_ = cmd.RegisterFlagCompletionFunc("session", f.CompleteSessionIDs)
	_ = cmd.RegisterFlagCompletionFunc("print", completePrompt(f, opts))
	cmd.InitDefaultCompletionCmd()
	if cc, _, err := cmd.Find([]string{"completion"}); err == nil && cc != cmd {
		cc.Example = "  yolop completion bash > ~/.local/share/bash-completion/completions/yolop\n  yolop completion zsh > \"${fpath[1]}/_yolop\"\n  yolop completion fish > ~/.config/fish/completions/yolop.fish"
	}
}

// checkGlobal validates the flags every command shares, before any
// command runs, so a typo leaves nothing behind.
func checkGlobal(g *cmdutil.GlobalFlags) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, _ []string) error {
		if g.OutputFormat != "text" && g.OutputFormat != "json" {
			f := g.OutputFormat
			// The edge reports this error as text.
			g.OutputFormat = "text"
			return cmdutil.Usagef("--output-format must be text or json, not %q", f)
		}
		if g.JSON() && !hasJSON(c) {
			return cmdutil.Usagef("%s has no JSON output; run it without --output-format json", c.CommandPath())
		}
		if g.Dir != "" {
			if st, err := os.Stat(g.Dir); err != nil || !st.IsDir() {
				return cmdutil.Usagef("-C %s: no such directory", g.Dir)
			}
		}
		return nil
	}
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
