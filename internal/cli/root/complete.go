package root

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/command"
)

// completePrompt completes -p values that are slash commands: the
// commands print mode offers, and after "/rewind " the checkpoint ids of
// the session named by --session.
func completePrompt(f *cmdutil.Factory, opts *RootOptions) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if !strings.HasPrefix(toComplete, "/") {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		if rest, ok := strings.CutPrefix(toComplete, "/rewind "); ok {
			ids := checkpointIDs(c, f, opts.SessionID, rest)
			out := make([]cobra.Completion, 0, len(ids))
			for _, id := range ids {
				out = append(out, "/rewind "+id)
			}
			return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
		}
		var out []cobra.Completion
		for _, d := range command.For(command.HostPrint) {
			if name := "/" + d.Name; strings.HasPrefix(name, toComplete) {
				out = append(out, cobra.CompletionWithDesc(name, d.Description))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// checkpointIDs are the checkpoint ids of session id that start with
// prefix, each described by its prompt; none when the session cannot be
// read.
func checkpointIDs(c *cobra.Command, f *cmdutil.Factory, id, prefix string) []cobra.Completion {
	if id == "" {
		return nil
	}
	dataDir, err := f.QuietDataDir()
	if err != nil {
		return nil
	}
	rows, err := catalog.CheckpointIDs(c.Context(), dataDir, id)
	if err != nil {
		return nil
	}
	var out []cobra.Completion
	for _, r := range rows {
		if strings.HasPrefix(r.ID, prefix) {
			out = append(out, cobra.CompletionWithDesc(r.ID, r.Prompt))
		}
	}
	return out
}
