package root

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/config"
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
	// A file watcher spares a capture the walk of the whole tree: the
	// TUI and ACP arm it in the background, print mode with the first
	// capture's walk.
	env := app.Env{DataDir: dataDir, Dir: o.Flags.Dir, Provider: pcfg, MCP: servers, Sandbox: o.Flags.Sandbox, Life: app.LongLived}
	if o.PrintSet {
		env.Life = app.OneTurn
	}
	if env, err = o.WithSpares(env); err != nil {
		return cmdutil.Told(err)
	}
	switch {
	case o.ACP:
		return runACP(o, env)
	case !o.PrintSet:
		return runTUI(o, env)
	}
	return runPrint(o, env)
}

// request is the session the flags name: --session's, -c's, or a new
// one made at start (when its first prompt comes, or earlier for a host
// that waits for that prompt).
func (o *RootOptions) request(start app.Start) app.Request {
	switch {
	case o.SessionID != "":
		return app.Resume{ID: o.SessionID}
	case o.Continue:
		return app.Continue{}
	}
	return o.newSession(start)
}

// newSession is a new session where the flags and the settings say it
// works.
func (o *RootOptions) newSession(start app.Start) app.New {
	return app.New{Mode: o.Mode, Explicit: o.ModeExplicit, Start: start}
}

// runPrint runs the one prompt or slash command of -p and prints its
// result.
func runPrint(o *RootOptions, env app.Env) error {
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
	s, err := o.Open(o.Ctx, env, o.request(app.AtFirstPrompt))
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
	if !s.Exists() && !command.IsCommand(prompt) && (o.Mode == "" || o.Mode == config.WorkspaceWorktree) && env.Spares.Manager(env.DataDir, nil).ChecksOut(o.Ctx, env.Dir) {
		// Checking out a large repository into the new session's worktree
		// takes seconds; say what the wait is for.
		popts.Starting = "new session: preparing its own git worktree…"
	}
	return cmdutil.ShownAs(printhost.Run(o.Ctx, s, popts))
}
