package land

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/land"
)

// ApplyOptions are what `yolop apply` reads.
type ApplyOptions struct {
	LandOptions
	DryRun     bool
	OnConflict string // land.OnConflictRefuse or land.OnConflictMarkers
	To         string // another checkout of the same repository ("" = the session's)
	Undo       bool
	Force      bool // with Undo: overwrite the paths edited since the apply
}

// NewCmdApply makes `yolop apply`; runF, when set, runs instead of
// applyRun.
func NewCmdApply(f *cmdutil.Factory, runF func(*ApplyOptions) error) *cobra.Command {
	opts := &ApplyOptions{LandOptions: newLandOptions(f)}
	cmd := &cobra.Command{
		Use:   "apply [SESSION]",
		Short: "Merge a session's work into your checkout as uncommitted changes (--undo takes it back)",
		Long: `Bring a session's net changes (its base commit -> its current files) into the
checkout it was started from, as ordinary uncommitted changes, with a three-way
merge: your own uncommitted edits on other lines survive and renames are
followed. Your HEAD, branches and index are never changed. Your files are
captured first, so 'yolop apply --undo' puts back exactly what apply wrote.
SESSION defaults to the latest session of this repository.

Exit codes: 0 applied, 1 refused or conflicts, 2 usage.`,
		Example: `  yolop apply --dry-run            # each path with its outcome; nothing written
  yolop apply                      # merge the latest session's work into this checkout
  yolop apply s_01jf… --on-conflict markers
  yolop apply --undo               # put back exactly what the last apply wrote`,
		Args:              cmdutil.OptionalSessionArg,
		ValidArgsFunction: f.CompleteSessionIDs,
		RunE: func(c *cobra.Command, args []string) error {
			opts.parsed(c.Context(), args)
			if err := opts.check(); err != nil {
				return opts.fail(nil, err)
			}
			if runF != nil {
				return runF(opts)
			}
			return applyRun(opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.DryRun, "dry-run", false, "list each path with its outcome and write nothing")
	fl.StringVar(&opts.OnConflict, "on-conflict", land.OnConflictRefuse, "refuse (write nothing) or markers (write conflict markers)")
	fl.StringVar(&opts.To, "to", "", "apply to another checkout of the same repository")
	fl.BoolVar(&opts.Undo, "undo", false, "put back exactly the paths the session's last apply wrote")
	fl.BoolVar(&opts.Force, "force", false, "with --undo: overwrite paths you edited since the apply (your edits are kept under a ref)")
	return cmd
}

// check refuses flags that do not go together, before the session opens.
func (opts *ApplyOptions) check() error {
	if opts.OnConflict != land.OnConflictRefuse && opts.OnConflict != land.OnConflictMarkers {
		return cmdutil.Usagef("--on-conflict must be refuse or markers, not %q", opts.OnConflict)
	}
	if opts.Force && !opts.Undo {
		return cmdutil.Usagef("--force only goes with --undo")
	}
	if opts.Undo && (opts.DryRun || opts.OnConflict != land.OnConflictRefuse) {
		return cmdutil.Usagef("--undo takes no --dry-run or --on-conflict")
	}
	if opts.To != "" {
		if st, err := os.Stat(opts.To); err != nil || !st.IsDir() {
			return cmdutil.Usagef("--to %s: no such directory", opts.To)
		}
	}
	return nil
}

func applyRun(opts *ApplyOptions) error {
	s, err := opts.open()
	if err != nil {
		return opts.fail(nil, err)
	}
	defer s.Close()
	if opts.Undo {
		return undoRun(opts, s)
	}
	res, err := s.Apply(opts.Ctx, land.ApplyOptions{To: opts.To, DryRun: opts.DryRun, OnConflict: opts.OnConflict})
	if res == nil {
		return opts.fail(s, err)
	}
	if !opts.Flags.JSON() {
		cmdutil.TellRepairs(opts.IO.ErrOut, res.Repairs)
		fmt.Fprint(opts.IO.Out, res.Text())
		if err != nil {
			return cmdutil.Told(err)
		}
		return nil
	}
	res.Notes = s.notes(res.Notes)
	if err == nil {
		return cmdutil.WriteJSON(opts.IO.Out, res)
	}
	// One object, as every failure prints: the error contract's "code"
	// and "error", with the outcomes beside them.
	if werr := cmdutil.WriteJSON(opts.IO.Out, applyFailedJSON{ApplyResult: res, ErrorJSON: cmdutil.ErrorWithItsCode(err)}); werr != nil {
		return werr
	}
	return cmdutil.Shown(err) // the object says why
}

// undoRun puts back what the session's last apply wrote.
func undoRun(opts *ApplyOptions, s *opened) error {
	res, err := s.UndoApply(opts.Ctx, land.UndoOptions{To: opts.To, Force: opts.Force})
	if err != nil {
		return opts.fail(s, err)
	}
	if opts.Flags.JSON() {
		res.Notes = s.notes(res.Notes)
		return cmdutil.WriteJSON(opts.IO.Out, res)
	}
	cmdutil.TellRepairs(opts.IO.ErrOut, res.Repairs)
	_, err = fmt.Fprint(opts.IO.Out, res.Text())
	return err
}

// applyFailedJSON is a refused or conflicting apply in JSON: the result
// with the error and its code.
type applyFailedJSON struct {
	*land.ApplyResult
	cmdutil.ErrorJSON
}
