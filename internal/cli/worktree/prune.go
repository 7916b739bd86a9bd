package worktree

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

// PruneOptions are what `yolop worktree prune` reads.
type PruneOptions struct {
	IO      *cmdutil.IOStreams
	Flags   *cmdutil.GlobalFlags
	DataDir func() (string, error)

	Ctx    context.Context
	DryRun bool
	Force  bool
	Spares bool
}

// errNotFreed is a prune that could not free every worktree it meant to;
// each failure is told on its own.
var errNotFreed = errors.New("worktree prune: some worktrees were not freed")

// NewCmdPrune makes `yolop worktree prune`; runF, when set, runs instead
// of pruneRun.
func NewCmdPrune(f *cmdutil.Factory, runF func(*PruneOptions) error) *cobra.Command {
	opts := &PruneOptions{IO: f.IO, Flags: f.Flags, DataDir: f.DataDir}
	cmd := &cobra.Command{
		Use: "prune",
		Example: `  yolop worktree prune --dry-run    # what would go, and what would be parked as a spare
  yolop worktree prune              # free worktrees no session uses (branches are kept)
  yolop worktree prune --spares     # also remove the spare worktrees`,
		Short: "Free worktrees no session references (parked as spares up to [worktree] spares, else removed) and their checkpoint refs; branches are kept",
		Args:  cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts.Ctx = c.Context()
			if runF != nil {
				return runF(opts)
			}
			return pruneRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "report what would be removed and change nothing")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "also free worktrees with uncommitted changes")
	cmd.Flags().BoolVar(&opts.Spares, "spares", false, "also remove spare worktrees, and remove freed worktrees instead of parking them")
	return cmd
}

func pruneRun(opts *PruneOptions) error {
	dataDir, err := opts.DataDir()
	if err != nil {
		return err
	}
	rep, err := catalog.PruneWorktrees(opts.Ctx, dataDir, opts.DryRun, opts.Force, opts.Spares)
	if err != nil {
		return err
	}
	if opts.Flags.JSON() {
		if err := cmdutil.WriteJSON(opts.IO.Out, pruneOf(rep, opts.DryRun)); err != nil {
			return err
		}
	} else {
		writePrune(opts.IO, rep, opts.DryRun)
	}
	if len(rep.Errors) > 0 {
		return cmdutil.Shown(errNotFreed) // the JSON object lists them, or stderr told them
	}
	return nil
}

// writePrune says what was freed (or with dryRun would be): parked as a
// spare, removed, or kept for its uncommitted changes; and on stderr what
// could not be.
func writePrune(io *cmdutil.IOStreams, rep worktree.PruneReport, dryRun bool) {
	w := io.Out
	verb, parkVerb := "removed", "parked"
	list, parkedList := rep.Removed, rep.Parked
	if dryRun {
		verb, parkVerb, list, parkedList = "would remove", "would park", rep.WouldRemove, rep.WouldPark
	}
	for i, e := range parkedList {
		as := ""
		if i < len(rep.ParkedAs) {
			as = " as " + rep.ParkedAs[i]
		}
		fmt.Fprintf(w, "%s worktree %s%s: a spare for the next session, its files discarded (session %s, branch %s kept)\n", parkVerb, e.Path, as, e.SessionID, e.Branch)
		for _, r := range rep.RefsDeleted[e.SessionID] {
			fmt.Fprintf(w, "  %s ref %s\n", verb, r)
		}
	}
	for _, e := range list {
		if e.Kind() != "session" {
			fmt.Fprintf(w, "%s %s worktree %s\n", verb, e.Kind(), e.Path)
			continue
		}
		fmt.Fprintf(w, "%s worktree %s (session %s, branch %s kept)\n", verb, e.Path, e.SessionID, e.Branch)
		for _, r := range rep.RefsDeleted[e.SessionID] {
			fmt.Fprintf(w, "  %s ref %s\n", verb, r)
		}
	}
	writeKept(w, rep.KeptDirty)
	for _, s := range rep.Errors {
		fmt.Fprintln(io.ErrOut, "yolop:", s)
	}
	if len(list) == 0 && len(parkedList) == 0 && len(rep.KeptDirty) == 0 {
		fmt.Fprintln(w, "Nothing to prune.")
	}
}

// writeKept names the worktrees kept for their uncommitted changes (or
// because their state cannot be checked).
func writeKept(w io.Writer, kept []worktree.Entry) {
	for _, e := range kept {
		if e.Missing && len(e.DirtyPaths) == 0 {
			fmt.Fprintf(w, "kept %s: its state cannot be checked (%s); use --force to remove it anyway\n", e.Path, e.Problem)
			continue
		}
		const show = 5
		list, more := e.DirtyPaths, ""
		if len(list) > show {
			list, more = list[:show], fmt.Sprintf(" and %d more", len(list)-show)
		}
		fmt.Fprintf(w, "kept %s: uncommitted changes (%s%s); use --force to remove it anyway\n", e.Path, strings.Join(list, ", "), more)
	}
}

// pruneJSON is `worktree prune --output-format json`: with --dry-run the
// would_* lists are filled, else removed and parked.
type pruneJSON struct {
	DryRun      bool                `json:"dry_run"`
	Removed     []worktreeJSON      `json:"removed"`
	Parked      []worktreeJSON      `json:"parked"`
	WouldRemove []worktreeJSON      `json:"would_remove"`
	WouldPark   []worktreeJSON      `json:"would_park"`
	KeptDirty   []worktreeJSON      `json:"kept_dirty"`
	RefsDeleted map[string][]string `json:"refs_deleted"` // by session id; with --dry-run those that would be
	Errors      []string            `json:"errors"`
}

func pruneOf(rep worktree.PruneReport, dry bool) pruneJSON {
	list := func(es []worktree.Entry) []worktreeJSON {
		out := make([]worktreeJSON, 0, len(es))
		for _, e := range es {
			out = append(out, worktreeOf(e, false))
		}
		return out
	}
	p := pruneJSON{DryRun: dry, Removed: list(rep.Removed), Parked: list(rep.Parked), WouldRemove: list(rep.WouldRemove), WouldPark: list(rep.WouldPark), KeptDirty: list(rep.KeptDirty), RefsDeleted: rep.RefsDeleted, Errors: cmdutil.NonNil(rep.Errors)}
	for i := range p.Parked {
		if i < len(rep.ParkedAs) {
			p.Parked[i].ParkedAs = rep.ParkedAs[i]
		}
	}
	if p.RefsDeleted == nil {
		p.RefsDeleted = map[string][]string{}
	}
	return p
}
