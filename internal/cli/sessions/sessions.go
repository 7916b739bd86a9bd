// Package sessions is `yolop sessions`: list, show, rm, fork and search
// the sessions of the data directory.
package sessions

import (
	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
)

// NewCmdSessions makes `yolop sessions` and its subcommands; on its own
// it lists, as `sessions list` does (listF, when set, runs instead of the
// listing).
func NewCmdSessions(f *cmdutil.Factory, listF func(*ListOptions) error) *cobra.Command {
	list := NewCmdList(f, listF)
	cmd := &cobra.Command{
		Use: "sessions",
		Example: `  yolop sessions
  yolop sessions --output-format json`,
		Short: "List sessions, newest first",
		Args:  cmdutil.NoArgs,
		RunE:  list.RunE,
	}
	cmd.AddCommand(list, NewCmdShow(f, nil), NewCmdRm(f, nil), NewCmdFork(f, nil), NewCmdSearch(f, nil))
	return cmd
}
