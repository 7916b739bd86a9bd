package cmdutil

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/catalog"
)

// CompleteSessionIDs completes a session id argument (once) with the
// saved sessions, each described by its title.
func (f *Factory) CompleteSessionIDs(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	dataDir, err := f.QuietDataDir()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	rows, err := catalog.ListSessions(dataDir)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, r := range rows {
		if strings.HasPrefix(r.SessionID, toComplete) {
			out = append(out, cobra.CompletionWithDesc(r.SessionID, r.Title))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// QuietDataDir is the data directory without the note on a relative one,
// for completions: their output is parsed by the shell.
func (f *Factory) QuietDataDir() (string, error) {
	dir, _, err := f.Config.DataDir(f.Flags.DataDir)
	return dir, err
}
