package worktree

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
)

// PrepareSpareOptions are what `yolop worktree prepare-spare` reads.
type PrepareSpareOptions struct {
	IO      *cmdutil.IOStreams
	Flags   *cmdutil.GlobalFlags // -C names the repository
	DataDir func() (string, error)

	Ctx context.Context
	At  string // the commit to park the spare at ("" = HEAD)
}

// NewCmdPrepareSpare makes the hidden command the background preparation
// runs (benchmarks run it too, with --at); runF, when set, runs instead of
// prepareSpareRun.
func NewCmdPrepareSpare(f *cmdutil.Factory, runF func(*PrepareSpareOptions) error) *cobra.Command {
	opts := &PrepareSpareOptions{IO: f.IO, Flags: f.Flags, DataDir: f.DataDir}
	cmd := &cobra.Command{
		Use:    "prepare-spare",
		Short:  "Prepare a spare worktree for the repository so the next session starts without a checkout",
		Hidden: true,
		Args:   cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts.Ctx = c.Context()
			if runF != nil {
				return runF(opts)
			}
			return prepareSpareRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.At, "at", "", "commit to park the spare at (default: HEAD)")
	return cmd
}

func prepareSpareRun(opts *PrepareSpareOptions) error {
	dataDir, err := opts.DataDir()
	if err != nil {
		return err
	}
	dir := opts.Flags.Dir
	if dir == "" {
		dir = "."
	}
	// Before the first git: every process the preparation starts takes
	// its priority from the thread that forks it. A preparation that
	// would compete with the user's turns does not run; the failure is
	// shown where a detached one's is.
	if err := lowerPriority(); err != nil {
		catalog.RecordPrepareFailure(dataDir, dir, err)
		return err
	}
	path, err := catalog.PrepareSpare(opts.Ctx, dataDir, dir, opts.At)
	if err != nil {
		return err
	}
	if opts.Flags.JSON() {
		return cmdutil.WriteJSON(opts.IO.Out, map[string]string{"spare": path}) // "" when it already had its spares
	}
	if path == "" {
		_, err := fmt.Fprintln(opts.IO.Out, "the repository already has its spare worktrees")
		return err
	}
	_, err = fmt.Fprintln(opts.IO.Out, "prepared spare worktree", path)
	return err
}
