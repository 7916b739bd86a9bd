package worktree

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// ListOptions are what `yolop worktree list` reads.
type ListOptions struct {
	IO      *cmdutil.IOStreams
	Flags   *cmdutil.GlobalFlags
	DataDir func() (string, error)

	Ctx context.Context
}

// NewCmdList makes `yolop worktree list`; runF, when set, runs instead of
// listRun.
func NewCmdList(f *cmdutil.Factory, runF func(*ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Flags: f.Flags, DataDir: f.DataDir}
	return &cobra.Command{
		Use:     "list",
		Example: `  yolop worktree list`,
		Short:   "List session worktrees and spare worktrees under the data directory",
		Args:    cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts.Ctx = c.Context()
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
	rows, err := catalog.ListWorktrees(opts.Ctx, dataDir)
	if err != nil {
		return err
	}
	failures, err := catalog.PrepareFailures(dataDir)
	if err != nil {
		return err
	}
	if opts.Flags.JSON() {
		out := make([]worktreeJSON, 0, len(rows))
		for _, e := range rows {
			out = append(out, worktreeOf(e.Entry, e.InUse))
		}
		fails := make([]map[string]string, 0, len(failures))
		for _, f := range failures {
			fails = append(fails, map[string]string{"repository": f.Repo, "at": f.At.UTC().Format(time.RFC3339), "error": fmt.Sprint(f.Err)})
		}
		return cmdutil.WriteJSON(opts.IO.Out, map[string]any{"worktrees": out, "spare_failures": fails})
	}
	if err := writeList(opts.IO.Out, rows); err != nil {
		return err
	}
	for _, f := range failures {
		fmt.Fprintf(opts.IO.Out, "spare preparation for %s failed at %s: %s\n", f.Repo, f.At.Local().Format("2006-01-02 15:04:05"), f.Err)
	}
	return nil
}

// writeList prints the worktrees as a table. Problems are long sentences:
// each goes on a line of its own below the table, numbered from the STATE
// column.
func writeList(w io.Writer, rows []catalog.WorktreeRow) error {
	if len(rows) == 0 {
		fmt.Fprintln(w, "No session worktrees.")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tBRANCH\tSTATE\tPATH")
	var notes []string
	for _, e := range rows {
		sid, state := e.SessionID, ""
		if e.Kind() == "session" {
			state = entryState(e)
		} else {
			sid, state = "-", spareState(e)
		}
		if e.Problem != "" {
			notes = append(notes, e.Problem)
			state += fmt.Sprintf(" [%d]", len(notes))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", sid, e.Branch, state, e.Path)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
	}
	for i, n := range notes {
		fmt.Fprintf(w, "[%d] %s\n", i+1, n)
	}
	return nil
}

// spareState describes a worktree that belongs to no session.
func spareState(e catalog.WorktreeRow) string {
	var parts []string
	switch {
	case e.Spare:
		parts = append(parts, "spare")
	case e.Stale:
		parts = append(parts, "stale spare (not used again; prune --spares removes it)")
	case e.Partial && e.Live:
		parts = append(parts, "spare being prepared")
	case e.Partial:
		parts = append(parts, "half-made spare (the next start removes it)")
	}
	if e.Missing {
		parts = append(parts, "missing")
	}
	if e.Dirty {
		parts = append(parts, "dirty")
	}
	return strings.Join(parts, ", ")
}

// entryState describes a session's worktree.
func entryState(e catalog.WorktreeRow) string {
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
	return strings.Join(parts, ", ")
}

// worktreeJSON is a worktree in `worktree list` and `worktree prune`
// JSON. State is the STATE column of the text listing.
type worktreeJSON struct {
	Kind       string `json:"kind"` // session, spare, stale spare, partial
	SessionID  string `json:"session_id,omitempty"`
	Branch     string `json:"branch"`
	Path       string `json:"path"`
	Repository string `json:"repository"` // its git directory, "" when the link cannot be read
	// RepoRoot is the repository's top directory, as sessions name it
	// ("" when the link cannot be read or the repository is bare).
	RepoRoot   string   `json:"repo_root"`
	State      string   `json:"state"`
	InUse      bool     `json:"in_use"`
	Dirty      bool     `json:"dirty"`
	DirtyPaths []string `json:"dirty_paths"`
	Missing    bool     `json:"missing"`
	Problem    string   `json:"problem"` // "" when there is none
	ParkedAs   string   `json:"parked_as,omitempty"`
}

func worktreeOf(e worktree.Entry, inUse bool) worktreeJSON {
	w := worktreeJSON{Kind: e.Kind(), Branch: e.Branch, Path: e.Path, Repository: e.CommonDir, RepoRoot: repoRootOf(e.CommonDir), InUse: inUse, Dirty: e.Dirty, DirtyPaths: cmdutil.NonNil(e.DirtyPaths), Missing: e.Missing, Problem: e.Problem}
	row := catalog.WorktreeRow{Entry: e, InUse: inUse}
	if w.Kind == "session" {
		w.SessionID, w.State = e.SessionID, entryState(row)
	} else {
		w.State = spareState(row)
	}
	return w
}

// repoRootOf is the top directory of the repository whose git directory
// is commonDir: the directory holding it when it is a `.git`, "" for a
// bare repository or an unreadable link.
func repoRootOf(commonDir string) string {
	if commonDir == "" || filepath.Base(commonDir) != ".git" {
		return ""
	}
	return filepath.Dir(commonDir)
}
