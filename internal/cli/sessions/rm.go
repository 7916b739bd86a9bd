package sessions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// RmOptions are what `yolop sessions rm` reads.
type RmOptions struct {
	IO      *cmdutil.IOStreams
	Flags   *cmdutil.GlobalFlags
	DataDir func() (string, error)

	Ctx       context.Context
	SessionID string
	Force     bool
}

// NewCmdRm makes `yolop sessions rm`; runF, when set, runs instead of
// rmRun.
func NewCmdRm(f *cmdutil.Factory, runF func(*RmOptions) error) *cobra.Command {
	opts := &RmOptions{IO: f.IO, Flags: f.Flags, DataDir: f.DataDir}
	cmd := &cobra.Command{
		Use: "rm ID",
		Example: `  yolop sessions rm s_01jf…
  yolop sessions rm s_01jf… --force   # also when its worktree has uncommitted changes`,
		Short:             "Remove a session, its worktree and its checkpoint refs (the branch is kept)",
		Args:              cmdutil.SessionArg,
		ValidArgsFunction: f.CompleteSessionIDs,
		RunE: func(c *cobra.Command, args []string) error {
			opts.Ctx, opts.SessionID = c.Context(), args[0]
			if runF != nil {
				return runF(opts)
			}
			return rmRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "remove the worktree even with uncommitted changes")
	return cmd
}

func rmRun(opts *RmOptions) error {
	dataDir, err := opts.DataDir()
	if err != nil {
		return err
	}
	id := opts.SessionID
	rep, err := catalog.RemoveSession(opts.Ctx, dataDir, id, opts.Force)
	var de *worktree.DirtyError
	if errors.As(err, &de) {
		return &dirtyRemoval{de}
	}
	if opts.Flags.JSON() {
		if err != nil {
			if len(rep.ApplyRefs) > 0 {
				err = fmt.Errorf("%w (kept the refs of your checkout's files taken before this session's applies: %s)", err, strings.Join(rep.ApplyRefs, ", "))
			}
			return err
		}
		return cmdutil.WriteJSON(opts.IO.Out, removedJSON{SessionID: id, Worktree: rep.Worktree, Branch: rep.Branch, ParkedAs: rep.ParkedAs, RefsDeleted: cmdutil.NonNil(rep.Refs), ApplyRefsKept: cmdutil.NonNil(rep.ApplyRefs), Damaged: rep.Damaged})
	}
	// What was removed is said even when the removal stopped half way.
	writeRemoved(opts.IO.Out, rep)
	if err != nil {
		return err
	}
	if rep.Damaged != "" {
		fmt.Fprintf(opts.IO.Out, "session %s was damaged (%s): its worktree, if it had one, is now unreferenced; `yolop worktree prune` removes it (it keeps one with uncommitted changes unless --force)\n", id, rep.Damaged)
	}
	fmt.Fprintf(opts.IO.Out, "removed session %s\n", id)
	return nil
}

// writeRemoved says what became of a removed session's worktree and which
// refs of the user's own files were kept.
func writeRemoved(w io.Writer, rep catalog.RemoveReport) {
	if rep.ParkedAs != "" {
		fmt.Fprintf(w, "parked worktree %s as the spare %s for the next session (its files discarded, branch %s kept) and removed %d checkpoint refs\n", rep.Worktree, rep.ParkedAs, rep.Branch, len(rep.Refs))
	} else if rep.Worktree != "" && rep.RepoGone != "" {
		fmt.Fprintf(w, "removed worktree %s (its repository %s is gone, and its branch %s and checkpoint refs with it)\n", rep.Worktree, rep.RepoGone, rep.Branch)
	} else if rep.Worktree != "" {
		fmt.Fprintf(w, "removed worktree %s (branch %s kept) and %d checkpoint refs\n", rep.Worktree, rep.Branch, len(rep.Refs))
	}
	if len(rep.ApplyRefs) > 0 {
		fmt.Fprintf(w, "kept %s of your checkout's files taken before this session's applies (they are yours, not the session's):\n", cmdutil.Plural(len(rep.ApplyRefs), "ref", "refs"))
		for _, r := range rep.ApplyRefs {
			fmt.Fprintf(w, "  %s\n", r)
		}
		fmt.Fprintf(w, "in the checkout, `git diff REF` shows how a file differs from then and `git restore --source=REF -- PATH` brings that one file back (your other files stay as they are); `git update-ref -d REF` drops a ref\n")
	}
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
