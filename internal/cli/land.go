package cli

import (
	"os"

	"github.com/yolop-dev/yolop/internal/cli/cmdutil"

	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/land"
)

// landOptions are the flags shared by diff, apply and commit.
type landOptions struct {
	root    *rootOptions
	session string
	// repairs are what opening the session repaired; every command tells
	// them (stderr in text, "notes" in JSON).
	repairs []string
}

// json reports whether the result is printed as JSON.
func (l *landOptions) json() bool { return l.root.f.Flags.OutputFormat == "json" }

// open picks the session (the argument, or the latest of this
// repository, named on stderr) and opens it.
func (l *landOptions) open(ctx context.Context, args []string) (app.Lander, error) {
	if len(args) == 1 {
		l.session = args[0]
	}
	s, err := l.root.f.OpenLandOrLatest(ctx, l.session)
	if err != nil {
		return nil, err
	}
	l.repairs = s.Repairs()
	if !l.json() {
		cmdutil.TellRepairs(l.root.f.IO.ErrOut, l.repairs)
	}
	return s, nil
}

// notes returns the notes of a JSON result with the repairs made at open
// first.
func (l *landOptions) notes(more []string) []string {
	if len(l.repairs) == 0 {
		return more
	}
	return append(append([]string(nil), l.repairs...), more...)
}

// fail returns err as the command's failure; Run reports it with its
// code and exit status.
func (l *landOptions) fail(err error) error {
	if l.json() {
		// The error object has no room for them: repairs go to stderr.
		cmdutil.TellRepairs(l.root.f.IO.ErrOut, l.repairs)
	}
	return l.root.report(err)
}

type diffOptions struct {
	landOptions
	stat, nameStatus bool
	from             string
}

func newDiffCmd(o *rootOptions) *cobra.Command {
	opts := &diffOptions{landOptions: landOptions{root: o}}
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
		ValidArgsFunction: o.f.CompleteSessionIDs,
		RunE:              func(c *cobra.Command, args []string) error { return runDiff(c.Context(), opts, args) },
	}
	cmd.Flags().BoolVar(&opts.stat, "stat", false, "a diffstat instead of the patch")
	cmd.Flags().BoolVar(&opts.nameStatus, "name-status", false, "paths and change letters instead of the patch")
	cmd.Flags().StringVar(&opts.from, "from", "", "compare with checkpoint cpN's snapshot instead of the base commit")
	return cmd
}

func runDiff(ctx context.Context, opts *diffOptions, args []string) error {
	if opts.stat && opts.nameStatus {
		return opts.fail(cmdutil.Usagef("use either --stat or --name-status, not both"))
	}
	s, err := opts.open(ctx, args)
	if err != nil {
		return opts.fail(err)
	}
	defer s.Close()
	do := land.DiffOptions{From: opts.from, Color: !opts.json() && opts.root.f.IO.ColorOut()}
	switch {
	case opts.stat:
		do.Format = land.FormatStat
	case opts.nameStatus:
		do.Format = land.FormatNameStatus
	}
	res, err := s.Diff(ctx, do)
	if err != nil {
		return opts.fail(err)
	}
	if opts.json() {
		res.Notes = opts.notes(res.Notes)
		return writeJSON(opts.root, res)
	}
	_, err = fmt.Fprint(opts.root.f.IO.Out, res.Text)
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
		fmt.Fprintf(opts.root.f.IO.ErrOut, "yolop: session %s has no changes against %s\n", res.SessionID, against)
	}
	// Stdout stays a patch `git apply` takes; what it leaves out is said
	// on stderr.
	for _, n := range res.Notes {
		fmt.Fprintln(opts.root.f.IO.ErrOut, "yolop: note:", n)
	}
	return err
}

type applyOptions struct {
	landOptions
	dryRun     bool
	onConflict string
	to         string
	undo       bool
	force      bool
}

func newApplyCmd(o *rootOptions) *cobra.Command {
	opts := &applyOptions{landOptions: landOptions{root: o}}
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
		ValidArgsFunction: o.f.CompleteSessionIDs,
		RunE:              func(c *cobra.Command, args []string) error { return runApply(c.Context(), opts, args) },
	}
	f := cmd.Flags()
	f.BoolVar(&opts.dryRun, "dry-run", false, "list each path with its outcome and write nothing")
	f.StringVar(&opts.onConflict, "on-conflict", land.OnConflictRefuse, "refuse (write nothing) or markers (write conflict markers)")
	f.StringVar(&opts.to, "to", "", "apply to another checkout of the same repository")
	f.BoolVar(&opts.undo, "undo", false, "put back exactly the paths the session's last apply wrote")
	f.BoolVar(&opts.force, "force", false, "with --undo: overwrite paths you edited since the apply (your edits are kept under a ref)")
	return cmd
}

