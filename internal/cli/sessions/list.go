package sessions

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/command"
)

// ListOptions are what `yolop sessions list` reads.
type ListOptions struct {
	IO      *cmdutil.IOStreams
	Flags   *cmdutil.GlobalFlags
	DataDir func() (string, error)
}

// NewCmdList makes `yolop sessions list`; runF, when set, runs instead of
// listRun.
func NewCmdList(f *cmdutil.Factory, runF func(*ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Flags: f.Flags, DataDir: f.DataDir}
	return &cobra.Command{
		Use:     "list",
		Example: `  yolop sessions list --output-format json`,
		Short:   "List sessions, newest first (the same as `yolop sessions`)",
		Args:    cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			return listRun(opts)
		},
	}
}

func listRun(opts *ListOptions) error {
	dataDir, err := opts.DataDir()
	if err != nil {
		return err
	}
	rows, err := catalog.ListSessions(dataDir)
	if err != nil {
		return err
	}
	digestWarning(opts.IO, rows)
	if opts.Flags.JSON() {
		return cmdutil.WriteJSON(opts.IO.Out, map[string]any{"sessions": rows})
	}
	if len(rows) == 0 {
		fmt.Fprintln(opts.IO.Out, "No sessions yet. Start one with `yolop` or `yolop -p PROMPT`.")
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTITLE\tREPOSITORY\tLAST USED\tTURNS\tWORKTREE\tREAD-ONLY")
	for _, r := range rows {
		repo := r.RepoRoot
		if repo == "" {
			repo = r.ActiveRoot
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.SessionID, listTitle(r.Title), repo, cmdutil.Ago(r.LastUsed, now), r.Turns, worktreeColumn(r), readOnlyColumn(r))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(opts.IO.Out, "\nNewest used first; `yolop -c` continues the first one of the repository it runs in.")
	return nil
}

// worktreeColumn is a session's branch with its worktree's state when
// that is not ok, or only the state for a session without a branch.
func worktreeColumn(r catalog.SessionRow) string {
	if r.Branch == "" {
		return string(r.WorktreeState)
	}
	if r.WorktreeState != catalog.WorktreeOK {
		return r.Branch + " (" + string(r.WorktreeState) + ")"
	}
	return r.Branch
}

// readOnlyColumn says whether a session refuses turns, and why a damaged
// one or one whose repository is missing is listed as it is.
func readOnlyColumn(r catalog.SessionRow) string {
	switch {
	case r.ReadOnly():
		return "yes"
	case r.State.Kind == catalog.StateProblem:
		return r.State.String()
	case r.WorktreeState == catalog.WorktreeRepoMissing:
		return "no (repository missing)"
	}
	return "no"
}

func listTitle(t string) string {
	if t == "" {
		return "(untitled)"
	}
	t = command.DisplayText(t)
	if r := []rune(t); len(r) > 40 {
		return string(r[:39]) + "…"
	}
	return t
}

// digestWarning tells, once per listing on stderr, that some sessions'
// listing digests could not be saved: listing them stays slow until the
// cause (a full disk, a permission) is fixed.
func digestWarning(io *cmdutil.IOStreams, rows []catalog.SessionRow) {
	n, first := 0, ""
	for _, r := range rows {
		if r.DigestError != "" {
			if n == 0 {
				first = r.SessionID + ": " + r.DigestError
			}
			n++
		}
	}
	if n > 0 {
		fmt.Fprintf(io.ErrOut, "yolop: the listing digest of %d session(s) could not be saved (%s); each listing parses their logs until it can be\n", n, first)
	}
}
