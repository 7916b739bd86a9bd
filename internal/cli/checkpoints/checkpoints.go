// Package checkpoints is `yolop checkpoints`: a session's checkpoints or
// branches, as /rewind and /branches list them.
package checkpoints

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	printhost "github.com/yolop-dev/yolop/internal/host/print"
)

// CheckpointsOptions are what `yolop checkpoints` reads.
type CheckpointsOptions struct {
	IO    *cmdutil.IOStreams
	Flags *cmdutil.GlobalFlags
	// Open opens session id, or the latest of this repository for "".
	Open func(ctx context.Context, id string) (*app.Session, error)

	Ctx       context.Context
	SessionID string // "" = the latest session of this repository
	All       bool
	Branches  bool
}

// NewCmdCheckpoints makes `yolop checkpoints`; runF, when set, runs
// instead of checkpointsRun.
func NewCmdCheckpoints(f *cmdutil.Factory, runF func(*CheckpointsOptions) error) *cobra.Command {
	opts := &CheckpointsOptions{IO: f.IO, Flags: f.Flags, Open: f.ReadOrLatest}
	cmd := &cobra.Command{
		Use: "checkpoints [SESSION]",
		Example: `  yolop checkpoints                       # the latest session of this repository
  yolop checkpoints s_01jf…               # the active branch, newest first
  yolop checkpoints s_01jf… --all         # abandoned turns too
  yolop checkpoints s_01jf… --branches    # the branches (b1, b2, …)
  yolop checkpoints s_01jf… --output-format json`,
		Short: "List a session's checkpoints (the same as /rewind)",
		Long: `List a session's checkpoints, as /rewind does (or its branches, as /branches).
SESSION defaults to the latest session of this repository, as for diff, apply
and commit.`,
		Args:              cmdutil.OptionalSessionArg,
		ValidArgsFunction: f.CompleteSessionIDs,
		RunE: func(c *cobra.Command, args []string) error {
			opts.Ctx = c.Context()
			if len(args) == 1 {
				opts.SessionID = args[0]
			}
			if opts.All && opts.Branches {
				return cmdutil.Told(cmdutil.Usagef("use either --all or --branches, not both"))
			}
			if runF != nil {
				return runF(opts)
			}
			return checkpointsRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.All, "all", false, "include checkpoints of abandoned branches, and the recovery snapshots kept")
	cmd.Flags().BoolVar(&opts.Branches, "branches", false, "list the session's branches (the same as /branches)")
	return cmd
}

func checkpointsRun(opts *CheckpointsOptions) error {
	// Listing needs no write: a read-only data directory or a session
	// held by another process is listed as it is on disk.
	s, err := opts.Open(opts.Ctx, opts.SessionID)
	if err != nil {
		return cmdutil.Told(err)
	}
	defer s.Close()
	line := "/rewind"
	switch {
	case opts.All:
		line += " --all"
	case opts.Branches:
		line = "/branches"
	}
	return cmdutil.ShownAs(printhost.Run(opts.Ctx, s, printhost.Options{Prompt: line, JSON: opts.Flags.JSON(), Stdout: opts.IO.Out, Stderr: opts.IO.ErrOut, ConfirmPrefix: opts.Flags.SessionCommand(s.ID())}))
}
