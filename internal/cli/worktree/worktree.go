// Package worktree is `yolop worktree`: list and prune the session
// worktrees and spares under the data directory, and prepare a spare (the
// hidden command the background preparation runs).
package worktree

import (
	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
)

// NewCmdWorktree makes `yolop worktree` and its subcommands; on its own it
// shows its help.
func NewCmdWorktree(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "worktree",
		Short:   "Session worktrees and spares: list and prune",
		Args:    cmdutil.NoArgs,
		Example: "  yolop worktree list\n  yolop worktree prune --dry-run",
		RunE: func(c *cobra.Command, _ []string) error {
			return c.Help()
		},
	}
	cmd.AddCommand(NewCmdList(f, nil), NewCmdPrune(f, nil), NewCmdPrepareSpare(f, nil))
	return cmd
}
