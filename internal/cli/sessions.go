package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/worktree"
)

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
func digestWarning(o *rootOptions, rows []catalog.SessionRow) {
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
		fmt.Fprintf(o.f.IO.ErrOut, "yolop: the listing digest of %d session(s) could not be saved (%s); each listing parses their logs until it can be\n", n, first)
	}
}

func newSessionsCmd(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use: "sessions",
		Example: `  yolop sessions
  yolop sessions --output-format json`,
		Short: "List sessions, newest first",
		Args:  cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			dataDir, err := o.resolveDataDir()
			if err != nil {
				return err
			}
			rows, err := catalog.ListSessions(dataDir)
			if err != nil {
				return err
			}
			digestWarning(o, rows)
			if o.f.Flags.OutputFormat == "json" {
				return writeJSON(o, map[string]any{"sessions": rows})
			}
			if len(rows) == 0 {
				fmt.Fprintln(o.f.IO.Out, "No sessions yet. Start one with `yolop` or `yolop -p PROMPT`.")
				return nil
			}
			now := time.Now()
			tw := tabwriter.NewWriter(o.f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTITLE\tREPOSITORY\tLAST USED\tTURNS\tWORKTREE\tREAD-ONLY")
			for _, r := range rows {
				wt := string(r.WorktreeState)
				if r.Branch != "" {
					wt = r.Branch
					if r.WorktreeState != catalog.WorktreeOK {
						wt += " (" + string(r.WorktreeState) + ")"
					}
				}
				repo := r.RepoRoot
				if repo == "" {
					repo = r.ActiveRoot
				}
				ro := "no"
				switch {
				case r.ReadOnly():
					ro = "yes"
				case r.State.Kind == catalog.StateProblem:
					ro = r.State.String()
				case r.WorktreeState == catalog.WorktreeRepoMissing:
					ro = "no (repository missing)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.SessionID, listTitle(r.Title), repo, cmdutil.Ago(r.LastUsed, now), r.Turns, wt, ro)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(o.f.IO.Out, "\nNewest used first; `yolop -c` continues the first one of the repository it runs in.")
			return nil
		},
	}
	show := &cobra.Command{
		Use:               "show ID",
		Example:           `  yolop sessions show s_01jf…`,
		Short:             "Show one session: its worktree, branch and active turns",
		Args:              cmdutil.SessionArg,
		ValidArgsFunction: o.f.CompleteSessionIDs,
		RunE: func(c *cobra.Command, args []string) error {
			dataDir, err := o.resolveDataDir()
			if err != nil {
				return err
			}
			d, err := catalog.DescribeSession(dataDir, args[0])
			if err != nil {
				return err
			}
			pcfg, _ := o.providerConfig()
			work := catalog.DescribeWork(c.Context(), dataDir, d.SessionID, workOpener(o.f, dataDir, pcfg))
			if work != nil && o.f.Flags.OutputFormat != "json" {
				cmdutil.TellRepairs(o.f.IO.ErrOut, work.Notes)
			}
			if o.f.Flags.OutputFormat == "json" {
				return writeJSON(o, struct {
					catalog.SessionRow
					*catalog.Work
				}{d, work})
			}
			if d.State.Kind == catalog.StateProblem {
				// Its description cannot be read: nothing else it says
				// would be true, and it cannot be resumed.
				fmt.Fprintf(o.f.IO.Out, "session     %s\nstate       %s\ndirectory   %s\nremove      yolop sessions rm %s  (its worktree, if it had one, is then left to yolop worktree prune, which keeps uncommitted work)\n", d.SessionID, d.State, d.Dir, d.SessionID)
				return nil
			}
			used := "never"
			if d.LastUsed != nil {
				used = d.LastUsed.Local().Format(time.RFC1123)
			}
			fmt.Fprintf(o.f.IO.Out, "session     %s\ntitle       %s\ncreated     %s\nlast used   %s\nturns       %d (active branch)\nstate       %s\n", d.SessionID, d.Title, d.Created.Local().Format(time.RFC1123), used, d.Turns, d.State)
			if d.Branch != "" {
				branch := d.Branch
				if d.BranchNote != "" {
					branch += " (" + d.BranchNote + ")"
				}
				fmt.Fprintf(o.f.IO.Out, "worktree    %s\nbranch      %s\nrepository  %s\n", d.Worktree, branch, d.RepoRoot)
				if d.Recycled {
					fmt.Fprintln(o.f.IO.Out, "recycled    yes: a parked spare worktree moved to the starting commit (its ignored dependency and build directories were kept)")
				} else {
					fmt.Fprintln(o.f.IO.Out, "recycled    no: a fresh checkout")
				}
				fmt.Fprint(o.f.IO.Out, workLines(d, work))
			} else if d.WorkspaceMode == config.WorkspaceInPlace && d.Folder {
				fmt.Fprintf(o.f.IO.Out, "folder      %s\nworkspace   in place, in a folder outside git: snapshots in a private repository in the data directory (the folder gets no .git); restores undo the agent's changes, never yours\n", d.RepoRoot)
				if d.WorktreeState == catalog.WorktreeCheckoutMissing {
					fmt.Fprintf(o.f.IO.Out, "state       the folder %s is gone; listing and replay work\n", d.RepoRoot)
				}
			} else if d.WorkspaceMode == config.WorkspaceInPlace {
				fmt.Fprintf(o.f.IO.Out, "checkout    %s\nworkspace   in place: snapshots of your checkout; restores undo the agent's changes, never yours\n", d.RepoRoot)
				if d.WorktreeState == catalog.WorktreeCheckoutMissing {
					fmt.Fprintf(o.f.IO.Out, "state       the checkout %s is gone; listing and replay work\n", d.RepoRoot)
				}
			} else {
				fmt.Fprintf(o.f.IO.Out, "directory   %s\nworkspace   conversation only: %s\n", d.ActiveRoot, d.Reason)
			}
			if d.WorktreeState == catalog.WorktreeRepoMissing {
				fmt.Fprintf(o.f.IO.Out, "resume      only from the repository's new place, if it moved: cd NEW-PLACE && yolop --session %s\n", d.SessionID)
			} else if d.ReadOnly() {
				fmt.Fprintf(o.f.IO.Out, "fork        yolop sessions fork %s  (read-only: replay works, turns and restores do not; a fork continues from the valid part)\n", d.SessionID)
			} else {
				fmt.Fprintf(o.f.IO.Out, "resume      yolop --session %s\n", d.SessionID)
			}
			return nil
		},
	}
	var force bool
	rm := &cobra.Command{
		Use: "rm ID",
		Example: `  yolop sessions rm s_01jf…
  yolop sessions rm s_01jf… --force   # also when its worktree has uncommitted changes`,
		Short:             "Remove a session, its worktree and its checkpoint refs (the branch is kept)",
		Args:              cmdutil.SessionArg,
		ValidArgsFunction: o.f.CompleteSessionIDs,
		RunE: func(c *cobra.Command, args []string) error {
			return removeSession(c.Context(), o, args[0], force)
		},
	}
	rm.Flags().BoolVar(&force, "force", false, "remove the worktree even with uncommitted changes")
	fork := &cobra.Command{
		Use:               "fork ID",
		Example:           `  yolop sessions fork s_01jf…`,
		Short:             "Start a new session from the valid part of a (read-only) session",
		Args:              cmdutil.SessionArg,
		ValidArgsFunction: o.f.CompleteSessionIDs,
		RunE: func(c *cobra.Command, args []string) error {
			return forkSession(c.Context(), o, args[0])
		},
	}
	list := &cobra.Command{
		Use:     "list",
		Example: `  yolop sessions list --output-format json`,
		Short:   "List sessions, newest first (the same as `yolop sessions`)",
		Args:    cmdutil.NoArgs,
		RunE:    cmd.RunE,
	}
	cmd.AddCommand(list, show, rm, fork, newSessionsSearchCmd(o))
	return cmd
}

func writeJSON(o *rootOptions, v any) error { return cmdutil.WriteJSON(o.f.IO.Out, v) }

func removeSession(ctx context.Context, o *rootOptions, id string, force bool) error {
	dataDir, err := o.resolveDataDir()
	if err != nil {
		return err
	}
	rep, err := catalog.RemoveSession(ctx, dataDir, id, force)
	var de *worktree.DirtyError
	if errors.As(err, &de) {
		return &dirtyRemoval{de}
	}
	if o.f.Flags.OutputFormat == "json" {
		if err != nil {
			if len(rep.ApplyRefs) > 0 {
				err = fmt.Errorf("%w (kept the refs of your checkout's files taken before this session's applies: %s)", err, strings.Join(rep.ApplyRefs, ", "))
			}
			return err
		}
		return writeJSON(o, removedJSON{SessionID: id, Worktree: rep.Worktree, Branch: rep.Branch, ParkedAs: rep.ParkedAs, RefsDeleted: cmdutil.NonNil(rep.Refs), ApplyRefsKept: cmdutil.NonNil(rep.ApplyRefs), Damaged: rep.Damaged})
	}
	if rep.ParkedAs != "" {
		fmt.Fprintf(o.f.IO.Out, "parked worktree %s as the spare %s for the next session (its files discarded, branch %s kept) and removed %d checkpoint refs\n", rep.Worktree, rep.ParkedAs, rep.Branch, len(rep.Refs))
	} else if rep.Worktree != "" && rep.RepoGone != "" {
		fmt.Fprintf(o.f.IO.Out, "removed worktree %s (its repository %s is gone, and its branch %s and checkpoint refs with it)\n", rep.Worktree, rep.RepoGone, rep.Branch)
	} else if rep.Worktree != "" {
		fmt.Fprintf(o.f.IO.Out, "removed worktree %s (branch %s kept) and %d checkpoint refs\n", rep.Worktree, rep.Branch, len(rep.Refs))
	}
	if len(rep.ApplyRefs) > 0 {
		fmt.Fprintf(o.f.IO.Out, "kept %s of your checkout's files taken before this session's applies (they are yours, not the session's):\n", cmdutil.Plural(len(rep.ApplyRefs), "ref", "refs"))
		for _, r := range rep.ApplyRefs {
			fmt.Fprintf(o.f.IO.Out, "  %s\n", r)
		}
		fmt.Fprintf(o.f.IO.Out, "in the checkout, `git diff REF` shows how a file differs from then and `git restore --source=REF -- PATH` brings that one file back (your other files stay as they are); `git update-ref -d REF` drops a ref\n")
	}
	if err != nil {
		return err
	}
	if rep.Damaged != "" {
		fmt.Fprintf(o.f.IO.Out, "session %s was damaged (%s): its worktree, if it had one, is now unreferenced; `yolop worktree prune` removes it (it keeps one with uncommitted changes unless --force)\n", id, rep.Damaged)
	}
	fmt.Fprintf(o.f.IO.Out, "removed session %s\n", id)
	return nil
}

// forkSession starts a new session that carries the old one's active
// conversation and files.
func forkSession(ctx context.Context, o *rootOptions, id string) error {
	dataDir, err := o.resolveDataDir()
	if err != nil {
		return err
	}
	pcfg, err := o.providerConfig()
	if err != nil {
		return err
	}
	fopts, err := o.f.WithSpares(app.Options{DataDir: dataDir, Worktree: o.worktree, Provider: pcfg, Sandbox: o.f.Flags.Sandbox})
	if err != nil {
		return err
	}
	plan, err := catalog.PlanFork(ctx, dataDir, id)
	if err != nil {
		return err
	}
	rep, err := app.Fork(ctx, fopts, plan)
	if err != nil {
		if rep.SessionID != "" {
			return fmt.Errorf("%w (the new session %s was created; remove it with yolop sessions rm %s)", err, rep.SessionID, rep.SessionID)
		}
		return err
	}
	if o.f.Flags.OutputFormat == "json" {
		return writeJSON(o, forkJSON{SessionID: rep.SessionID, ForkedFrom: id, Turns: rep.Turns, Events: rep.Events, HasFiles: rep.HasFiles, Files: rep.Files, Note: rep.Note, Continue: o.sessionCommand(rep.SessionID)})
	}
	files := ""
	if rep.HasFiles {
		files = fmt.Sprintf("; %s carried over", cmdutil.Plural(rep.Files, "changed path", "changed paths"))
	}
	fmt.Fprintf(o.f.IO.Out, "forked %s into %s (%s, %s%s)\n", id, rep.SessionID, cmdutil.Plural(rep.Turns, "turn", "turns"), cmdutil.Plural(rep.Events, "event", "events"), files)
	if rep.Note != "" {
		fmt.Fprintf(o.f.IO.Out, "note: %s\n", rep.Note)
	}
	fmt.Fprintf(o.f.IO.Out, "continue with: yolop --session %s\n", rep.SessionID)
	return nil
}

// dirtyRemoval is a refused `sessions rm`, said in the command's words.
type dirtyRemoval struct{ *worktree.DirtyError }

func (e *dirtyRemoval) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("cannot check the worktree %s for uncommitted changes (%s); nothing was removed: use --force to remove it anyway", e.Path, e.Reason)
	}
	const show = 5
	list, more := e.Paths, ""
	if len(list) > show {
		list, more = list[:show], fmt.Sprintf(" and %d more", len(list)-show)
	}
	return fmt.Sprintf("the worktree %s has uncommitted changes (%s%s); nothing was removed: commit or discard them, or use --force to lose them", e.Path, strings.Join(list, ", "), more)
}

func (e *dirtyRemoval) Unwrap() error { return e.DirtyError }

// removedJSON is `sessions rm --output-format json`.
type removedJSON struct {
	SessionID     string   `json:"session_id"`
	Worktree      string   `json:"worktree"`          // "" when it had none
	Branch        string   `json:"branch"`            // kept
	ParkedAs      string   `json:"parked_as"`         // the spare the worktree became, "" when removed
	RefsDeleted   []string `json:"refs_deleted"`      // its checkpoint refs
	ApplyRefsKept []string `json:"apply_refs_kept"`   // your checkout's files before its applies
	Damaged       string   `json:"damaged,omitempty"` // why its description could not be read
}

// forkJSON is `sessions fork --output-format json`.
type forkJSON struct {
	SessionID  string `json:"session_id"` // the new session
	ForkedFrom string `json:"forked_from"`
	Turns      int    `json:"turns"`
	Events     int    `json:"events"`
	HasFiles   bool   `json:"has_files"`      // the source's files were carried over
	Files      int    `json:"files"`          // changed paths carried over
	Note       string `json:"note,omitempty"` // where the files came from when the source's worktree is missing
	Continue   string `json:"continue"`       // the command that continues it
}
