package sessions

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/land"
	"github.com/yolop-dev/yolop/internal/provider"
)

// ShowOptions are what `yolop sessions show` reads.
type ShowOptions struct {
	IO       *cmdutil.IOStreams
	Flags    *cmdutil.GlobalFlags
	DataDir  func() (string, error)
	Provider func() (provider.Config, error)
	// OpenLand opens the session to diff its files, as `yolop diff` does.
	OpenLand func(context.Context, app.Env, app.Request) (land.Lander, error)

	Ctx       context.Context
	SessionID string
}

// NewCmdShow makes `yolop sessions show`; runF, when set, runs instead of
// showRun.
func NewCmdShow(f *cmdutil.Factory, runF func(*ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{IO: f.IO, Flags: f.Flags, DataDir: f.DataDir, Provider: f.Provider, OpenLand: f.OpenLand}
	return &cobra.Command{
		Use:               "show ID",
		Example:           `  yolop sessions show s_01jf…`,
		Short:             "Show one session: its worktree, branch and active turns",
		Args:              cmdutil.SessionArg,
		ValidArgsFunction: f.CompleteSessionIDs,
		RunE: func(c *cobra.Command, args []string) error {
			opts.Ctx, opts.SessionID = c.Context(), args[0]
			if runF != nil {
				return runF(opts)
			}
			return showRun(opts)
		},
	}
}

func showRun(opts *ShowOptions) error {
	dataDir, err := opts.DataDir()
	if err != nil {
		return err
	}
	d, err := catalog.DescribeSession(dataDir, opts.SessionID)
	if err != nil {
		return err
	}
	work := catalog.DescribeWork(opts.Ctx, dataDir, d.SessionID, opts.workOpener(dataDir))
	if opts.Flags.JSON() {
		return cmdutil.WriteJSON(opts.IO.Out, struct {
			catalog.SessionRow
			*catalog.Work
		}{d, work})
	}
	if work != nil {
		cmdutil.TellRepairs(opts.IO.ErrOut, work.Notes)
	}
	fmt.Fprint(opts.IO.Out, showText(d, work))
	return nil
}

// workOpener opens session id to diff its files, as `yolop diff` does.
func (opts *ShowOptions) workOpener(dataDir string) func(context.Context, string) (catalog.WorkSession, error) {
	// Showing runs no turn: a provider that cannot be configured (no key,
	// a bad setting) must not hide the session's files, so its error is
	// left to the commands that talk to the model.
	pcfg, _ := opts.Provider()
	return func(ctx context.Context, id string) (catalog.WorkSession, error) {
		s, err := opts.OpenLand(ctx, app.Env{DataDir: dataDir, Provider: pcfg}, app.Resume{ID: id})
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

// showText is `sessions show` in text: the session, where it works, and
// how to go on with it.
func showText(d catalog.SessionRow, work *catalog.Work) string {
	var b strings.Builder
	if d.State.Kind == catalog.StateProblem {
		// Its description cannot be read: nothing else it says would be
		// true, and it cannot be resumed.
		fmt.Fprintf(&b, "session     %s\nstate       %s\ndirectory   %s\nremove      yolop sessions rm %s  (its worktree, if it had one, is then left to yolop worktree prune, which keeps uncommitted work)\n", d.SessionID, d.State, d.Dir, d.SessionID)
		return b.String()
	}
	used := "never"
	if d.LastUsed != nil {
		used = d.LastUsed.Local().Format(time.RFC1123)
	}
	fmt.Fprintf(&b, "session     %s\ntitle       %s\ncreated     %s\nlast used   %s\nturns       %d (active branch)\nstate       %s\n", d.SessionID, d.Title, d.Created.Local().Format(time.RFC1123), used, d.Turns, d.State)
	b.WriteString(workspaceLines(d, work))
	switch {
	case d.WorktreeState == catalog.WorktreeRepoMissing:
		fmt.Fprintf(&b, "resume      only from the repository's new place, if it moved: cd NEW-PLACE && yolop --session %s\n", d.SessionID)
	case d.ReadOnly():
		fmt.Fprintf(&b, "fork        yolop sessions fork %s  (read-only: replay works, turns and restores do not; a fork continues from the valid part)\n", d.SessionID)
	default:
		fmt.Fprintf(&b, "resume      yolop --session %s\n", d.SessionID)
	}
	return b.String()
}

// workspaceLines say where the session works: its worktree and branch,
// the checkout or folder it works in in place, or that it has only the
// conversation.
func workspaceLines(d catalog.SessionRow, work *catalog.Work) string {
	var b strings.Builder
	switch {
	case d.Branch != "":
		branch := d.Branch
		if d.BranchNote != "" {
			branch += " (" + d.BranchNote + ")"
		}
		fmt.Fprintf(&b, "worktree    %s\nbranch      %s\nrepository  %s\n", d.Worktree, branch, d.RepoRoot)
		if d.Recycled {
			b.WriteString("recycled    yes: a parked spare worktree moved to the starting commit (its ignored dependency and build directories were kept)\n")
		} else {
			b.WriteString("recycled    no: a fresh checkout\n")
		}
		b.WriteString(workLines(d, work))
	case d.WorkspaceMode == config.WorkspaceInPlace && d.Folder:
		fmt.Fprintf(&b, "folder      %s\nworkspace   in place, in a folder outside git: snapshots in a private repository in the data directory (the folder gets no .git); restores undo the agent's changes, never yours\n", d.RepoRoot)
		if d.WorktreeState == catalog.WorktreeCheckoutMissing {
			fmt.Fprintf(&b, "state       the folder %s is gone; listing and replay work\n", d.RepoRoot)
		}
	case d.WorkspaceMode == config.WorkspaceInPlace:
		fmt.Fprintf(&b, "checkout    %s\nworkspace   in place: snapshots of your checkout; restores undo the agent's changes, never yours\n", d.RepoRoot)
		if d.WorktreeState == catalog.WorktreeCheckoutMissing {
			fmt.Fprintf(&b, "state       the checkout %s is gone; listing and replay work\n", d.RepoRoot)
		}
	default:
		fmt.Fprintf(&b, "directory   %s\nworkspace   conversation only: %s\n", d.ActiveRoot, d.Reason)
	}
	return b.String()
}

// workLines are the lines of `sessions show` that say where the work is.
func workLines(d catalog.SessionRow, w *catalog.Work) string {
	if w == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "base        %s (the commit its work started from)\n", w.Base)
	switch {
	case w.Changes == nil:
		fmt.Fprintf(&b, "changes     unknown: %s\n", w.ChangesErr)
	case w.Changes.Files == 0:
		b.WriteString("changes     none against base\n")
	default:
		fmt.Fprintf(&b, "changes     %s, +%d −%d against base\n", cmdutil.Plural(w.Changes.Files, "file", "files"), w.Changes.Insertions, w.Changes.Deletions)
	}
	if la := w.LastApply; la != nil {
		fmt.Fprintf(&b, "last apply  %s: %s to %s, %s\n", la.State, cmdutil.Plural(la.Paths, "path", "paths"), la.Target, la.Time.Local().Format(time.RFC1123))
	} else {
		b.WriteString("last apply  never\n")
	}
	if d.WorktreeState == catalog.WorktreeRepoMissing {
		b.WriteString("ways home   none while its repository is missing: copy what you need out of its worktree\n")
		return b.String()
	}
	fmt.Fprintf(&b, "ways home   yolop diff %s · yolop apply %s · yolop commit %s (then: git merge %s)\n", d.SessionID, d.SessionID, d.SessionID, d.Branch)
	return b.String()
}