func runApply(ctx context.Context, opts *applyOptions, args []string) error {
	if opts.onConflict != land.OnConflictRefuse && opts.onConflict != land.OnConflictMarkers {
		return opts.fail(cmdutil.Usagef("--on-conflict must be refuse or markers, not %q", opts.onConflict))
	}
	if opts.force && !opts.undo {
		return opts.fail(cmdutil.Usagef("--force only goes with --undo"))
	}
	if opts.undo && (opts.dryRun || opts.onConflict != land.OnConflictRefuse) {
		return opts.fail(cmdutil.Usagef("--undo takes no --dry-run or --on-conflict"))
	}
	if opts.to != "" {
		if st, err := os.Stat(opts.to); err != nil || !st.IsDir() {
			return opts.fail(cmdutil.Usagef("--to %s: no such directory", opts.to))
		}
	}
	s, err := opts.open(ctx, args)
	if err != nil {
		return opts.fail(err)
	}
	defer s.Close()
	if opts.undo {
		res, err := s.UndoApply(ctx, land.UndoOptions{To: opts.to, Force: opts.force})
		if err != nil {
			return opts.fail(err)
		}
		if opts.json() {
			res.Notes = opts.notes(res.Notes)
			return writeJSON(opts.root, res)
		}
		cmdutil.TellRepairs(opts.root.f.IO.ErrOut, res.Repairs)
		_, err = fmt.Fprint(opts.root.f.IO.Out, res.Text())
		return err
	}
	res, err := s.Apply(ctx, land.ApplyOptions{To: opts.to, DryRun: opts.dryRun, OnConflict: opts.onConflict})
	if res == nil {
		return opts.fail(err)
	}
	if opts.json() {
		res.Notes = opts.notes(res.Notes)
		var out any = res
		if err != nil {
			// One object, as every failure prints: the error contract's
			// "code" and "error", with the outcomes beside them.
			out = applyFailedJSON{ApplyResult: res, ErrorJSON: cmdutil.ErrorWithItsCode(err)}
		}
		if werr := writeJSON(opts.root, out); werr != nil {
			return werr
		}
	} else {
		cmdutil.TellRepairs(opts.root.f.IO.ErrOut, res.Repairs)
		fmt.Fprint(opts.root.f.IO.Out, res.Text())
	}
	if err != nil {
		if opts.json() {
			return cmdutil.Shown(err) // the object says why
		}
		return opts.root.report(err)
	}
	return nil
}

// applyFailedJSON is a refused or conflicting apply in JSON: the result
// with the error and its code.
type applyFailedJSON struct {
	*land.ApplyResult
	cmdutil.ErrorJSON
}

type commitOptions struct {
	landOptions
	message  string
	noVerify bool
}

func newCommitCmd(o *rootOptions) *cobra.Command {
	opts := &commitOptions{landOptions: landOptions{root: o}}
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
		ValidArgsFunction: o.f.CompleteSessionIDs,
		RunE:              func(c *cobra.Command, args []string) error { return runCommit(c.Context(), opts, args) },
	}
	cmd.Flags().StringVarP(&opts.message, "message", "m", "", "the commit message (default: the session title and its turn prompts)")
	cmd.Flags().BoolVar(&opts.noVerify, "no-verify", false, "run no git hook at all (not only pre-commit and commit-msg)")
	return cmd
}

func runCommit(ctx context.Context, opts *commitOptions, args []string) error {
	s, err := opts.open(ctx, args)
	if err != nil {
		return opts.fail(err)
	}
	defer s.Close()
	res, err := s.Commit(ctx, land.CommitOptions{Message: opts.message, NoVerify: opts.noVerify})
	if err != nil {
		return opts.fail(err)
	}
	if opts.json() {
		res.Notes = opts.notes(res.Notes)
		return writeJSON(opts.root, res)
	}
	_, err = fmt.Fprint(opts.root.f.IO.Out, res.Text())
	return err
}
