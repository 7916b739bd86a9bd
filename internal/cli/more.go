package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/host/acp"
	"github.com/yolop-dev/yolop/internal/host/tui"
	"github.com/yolop-dev/yolop/internal/land"
	"github.com/yolop-dev/yolop/internal/mcp"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// errNotFreed is a prune that could not free every worktree it meant to;
// each failure is told on its own.
var errNotFreed = errors.New("worktree prune: some worktrees were not freed")

func newWorktreeCmd(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "worktree", Short: "Session worktrees and spares: list and prune", Args: cmdutil.NoArgs,
		Example: "  yolop worktree list\n  yolop worktree prune --dry-run",
		RunE: func(c *cobra.Command, _ []string) error {
			return c.Help()
		}}
	list := &cobra.Command{
		Use:     "list",
		Example: `  yolop worktree list`,
		Short:   "List session worktrees and spare worktrees under the data directory",
		Args:    cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			dataDir, err := o.resolveDataDir()
			if err != nil {
				return err
			}
			rows, err := catalog.ListWorktrees(c.Context(), dataDir)
			if err != nil {
				return err
			}
			failures, err := catalog.PrepareFailures(dataDir)
			if err != nil {
				return err
			}
			if o.f.Flags.OutputFormat == "json" {
				out := make([]worktreeJSON, 0, len(rows))
				for _, e := range rows {
					out = append(out, worktreeOf(e.Entry, e.InUse))
				}
				fails := make([]map[string]string, 0, len(failures))
				for _, f := range failures {
					fails = append(fails, map[string]string{"repository": f.Repo, "at": f.At.UTC().Format(time.RFC3339), "error": fmt.Sprint(f.Err)})
				}
				return writeJSON(o, map[string]any{"worktrees": out, "spare_failures": fails})
			}
			if len(rows) == 0 {
				fmt.Fprintln(o.f.IO.Out, "No session worktrees.")
			} else {
				tw := tabwriter.NewWriter(o.f.IO.Out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SESSION\tBRANCH\tSTATE\tPATH")
				// Problems are long sentences: each goes on a line of its
				// own below the table, numbered from the STATE column.
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
					fmt.Fprintln(o.f.IO.Out)
				}
				for i, n := range notes {
					fmt.Fprintf(o.f.IO.Out, "[%d] %s\n", i+1, n)
				}
			}
			for _, f := range failures {
				fmt.Fprintf(o.f.IO.Out, "spare preparation for %s failed at %s: %s\n", f.Repo, f.At.Local().Format("2006-01-02 15:04:05"), f.Err)
			}
			return nil
		},
	}
	var dry, force, withSpares bool
	prune := &cobra.Command{
		Use: "prune",
		Example: `  yolop worktree prune --dry-run    # what would go, and what would be parked as a spare
  yolop worktree prune              # free worktrees no session uses (branches are kept)
  yolop worktree prune --spares     # also remove the spare worktrees`,
		Short: "Free worktrees no session references (parked as spares up to [worktree] spares, else removed) and their checkpoint refs; branches are kept",
		Args:  cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			dataDir, err := o.resolveDataDir()
			if err != nil {
				return err
			}
			rep, err := catalog.PruneWorktrees(c.Context(), dataDir, dry, force, withSpares)
			if err != nil {
				return err
			}
			if o.f.Flags.OutputFormat == "json" {
				if err := writeJSON(o, pruneOf(rep, dry)); err != nil {
					return err
				}
				if len(rep.Errors) > 0 {
					return cmdutil.Shown(errNotFreed) // the object lists them
				}
				return nil
			}
			verb, parkVerb := "removed", "parked"
			list, parkedList := rep.Removed, rep.Parked
			if dry {
				verb, parkVerb, list, parkedList = "would remove", "would park", rep.WouldRemove, rep.WouldPark
			}
			for i, e := range parkedList {
				as := ""
				if i < len(rep.ParkedAs) {
					as = " as " + rep.ParkedAs[i]
				}
				fmt.Fprintf(o.f.IO.Out, "%s worktree %s%s: a spare for the next session, its files discarded (session %s, branch %s kept)\n", parkVerb, e.Path, as, e.SessionID, e.Branch)
				for _, r := range rep.RefsDeleted[e.SessionID] {
					fmt.Fprintf(o.f.IO.Out, "  %s ref %s\n", verb, r)
				}
			}
			for _, e := range list {
				if e.Kind() != "session" {
					fmt.Fprintf(o.f.IO.Out, "%s %s worktree %s\n", verb, e.Kind(), e.Path)
					continue
				}
				fmt.Fprintf(o.f.IO.Out, "%s worktree %s (session %s, branch %s kept)\n", verb, e.Path, e.SessionID, e.Branch)
				for _, r := range rep.RefsDeleted[e.SessionID] {
					fmt.Fprintf(o.f.IO.Out, "  %s ref %s\n", verb, r)
				}
			}
			for _, e := range rep.KeptDirty {
				if e.Missing && len(e.DirtyPaths) == 0 {
					fmt.Fprintf(o.f.IO.Out, "kept %s: its state cannot be checked (%s); use --force to remove it anyway\n", e.Path, e.Problem)
					continue
				}
				const show = 5
				list, more := e.DirtyPaths, ""
				if len(list) > show {
					list, more = list[:show], fmt.Sprintf(" and %d more", len(list)-show)
				}
				fmt.Fprintf(o.f.IO.Out, "kept %s: uncommitted changes (%s%s); use --force to remove it anyway\n", e.Path, strings.Join(list, ", "), more)
			}
			for _, s := range rep.Errors {
				fmt.Fprintln(o.f.IO.ErrOut, "yolop:", s)
			}
			if len(list) == 0 && len(parkedList) == 0 && len(rep.KeptDirty) == 0 {
				fmt.Fprintln(o.f.IO.Out, "Nothing to prune.")
			}
			if len(rep.Errors) > 0 {
				return cmdutil.Shown(errNotFreed) // told on stderr
			}
			return nil
		},
	}
	prune.Flags().BoolVar(&dry, "dry-run", false, "report what would be removed and change nothing")
	prune.Flags().BoolVar(&force, "force", false, "also free worktrees with uncommitted changes")
	prune.Flags().BoolVar(&withSpares, "spares", false, "also remove spare worktrees, and remove freed worktrees instead of parking them")
	cmd.AddCommand(list, prune, newPrepareSpareCmd(o))
	return cmd
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

