package land

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/land"
)

// DiffOptions are what `yolop diff` reads.
type DiffOptions struct {
	LandOptions
	Stat       bool
	NameStatus bool
	From       string // a checkpoint; "" = the base commit
}

// NewCmdDiff makes `yolop diff`; runF, when set, runs instead of diffRun.
func NewCmdDiff(f *cmdutil.Factory, runF func(*DiffOptions) error) *cobra.Command {
	opts := &DiffOptions{LandOptions: newLandOptions(f)}
	cmd := &cobra.Command{
		Use:   "diff [SESSION]",
		Short: "Show a session's work: its files against the commit its worktree started from (or a checkpoint)",
		Long: `Show a session's work as git's unified diff (binary patches included, so
'yolop diff | git apply' works): the session's current files against the commit
its worktree was created from, or against checkpoint cpN with --from.
SESSION defaults to the latest session of this repository.`,
		Example: `  yolop diff                      # the latest session of this repository, as a patch
  yolop diff s_01jf… --stat        # a diffstat
  yolop diff --from cp2            # what changed since checkpoint cp2
  yolop diff | git apply           # binary files included`,
		Args:              cmdutil.OptionalSessionArg,
		ValidArgsFunction: f.CompleteSessionIDs,
		RunE: func(c *cobra.Command, args []string) error {
			opts.parsed(c.Context(), args)
			if opts.Stat && opts.NameStatus {
				return opts.fail(nil, cmdutil.Usagef("use either --stat or --name-status, not both"))
			}
			if runF != nil {
				return runF(opts)
			}
			return diffRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Stat, "stat", false, "a diffstat instead of the patch")
	cmd.Flags().BoolVar(&opts.NameStatus, "name-status", false, "paths and change letters instead of the patch")
	cmd.Flags().StringVar(&opts.From, "from", "", "compare with checkpoint cpN's snapshot instead of the base commit")
	return cmd
}

func diffRun(opts *DiffOptions) error {
	s, err := opts.open()
	if err != nil {
		return opts.fail(nil, err)
	}
	defer s.Close()
	do := land.DiffOptions{From: opts.From, Color: !opts.Flags.JSON() && opts.IO.ColorOut()}
	switch {
	case opts.Stat:
		do.Format = land.FormatStat
	case opts.NameStatus:
		do.Format = land.FormatNameStatus
	}
	res, err := s.Diff(opts.Ctx, do)
	if err != nil {
		return opts.fail(s, err)
	}
	if opts.Flags.JSON() {
		res.Notes = s.notes(res.Notes)
		return cmdutil.WriteJSON(opts.IO.Out, res)
	}
	_, err = fmt.Fprint(opts.IO.Out, res.Text)
	if len(res.Paths) == 0 {
		// Stdout stays empty (a patch of nothing); silence would read as
		// a hang or a failure.
		base := res.Base
		if len(base) > 12 {
			base = base[:12]
		}
		against := "its base " + base
		if res.From != "" && res.From != "base" {
			against = "checkpoint " + res.From
		}
		fmt.Fprintf(opts.IO.ErrOut, "yolop: session %s has no changes against %s\n", res.SessionID, against)
	}
	// Stdout stays a patch `git apply` takes; what it leaves out is said
	// on stderr.
	for _, n := range res.Notes {
		fmt.Fprintln(opts.IO.ErrOut, "yolop: note:", n)
	}
	return err
}
