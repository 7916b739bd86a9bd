package sessions

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/provider"
)

// ForkOptions are what `yolop sessions fork` reads.
type ForkOptions struct {
	IO       *cmdutil.IOStreams
	Flags    *cmdutil.GlobalFlags
	DataDir  func() (string, error)
	Provider func() (provider.Config, error)
	// WithSpares adds the spare settings and the background preparer.
	WithSpares func(app.Env) (app.Env, error)

	Ctx       context.Context
	SessionID string
}

// NewCmdFork makes `yolop sessions fork`; runF, when set, runs instead of
// forkRun.
func NewCmdFork(f *cmdutil.Factory, runF func(*ForkOptions) error) *cobra.Command {
	opts := &ForkOptions{IO: f.IO, Flags: f.Flags, DataDir: f.DataDir, Provider: f.Provider, WithSpares: f.WithSpares}
	return &cobra.Command{
		Use:               "fork ID",
		Example:           `  yolop sessions fork s_01jf…`,
		Short:             "Start a new session from the valid part of a (read-only) session",
		Args:              cmdutil.SessionArg,
		ValidArgsFunction: f.CompleteSessionIDs,
		RunE: func(c *cobra.Command, args []string) error {
			opts.Ctx, opts.SessionID = c.Context(), args[0]
			if runF != nil {
				return runF(opts)
			}
			return forkRun(opts)
		},
	}
}

// forkRun starts a new session that carries the old one's active
// conversation and files.
func forkRun(opts *ForkOptions) error {
	dataDir, err := opts.DataDir()
	if err != nil {
		return err
	}
	pcfg, err := opts.Provider()
	if err != nil {
		return err
	}
	env, err := opts.WithSpares(app.Env{DataDir: dataDir, Provider: pcfg, Sandbox: opts.Flags.Sandbox})
	if err != nil {
		return err
	}
	id := opts.SessionID
	plan, err := catalog.PlanFork(opts.Ctx, dataDir, id)
	if err != nil {
		return err
	}
	rep, err := app.Fork(opts.Ctx, env, plan)
	if err != nil {
		if rep.SessionID != "" {
			return fmt.Errorf("%w (the new session %s was created; remove it with yolop sessions rm %s)", err, rep.SessionID, rep.SessionID)
		}
		return err
	}
	if opts.Flags.JSON() {
		return cmdutil.WriteJSON(opts.IO.Out, forkJSON{SessionID: rep.SessionID, ForkedFrom: id, Turns: rep.Turns, Events: rep.Events, HasFiles: rep.HasFiles, Files: rep.Files, Note: rep.Note, Continue: opts.Flags.SessionCommand(rep.SessionID)})
	}
	files := ""
	if rep.HasFiles {
		files = fmt.Sprintf("; %s carried over", cmdutil.Plural(rep.Files, "changed path", "changed paths"))
	}
	fmt.Fprintf(opts.IO.Out, "forked %s into %s (%s, %s%s)\n", id, rep.SessionID, cmdutil.Plural(rep.Turns, "turn", "turns"), cmdutil.Plural(rep.Events, "event", "events"), files)
	if rep.Note != "" {
		fmt.Fprintf(opts.IO.Out, "note: %s\n", rep.Note)
	}
	fmt.Fprintf(opts.IO.Out, "continue with: yolop --session %s\n", rep.SessionID)
	return nil
}

// forkJSON is `sessions fork --output-format json`.
type forkJSON struct {
	SessionID  string `json:"session_id"` // the new session
	ForkedFrom string `json:"forked_from"`
	Turns      int    `json:"turns"`
	Events     int    `json:"events"`
	HasFiles   bool   `json:"has_files"`      // the source's files were carried over
	Files      int    `json:"files"`          // changed paths carried over
	Note       string `json:"note,omitempty"` // where the files came from when the source's worktree is missing
	Continue   string `json:"continue"`       // the command that continues it
}
