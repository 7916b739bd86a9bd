package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
)

// newPrepareSpareCmd is the hidden command the background preparation runs
// (benchmarks run it too, with --at).
func newPrepareSpareCmd(o *rootOptions) *cobra.Command {
	var at string
	cmd := &cobra.Command{
		Use:    "prepare-spare",
		Short:  "Prepare a spare worktree for the repository so the next session starts without a checkout",
		Hidden: true,
		Args:   cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			dataDir, err := o.resolveDataDir()
			if err != nil {
				return err
			}
			dir := o.f.Flags.Dir
			if dir == "" {
				dir = "."
			}
			// Before the first git: every process the preparation starts
			// takes its priority from the thread that forks it. A
			// preparation that would compete with the user's turns does
			// not run; the failure is shown where a detached one's is.
			if err := lowerPriority(); err != nil {
				catalog.RecordPrepareFailure(dataDir, dir, err)
				return err
			}
			path, err := catalog.PrepareSpare(c.Context(), dataDir, dir, at)
			if err != nil {
				return err
			}
			if o.f.Flags.OutputFormat == "json" {
				return writeJSON(o, map[string]string{"spare": path}) // "" when it already had its spares
			}
			if path == "" {
				_, err := fmt.Fprintln(o.f.IO.Out, "the repository already has its spare worktrees")
				return err
			}
			_, err = fmt.Fprintln(o.f.IO.Out, "prepared spare worktree", path)
			return err
		},
	}
	cmd.Flags().StringVar(&at, "at", "", "commit to park the spare at (default: HEAD)")
	return cmd
}
