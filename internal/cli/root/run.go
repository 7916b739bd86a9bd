package root

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/command"
	printhost "github.com/yolop-dev/yolop/internal/host/print"
	"github.com/yolop-dev/yolop/internal/provider"
)

// rootRun opens the session the flags name and hands it to a host: the
// ACP server, the terminal UI, or print mode for -p.
func rootRun(o *RootOptions) error {
	dataDir, err := o.DataDir()
	if err != nil {
		return err
	}
	pcfg, err := o.Provider()
	if err != nil {
		if errors.Is(err, provider.ErrUnknown) && o.Flags.Provider.Name != "" {
			return cmdutil.Told(cmdutil.Usagef("--provider: %v", err))
		}
		// A missing key or a bad setting is a configuration error: no
		// turn ran (exit 2, like a bad flag).
		return cmdutil.Told(cmdutil.Usagef("%v", err))
	}
	servers, err := o.Config.MCPServers()
	if err != nil {
		return cmdutil.Told(cmdutil.Usagef("%v", err))
	}
	opts := app.Options{DataDir: dataDir, Dir: o.Flags.Dir, SessionID: o.SessionID, Continue: o.Continue, Worktree: o.Worktree, Workspace: o.Mode, WorkspaceExplicit: o.ModeExplicit, Provider: pcfg, MCP: servers, Sandbox: o.Flags.Sandbox, OneShot: o.PrintSet}
	// A file watcher spares a capture the walk of the whole tree: the
	// TUI and ACP arm it in the background, print mode with the first
	// capture's walk (app.Options.Watch).
	opts.Watch = true
	if opts, err = o.WithSpares(opts); err != nil {
		return cmdutil.Told(err)
	}
	switch {
	case o.ACP:
		return runACP(o, opts)
	case !o.PrintSet:
		return runTUI(o, opts)
	}
	return runPrint(o, opts)
}

// runPrint runs the one prompt or slash command of -p and prints its
// result.
func runPrint(o *RootOptions, opts app.Options) error {
	prompt := o.Print
	if prompt == "-" {
		b, err := io.ReadAll(o.IO.In)
		if err != nil {
			return err
		}
		prompt = string(b)
	}
	if strings.TrimSpace(prompt) == "" {
		return cmdutil.Told(cmdutil.Usagef("-p needs a prompt (or - to read it from stdin)"))
	}
	s, err := o.Open(o.Ctx, opts)
	if err != nil {
		return cmdutil.Told(err)
	}
	defer func() {
		// The result is out (in JSON mode, its one object): a failure to
		// close cleanly is told on stderr.
		if err := s.Close(); err != nil {
			fmt.Fprintln(o.IO.ErrOut, "yolop: warning: closing the session:", err)
		}
	}()
	popts := printhost.Options{Prompt: prompt, JSON: o.Flags.JSON(), Stdout: o.IO.Out, Stderr: o.IO.ErrOut, ConfirmPrefix: o.Flags.SessionCommand(s.ID())}
	if !s.Exists() && !command.IsCommand(prompt) && app.ChecksOutWorktree(o.Ctx, opts) {
		// Checking out a large repository into the new session's worktree
		// takes seconds; say what the wait is for.
		popts.Starting = "new session: preparing its own git worktree…"
	}
	return cmdutil.ShownAs(printhost.Run(o.Ctx, s, popts))
}
