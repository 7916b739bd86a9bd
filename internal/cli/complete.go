package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/command"
)

// completeCheckpointIDs completes a checkpoint id of the session named by
// the --session flag or the first argument.
func completeCheckpointIDs(o *rootOptions) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		id := o.sessionID
		if id == "" && len(args) > 0 {
			id = args[0]
		}
		if id == "" {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		dataDir, err := o.f.QuietDataDir()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		rows, err := catalog.CheckpointIDs(c.Context(), dataDir, id)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, r := range rows {
			if strings.HasPrefix(r.ID, toComplete) {
				out = append(out, cobra.CompletionWithDesc(r.ID, r.Prompt))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completePrompt completes -p values that are slash commands: the
// commands print mode offers, and after "/rewind " the checkpoint ids of
// the session named by --session.
func completePrompt(o *rootOptions) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if !strings.HasPrefix(toComplete, "/") {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		if rest, ok := strings.CutPrefix(toComplete, "/rewind "); ok {
			ids, _ := completeCheckpointIDs(o)(c, nil, rest)
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
