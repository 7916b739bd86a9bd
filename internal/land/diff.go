package land

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/yolop-dev/yolop/internal/blocklist"
	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/snapshot"
)

// DiffFormat selects the text form of a diff.
type DiffFormat string

// Diff formats: git's unified diff with binary patches, --stat, --name-status.
const (
	FormatPatch      DiffFormat = "patch"
	FormatStat       DiffFormat = "stat"
	FormatNameStatus DiffFormat = "name-status"
)

// DiffOptions configure Diff.
type DiffOptions struct {
	From   string     // "" = the session's base commit; else a checkpoint id (cp3)
	Format DiffFormat // "" = FormatPatch
	Color  bool       // color the text (a terminal)
}

// DiffResult is a session's work as a diff.
type DiffResult struct {
	SessionID string       `json:"session_id"`
	Base      string       `json:"base"`
	From      string       `json:"from"` // "base" or the checkpoint id
	Paths     []PathChange `json:"paths"`
	Stat      Stat         `json:"stat"`
	// Notes are what the host must tell along with the diff (repairs made
	// when the session was opened).
	Notes []string `json:"notes,omitempty"`
	// Text is git's output in the requested format (not part of the JSON).
	Text string `json:"-"`
}

var cpRE = regexp.MustCompile(`^cp[1-9][0-9]*$`)

