package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/host/acp"
	printhost "github.com/yolop-dev/yolop/internal/host/print"
	"github.com/yolop-dev/yolop/internal/host/tui"
)

func newCheckpointsCmd(o *rootOptions) *cobra.Command {
	var format string
	var all bool
	cmd := &cobra.Command{
		Use: "checkpoints ID",
		Example: `  yolop checkpoints s_01jf…               # the active branch, newest first
  yolop checkpoints s_01jf… --all         # abandoned turns too
  yolop checkpoints s_01jf… --output-format json`,
		Short:             "List a session's checkpoints (the same as /rewind)",
		Args:              sessionArg,
		ValidArgsFunction: completeSessionIDs(o),
		RunE: func(c *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return usagef("--output-format must be text or json, not %q", format)
			}
			o.outputFormat = format
			dataDir, err := o.resolveDataDir()
			if err != nil {
				return err
			}
			pcfg, err := o.providerConfig()
			if err != nil {
				return o.report(err, 1)
			}
			// Listing needs no write: a read-only data directory or a
			// session held by another process is listed as it is on disk.
			s, err := app.Open(c.Context(), app.Options{DataDir: dataDir, SessionID: args[0], Provider: pcfg, ForReading: true})
			if err != nil {
				return o.report(err, 1)
			}
			defer s.Close()
			line := "/rewind"
			if all {
				line += " --all"
			}
			code := printhost.Run(c.Context(), s, printhost.Options{Prompt: line, JSON: format == "json", Stdout: o.io.Out, Stderr: o.io.ErrOut, ConfirmPrefix: o.sessionCommand(s.ID())})
			if code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "output-format", "text", "text or json")
	cmd.Flags().BoolVar(&all, "all", false, "include checkpoints of abandoned branches")
	return cmd
}

func newWorktreeCmd(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "worktree", Short: "Session worktrees: list and prune", Args: noArgs,
		Example: "  yolop worktree list\n  yolop worktree prune --dry-run",
		RunE: func(c *cobra.Command, _ []string) error {
			return c.Help()
		}}
	list := &cobra.Command{
		Use:     "list",
		Example: `  yolop worktree list`,
		Short:   "List session worktrees under the data directory",
		Args:    noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			dataDir, err := o.resolveDataDir()
			if err != nil {
				return err
			}
			rows, err := app.ListWorktrees(c.Context(), dataDir)
			if err != nil {
				return err
			}
			if len(rows) == 0 {
				fmt.Fprintln(o.io.Out, "No session worktrees.")
				return nil
			}
			tw := tabwriter.NewWriter(o.io.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SESSION\tBRANCH\tSTATE\tPATH")
			for _, e := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.SessionID, e.Branch, entryState(e), e.Path)
			}
			return tw.Flush()
		},
	}
	var dry, force bool
	prune := &cobra.Command{
		Use: "prune",
		Example: `  yolop worktree prune --dry-run    # what would go
  yolop worktree prune              # remove worktrees no session uses (branches are kept)`,
		Short: "Remove worktrees no session references, and their checkpoint refs (branches are kept)",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			dataDir, err := o.resolveDataDir()
			if err != nil {
				return err
			}
			rep, err := app.PruneWorktrees(c.Context(), dataDir, dry, force)
			if err != nil {
				return err
			}
			verb := "removed"
			list := rep.Removed
			if dry {
				verb, list = "would remove", rep.WouldRemove
			}
			for _, e := range list {
				fmt.Fprintf(o.io.Out, "%s worktree %s (session %s, branch %s kept)\n", verb, e.Path, e.SessionID, e.Branch)
				for _, r := range rep.RefsDeleted[e.SessionID] {
					fmt.Fprintf(o.io.Out, "  %s ref %s\n", verb, r)
				}
			}
			for _, e := range rep.KeptDirty {
				fmt.Fprintf(o.io.Out, "kept %s: uncommitted changes (%s); use --force to remove it anyway\n", e.Path, strings.Join(e.DirtyPaths, ", "))
			}
			for _, s := range rep.Errors {
				fmt.Fprintln(o.io.ErrOut, "yolop:", s)
			}
			if len(list) == 0 && len(rep.KeptDirty) == 0 {
				fmt.Fprintln(o.io.Out, "Nothing to prune.")
			}
			if len(rep.Errors) > 0 {
				return &exitError{code: 1}
			}
			return nil
		},
	}
	prune.Flags().BoolVar(&dry, "dry-run", false, "report what would be removed and change nothing")
	prune.Flags().BoolVar(&force, "force", false, "also remove worktrees with uncommitted changes")
	cmd.AddCommand(list, prune)
	return cmd
}

func entryState(e app.WorktreeRow) string {
	var parts []string
	if e.InUse {
		parts = append(parts, "in use")
	} else {
		parts = append(parts, "unreferenced")
	}
	if e.Missing {
		parts = append(parts, "missing")
	}
	if e.Dirty {
		parts = append(parts, "dirty")
	}
	if e.Problem != "" {
		parts = append(parts, e.Problem)
	}
	return strings.Join(parts, ", ")
}

// acpOpener opens app sessions for the ACP host.
type acpOpener struct{ base app.Options }

func (a acpOpener) New(ctx context.Context, cwd string, servers []app.MCPServer) (acp.Session, error) {
	o := a.base
	o.Dir, o.Create = cwd, true
	o.MCP = append(append([]app.MCPServer(nil), o.MCP...), servers...)
	s, err := app.Open(ctx, o)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (a acpOpener) Load(ctx context.Context, id, cwd string, servers []app.MCPServer) (acp.Session, error) {
	o := a.base
	o.SessionID = id
	o.MCP = append(append([]app.MCPServer(nil), o.MCP...), servers...)
	if cwd != "" {
		o.Dir = cwd
	}
	s, err := app.Open(ctx, o)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func runACP(ctx context.Context, o *rootOptions, opts app.Options) error {
	err := acp.Serve(ctx, o.io.In, o.io.Out, acpOpener{base: opts}, o.io.ErrOut)
	if err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

func runTUI(ctx context.Context, o *rootOptions, opts app.Options) error {
	s, err := app.Open(ctx, opts)
	if err != nil {
		return err
	}
	_, noColor := os.LookupEnv("NO_COLOR")
	err = tui.Run(ctx, s, tui.Options{In: o.io.In, Out: o.io.Out, NoColor: noColor})
	existed := s.Exists()
	id, info := s.ID(), s.Info()
	s.Close()
	if existed {
		fmt.Fprintf(o.io.ErrOut, "Continue this session with: yolop --session %s\n", id)
		if info.Branch != "" {
			fmt.Fprintf(o.io.ErrOut, "Its files are in %s (branch %s). Bring them home: %s\n", info.ActiveRoot, info.Branch, app.WaysHome(id))
		}
	}
	return err
}
