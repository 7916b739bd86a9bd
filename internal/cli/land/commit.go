package land

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/land"
)

// CommitOptions are what `yolop commit` reads.
type CommitOptions struct {
	LandOptions
	Message  string // "" = the session title and its turn prompts
	NoVerify bool
}

// NewCmdCommit makes `yolop commit`; runF, when set, runs instead of
// commitRun.
func NewCmdCommit(f *cmdutil.Factory, runF func(*CommitOptions) error) *cobra.Command {
	opts := &CommitOptions{LandOptions: newLandOptions(f)}
	cmd := &cobra.Command{
		Use:   "commit [SESSION]",
		Short: "Commit a session's files on its own branch (then: git merge yolop/<slug>-<id>)",
		Long: `Commit the session worktree's current files on the session's branch with your
git identity, running your hooks unless --no-verify. Ignored and
write-blocklisted paths are never committed. The default message is the session
title and its turn prompts. Afterwards 'git merge <branch>' from your checkout
brings the work. SESSION defaults to the latest session of this repository.`,
		Example: `  yolop commit                     # title and turn prompts as the message
  yolop commit -m 'Validate the input' && git merge yolop/validate-the-input-k2m3`,
		Args:              cmdutil.OptionalSessionArg,
		ValidArgsFunction: f.CompleteSessionIDs,
		RunE: func(c *cobra.Command, args []string) error {
			opts.parsed(c.Context(), args)
			if runF != nil {
				return runF(opts)
			}
			return commitRun(opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Message, "message", "m", "", "the commit message (default: the session title and its turn prompts)")
	cmd.Flags().BoolVar(&opts.NoVerify, "no-verify", false, "run no git hook at all (not only pre-commit and commit-msg)")
	return cmd
}

func commitRun(opts *CommitOptions) error {
	s, err := opts.open()
	if err != nil {
		return opts.fail(nil, err)
	}
	defer s.Close()
	res, err := s.Commit(opts.Ctx, land.CommitOptions{Message: opts.Message, NoVerify: opts.NoVerify})
	if err != nil {
		return opts.fail(s, err)
	}
	if opts.Flags.JSON() {
		res.Notes = s.notes(res.Notes)
		return cmdutil.WriteJSON(opts.IO.Out, res)
	}
	_, err = fmt.Fprint(opts.IO.Out, res.Text())
	return err
}