// Diff captures the session's current files (no checkpoint is created) and
// compares them with its base commit or with a checkpoint's snapshot.
func Diff(ctx context.Context, s Session, o DiffOptions) (*DiffResult, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp("", "yolop-diff-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	wt, err := s.worktreeGit(scratch)
	if err != nil {
		return nil, err
	}
	r := wt.With("GIT_INDEX_FILE=" + filepath.Join(scratch, "no-index"))
	base, err := treeOf(ctx, r, s.Base)
	if err != nil {
		return nil, fmt.Errorf("the session's base commit %s: %w", git.ShortOID(s.Base), err)
	}
	from, label := base, "base"
	if o.From != "" && o.From != "base" {
		if n, err := strconv.Atoi(o.From); err == nil && n > 0 {
			o.From = "cp" + o.From
		}
		if !cpRE.MatchString(o.From) {
			return nil, fmt.Errorf("%w: %q is not a checkpoint id; use cpN as listed by /rewind", ErrBadCheckpoint, o.From)
		}
		t, err := s.Engine.ResolveRef(ctx, o.From)
		if errors.Is(err, snapshot.ErrNoRef) {
			return nil, fmt.Errorf("%w: %s has no workspace snapshot in this session (/rewind lists the checkpoints)", ErrBadCheckpoint, o.From)
		}
		if err != nil {
			return nil, err
		}
		from, label = t, o.From
	}
	cur, err := s.Engine.Capture(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("capture the session's files: %w", err)
	}
	to := cur.Tree
	if !s.InPlace {
		// A session worktree's base is a commit, stored converted: its
		// captures are compared after the same conversion. In place the
		// base is a capture itself (raw bytes).
		if to, err = normalize(ctx, s.Engine, wt, scratch, base, cur.Tree); err != nil {
			return nil, err
		}
	}
	if label != "base" && !s.InPlace {
		if from, err = normalize(ctx, s.Engine, wt, scratch, base, from); err != nil {
			return nil, err
		}
	}
	res := &DiffResult{SessionID: s.ID, Base: s.Base, From: label, Paths: []PathChange{}}
	ch, err := s.Engine.Diff(ctx, from, to)
	if err != nil {
		return nil, err
	}
	// Submodules are not checked out in a session worktree: the gitlink's
	// absence from a capture is no deletion, and files written into the
	// empty directory are no change to the submodule. Every form of the
	// diff leaves them out, with a note when the session wrote there.
	fromBase := ch
	if label != "base" {
		if fromBase, err = s.Engine.Diff(ctx, base, to); err != nil {
			return nil, err
		}
	}
	subs := gitlinks(fromBase)
	var inSubs []string
	for _, c := range fromBase {
		if c.NewOID != "" && atOrUnder(c.Path, subs) {
			inSubs = append(inSubs, c.Path)
		}
	}
	if n := submoduleNote(subs, inSubs); n != "" {
		res.Notes = append(res.Notes, n)
	}
	specs := notBlocked()
	for _, d := range subs {
		specs = append(specs, ":(exclude,literal)"+d)
	}
	// Renames count once, as in the text forms and as apply follows
	// them.
	// Snapshots leave write-blocklisted directories out; a file git
	// tracks there is not deleted by the session (`yolop diff | git apply`
	// would delete it), so every form of the diff leaves them out too.
	renames, err := renamesBetween(ctx, r, from, to, specs)
	if err != nil {
		return nil, err
	}
	gone := map[string]bool{}
	for dst, src := range renames {
		gone[dst], gone[src] = true, true
		res.Paths = append(res.Paths, PathChange{Path: dst, Change: ChangeRenamed, From: src})
	}
	for _, c := range ch {
		if !gone[c.Path] && !blocked(c.Path) && !atOrUnder(c.Path, subs) {
			res.Paths = append(res.Paths, PathChange{Path: c.Path, Change: string(c.Kind)})
		}
	}
	sort.Slice(res.Paths, func(i, j int) bool { return res.Paths[i].Path < res.Paths[j].Path })
	res.Stat, err = numstat(ctx, r, from, to, specs)
	if err != nil {
		return nil, err
	}
	res.Stat.Files = len(res.Paths)
	// -M whatever diff.renames says, so the text counts what JSON does.
	args := []string{"diff", "--no-ext-diff", "--no-textconv", "-M"}
	if o.Color {
		args = append(args, "--color=always")
	} else {
		args = append(args, "--color=never")
	}
	switch o.Format {
	case "", FormatPatch:
		args = append(args, "--binary", "--full-index")
	case FormatStat:
		args = append(args, "--stat")
	case FormatNameStatus:
		args = append(args, "--name-status")
	default:
		return nil, fmt.Errorf("land: unknown diff format %q", o.Format)
	}
	out, err := r.Run(ctx, append(append(args, from, to, "--"), specs...)...)
	if err != nil {
		return nil, fmt.Errorf("diff: %w", err)
	}
	res.Text = string(out)
	return res, nil
}

// renamesBetween returns the renames from tree a to tree b (new path to
// old path), found as git diff finds them by default.
func renamesBetween(ctx context.Context, r *git.Runner, a, b string, specs []string) (map[string]string, error) {
	out, err := r.Run(ctx, append([]string{"diff-tree", "-r", "-z", "-M", "--name-status", "--no-commit-id", a, b, "--"}, specs...)...)
	if err != nil {
		return nil, fmt.Errorf("find renames: %w", err)
	}
	m := map[string]string{}
	f := git.SplitZ(out)
	for i := 0; i < len(f); {
		status := f[i]
		if status == "" {
			break
		}
		if status[0] != 'R' && status[0] != 'C' {
			i += 2
			continue
		}
		if i+2 >= len(f) {
			return nil, fmt.Errorf("find renames: unexpected diff-tree output %q", out)
		}
		if status[0] == 'R' {
			m[f[i+2]] = f[i+1]
		}
		i += 3
	}
	return m, nil
}

// numstat counts inserted and deleted lines between two trees, following
// renames.
func numstat(ctx context.Context, r *git.Runner, a, b string, specs []string) (Stat, error) {
	out, err := r.Run(ctx, append([]string{"diff", "--numstat", "-z", "-M", "--no-ext-diff", "--no-textconv", a, b, "--"}, specs...)...)
	if err != nil {
		return Stat{}, fmt.Errorf("diff: %w", err)
	}
	var st Stat
	f := git.SplitZ(out)
	for i := 0; i < len(f); i++ {
		// "<added>\t<deleted>\t<path>", or for a rename
		// "<added>\t<deleted>\t" followed by the old and the new path;
		// binary files show "-".
		p := strings.SplitN(f[i], "\t", 3)
		if len(p) < 3 {
			continue
		}
		if p[2] == "" {
			i += 2
		}
		if n, err := strconv.Atoi(p[0]); err == nil {
			st.Insertions += n
		}
		if n, err := strconv.Atoi(p[1]); err == nil {
			st.Deletions += n
		}
	}
	return st, nil
}

// notBlocked are pathspecs that leave out write-blocklisted directories
// (and .git) at any depth, as snapshots do.
func notBlocked() []string {
	out := make([]string, 0, len(blocklist.Dirs))
	for _, d := range blocklist.Dirs {
		out = append(out, ":(exclude,glob)**/"+d+"/**")
	}
	return out
}