// acpOpener opens app sessions for the ACP host.
type acpOpener struct {
	base app.Options
	open func(context.Context, app.Options) (*app.Session, error)
}

func (a acpOpener) New(ctx context.Context, cwd string, servers []mcp.Server) (acp.Session, error) {
	o := a.base
	// The worktree is claimed (or checked out) detached as soon as the
	// session opens; the session, its branch named from the first prompt,
	// is made at that prompt. A session opened and never used leaves
	// nothing behind but its worktree, given back as a spare.
	o.Dir, o.Early = cwd, true
	o.MCP = append(append([]mcp.Server(nil), o.MCP...), servers...)
	o.ClientMCP = len(servers) > 0
	s, err := a.open(ctx, o)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (a acpOpener) Load(ctx context.Context, id, cwd string, servers []mcp.Server) (acp.Session, error) {
	o := a.base
	o.SessionID = id
	o.MCP = append(append([]mcp.Server(nil), o.MCP...), servers...)
	o.ClientMCP = len(servers) > 0
	if cwd != "" {
		o.Dir = cwd
	}
	s, err := a.open(ctx, o)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func runACP(ctx context.Context, o *rootOptions, opts app.Options) error {
	err := acp.Serve(ctx, o.f.IO.In, o.f.IO.Out, acpOpener{base: opts, open: o.f.Open}, o.f.IO.ErrOut)
	if err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

func runTUI(ctx context.Context, o *rootOptions, opts app.Options) error {
	_, noColor := os.LookupEnv("NO_COLOR")
	topts := tui.Options{In: o.f.IO.In, Out: o.f.IO.Out, NoColor: noColor}
	pick := o.resume
	// The worktree is made while the user types the first prompt.
	opts.Early = true
	back := "" // the session /resume was typed in
	left := "" // the session /resume closed, named if the picker quits
	// note says in the picker why the session chosen last did not open.
	note := ""
	for {
		if pick {
			topts.Back, topts.Note = back, note
			id, err := tui.Pick(ctx, pickSource(opts.DataDir, opts.Dir), topts)
			if err != nil {
				return err
			}
			if id == "" && back == "" {
				if left != "" {
					fmt.Fprintf(o.f.IO.ErrOut, "Continue session %s with: yolop --session %s\n", left, left)
				}
				return nil // Esc from yolop -r: nothing opened, nothing to say
			}
			if id == "" {
				id = back // Esc from /resume: back where the user was
			}
			opts.SessionID, opts.Continue, note = id, false, ""
		}
		s, err := o.f.Open(ctx, opts)
		if err != nil {
			if pick && ctx.Err() == nil {
				// Locked by another process, damaged, gone: say so in the
				// picker and let the user choose again. When it is the
				// session to go back to, Esc then quits instead.
				note = fmt.Sprintf("%s did not open: %v", opts.SessionID, err)
				if opts.SessionID == back {
					back = ""
				}
				continue
			}
			return err
		}
		err = tui.Run(ctx, s, topts)
		existed := s.Exists()
		id, info := s.ID(), s.Info()
		// The session is closed (its lock released, its tasks stopped)
		// before the picker shows or the process ends.
		s.Close()
		if errors.Is(err, tui.ErrResume) {
			// /resume: the picker again, then the chosen session.
			pick = true
			if existed {
				back, left = id, id
			} else {
				back = ""
			}
			continue
		}
		if existed {
			fmt.Fprintf(o.f.IO.ErrOut, "Continue this session with: yolop --session %s\n", id)
			if info.Branch != "" {
				fmt.Fprintf(o.f.IO.ErrOut, "Its files are in %s (branch %s). Bring them home: %s\n", info.ActiveRoot, info.Branch, land.WaysHome(id))
			}
		}
		return err
	}
}

// pickSource feeds the resume picker: every session that can be opened,
// the one used last first; a query keeps those whose title, id or
// repository holds it, and those whose history does (session search over
// every session, with the first hit as the reason).
func pickSource(dataDir, dir string) tui.PickSource {
	return func(ctx context.Context, query string) ([]tui.PickRow, error) {
		rows, err := catalog.ListSessions(dataDir)
		if err != nil {
			return nil, err
		}
		q := strings.ToLower(strings.TrimSpace(query))
		match := map[string]string{}
		if q != "" {
			res, _, err := catalog.SearchSessions(ctx, catalog.SearchOptions{DataDir: dataDir, Dir: dir, Query: strings.TrimSpace(query), All: true, Limit: 2000})
			if err != nil {
				var bq *catalog.BadQueryError
				if !errors.As(err, &bq) {
					return nil, err
				}
			} else {
				for _, h := range res.Hits {
					if _, ok := match[h.SessionID]; !ok {
						match[h.SessionID] = fmt.Sprintf("%s %s (%s): %s", h.Checkpoint, h.Kind, h.Branch, command.DisplayText(h.Snippet))
					}
				}
			}
		}
		now := time.Now()
		var out []tui.PickRow
		for _, r := range rows {
			if r.State.Kind == catalog.StateProblem {
				continue
			}
			repo := r.RepoRoot
			if repo == "" {
				repo = r.ActiveRoot
			}
			why, hit := match[r.SessionID]
			if q != "" && !hit && !strings.Contains(strings.ToLower(r.Title+" "+r.SessionID+" "+repo), q) {
				continue
			}
			out = append(out, tui.PickRow{ID: r.SessionID, Title: r.Title, Repo: repo, LastUsed: cmdutil.Ago(r.LastUsed, now), Turns: r.Turns, Match: why})
		}
		return out, nil
	}
}
