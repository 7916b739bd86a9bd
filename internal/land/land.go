package land

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/yolop-dev/yolop/internal/blocklist"
	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/snapshot"
)

// Sentinel errors.
var (
	ErrNoWorkspace     = fault.New(fault.NoWorkspace, "land: the session has no worktree of its own")
	ErrConflict        = fault.New(fault.Conflict, "land: conflicts")
	ErrLocked          = fault.New(fault.Locked, "land: another apply to this checkout is running")
	ErrCheckoutBusy    = fault.New(fault.CheckoutBusy, "land: the checkout is in the middle of a git operation")
	ErrOtherRepo       = fault.New(fault.OtherRepo, "land: not a checkout of the session's repository")
	ErrNothingToUndo   = fault.New(fault.NothingToUndo, "land: nothing to undo")
	ErrEditedSince     = fault.New(fault.EditedSince, "land: paths changed since the apply")
	ErrInTheWay        = fault.New(fault.InTheWay, "land: files in the way")
	ErrNoIdentity      = fault.New(fault.NoIdentity, "land: no git identity configured")
	ErrNothingToCommit = fault.New(fault.NothingToCommit, "land: nothing to commit")
	ErrGitTooOld       = fault.Plain("land: git is too old to merge without touching the index")
	ErrBadCheckpoint   = fault.New(fault.UnknownCheckpoint, "land: no such checkpoint")
	// ErrSessionWorktree refuses to apply into another session's worktree.
	ErrSessionWorktree = fault.New(fault.SessionWorktree, "land: that is another session's worktree")
	// ErrBranchMoved refuses a commit when the agent left the session's
	// worktree on no branch or on a branch of the user's.
	ErrBranchMoved = fault.New(fault.BranchMoved, "land: the session's worktree left its branch")
)

// Session is what the operations need to know about one session.
type Session struct {
	ID       string
	Title    string
	Worktree string           // the session's worktree (top level)
	Branch   string           // yolop/<slug>-<id>
	Base     string           // the commit the work started from (a fork keeps its source's)
	Checkout string           // the checkout the session was started from
	Engine   *snapshot.Engine // the session's snapshot engine
	DataDir  string
	Prompts  []string // the active turns' prompts, oldest first
	// WorktreeOwner returns the session whose worktree dir (a top level,
	// symlinks resolved) is, "" when none; nil knows none. Apply refuses
	// to write into another session's files behind its checkpoints.
	WorktreeOwner func(dir string) string `json:"-"`
	// InPlace: the session works in the user's checkout (Worktree is that
	// checkout, Base the tree of its first checkpoint, Paths what its
	// turns changed); see inplace.go.
	InPlace bool
	// Folder: in place in a folder outside git (its repository is
	// yolop's own, in the data directory): nothing to commit to.
	Folder bool
	Paths  []string
	// Confine runs one git command of a commit the way the session's
	// commands run: under the spawn helper, in the session's sandbox, with
	// their environment plus env (see Confine). Nil runs it in this
	// process (a session without tools).
	Confine Confine `json:"-"`
	// ConfineDir is a directory the confined commands may write ("" =
	// the system's temporary directory): an in-place commit's scratch
	// git directory goes there.
	ConfineDir string `json:"-"`
}

// Confine runs git with args in dir, confined like the agent's commands,
// and returns its stdout; a failure is a *git.Error. The hooks a commit
// runs are files the agent could have written (a core.hooksPath such as
// husky's .husky lies in the worktree), so they run with no more rights
// than the agent's own commands.
type Confine func(ctx context.Context, dir string, env []string, args ...string) ([]byte, error)

func (s *Session) check() error {
	if s.Engine == nil || s.Worktree == "" || s.Base == "" {
		return fmt.Errorf("%w: this session keeps a conversation only, so there are no files to diff, apply or commit", ErrNoWorkspace)
	}
	return nil
}

// PathChange is one path of a diff.
type PathChange struct {
	Path   string `json:"path"`
	Change string `json:"change"`         // added, modified, deleted, type_changed, mode_changed or renamed
	From   string `json:"from,omitempty"` // a renamed path's old name
}

// ChangeRenamed is the Change of a path renamed (and maybe edited too),
// found the way git diff and apply find renames.
const ChangeRenamed = "renamed"

// Stat counts a diff.
type Stat struct {
	Files      int `json:"files"`
	Insertions int `json:"insertions"`
	Deletions  int `json:"deletions"`
}

// stateDir returns the per-checkout state directory.
func stateDir(dataDir, checkout string) string {
	sum := sha256.Sum256([]byte(checkout))
	return filepath.Join(dataDir, "apply", hex.EncodeToString(sum[:8]))
}

// ApplyRefPrefix is the namespace of the checkout captures taken before
// each apply: refs/yolop/apply/<session>/<n>.
const ApplyRefPrefix = "refs/yolop/apply/"

// entry is one tree entry (mode and object id), or a missing path (zero).
type entry struct{ mode, oid string }

func (e entry) missing() bool { return e.oid == "" }

// oldSide and newSide pick one side of a change.
func oldSide(c snapshot.Change) entry { return entry{c.OldMode, c.OldOID} }
func newSide(c snapshot.Change) entry { return entry{c.NewMode, c.NewOID} }

// diffMap runs diff-tree a b and indexes the changes by path.
func diffMap(ctx context.Context, eng *snapshot.Engine, a, b string) (map[string]snapshot.Change, error) {
	ch, err := eng.Diff(ctx, a, b)
	if err != nil {
		return nil, err
	}
	m := make(map[string]snapshot.Change, len(ch))
	for _, c := range ch {
		m[c.Path] = c
	}
	return m, nil
}

// runner returns a git runner in dir that never reads or writes the real
// index (index-free plumbing: diff-tree, commit-tree, merge-tree, cat-file).
func runner(dir, scratch string) *git.Runner {
	return git.New(dir).With("GIT_INDEX_FILE=" + filepath.Join(scratch, "no-index"))
}

// worktreeGit returns the runner for git processes on the session's
// worktree that may run content filters (hash-object --path, attribute
// lookups): pinned to the repository's common dir and the worktree as the
// session recorded them (never the worktree's .git link), with a private
// GIT_DIR under scratch in place of the worktree's administrative
// directory. git then reads the user's configuration only (the
// repository's config, the global and system files) and never the
// worktree's config.worktree, where the agent's commands could define
// filter drivers: a filter named in the session's .gitattributes runs only
// when the user's own configuration defines it, as `git add` in the
// user's checkout would. The worktree's index is read through
// GIT_INDEX_FILE, never written. An engine opened without recorded dirs
// (tests) falls back to plain discovery in the worktree.
func (s *Session) worktreeGit(scratch string) (*git.Runner, error) {
	var d git.Dirs
	if s.Engine != nil {
		d = s.Engine.Dirs()
	}
	if !d.Set() {
		return git.New(s.Worktree), nil
	}
	if err := s.Engine.Guard(); err != nil {
		return nil, err
	}
	priv := filepath.Join(scratch, "gitdir")
	if err := os.MkdirAll(priv, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(priv, "HEAD"), []byte(s.Base+"\n"), 0o600); err != nil {
		return nil, err
	}
	return git.New(d.WorkTree).With("GIT_DIR="+priv, "GIT_COMMON_DIR="+d.CommonDir, "GIT_WORK_TREE="+d.WorkTree, "GIT_INDEX_FILE="+filepath.Join(d.GitDir, "index")), nil
}

// edit is one change of editTree: set path to (mode, oid), or remove it.
type edit struct {
	path string
	e    entry
}

// editTree returns base with the edits applied, built in a private
// temporary index under scratch (the real index is never touched).
func editTree(ctx context.Context, at *git.Runner, scratch, base string, edits []edit) (string, error) {
	if len(edits) == 0 {
		return base, nil
	}
	f, err := os.CreateTemp(scratch, "edit-index-")
	if err != nil {
		return "", err
	}
	idx := f.Name()
	f.Close()
	os.Remove(idx) // read-tree writes a fresh one
	defer os.Remove(idx)
	defer os.Remove(idx + ".lock")
	r := at.With("GIT_INDEX_FILE=" + idx)
	if _, err := r.Run(ctx, "read-tree", base); err != nil {
		return "", fmt.Errorf("edit tree %s: %w", base, err)
	}
	var del, add strings.Builder
	zero := strings.Repeat("0", len(base))
	sorted := append([]edit(nil), edits...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].path < sorted[j].path })
	for _, e := range sorted {
		if e.e.missing() {
			fmt.Fprintf(&del, "0 %s\t%s\x00", zero, e.path)
		} else {
			fmt.Fprintf(&add, "%s %s\t%s\x00", e.e.mode, e.e.oid, e.path)
		}
	}
	// Removals first, so a file may replace a directory and back.
	in := del.String() + add.String()
	if _, err := r.RunInput(ctx, []byte(in), "update-index", "-z", "--index-info"); err != nil {
		return "", fmt.Errorf("edit tree %s: %w", base, err)
	}
	out, err := r.Run(ctx, "write-tree")
	if err != nil {
		return "", fmt.Errorf("edit tree %s: %w", base, err)
	}
	return git.Trim(out), nil
}

// converts reports whether git may convert content between the disk and
// the object store in at's work tree (core.autocrlf, attributes files, or
// a .gitattributes among the given paths or tracked there).
func converts(ctx context.Context, at *git.Runner, paths []string) (bool, error) {
	dir := at.Dir
	for _, p := range paths {
		if p == ".gitattributes" || strings.HasSuffix(p, "/.gitattributes") {
			return true, nil
		}
	}
	r := at
	v, err := git.ConfigValues(ctx, r, "core.autocrlf", "core.attributesfile")
	if err != nil {
		return false, fmt.Errorf("read the conversion settings of %s: %w", dir, err)
	}
	info := ""
	if out, err := r.Run(ctx, "rev-parse", "--git-path", "info/attributes"); err == nil {
		info = git.Trim(out)
		if !filepath.IsAbs(info) {
			info = filepath.Join(dir, info)
		}
	}
	if git.ConvertsOutsideTree(v["core.autocrlf"], v["core.attributesfile"], info) {
		return true, nil
	}
	out, err := r.Run(ctx, "ls-files", "-z", "--", ":(top,glob)**/.gitattributes")
	if err != nil {
		return false, fmt.Errorf("look for .gitattributes in %s: %w", dir, err)
	}
	return len(out) > 0, nil
}

// normalize returns raw with every regular file that differs from ref
// re-hashed through git's clean filters (as `git add` would store it), run
// by at so that its work tree's attributes apply. Without conversion it
// returns raw.
func normalize(ctx context.Context, eng *snapshot.Engine, at *git.Runner, scratch, ref, raw string) (string, error) {
	ch, err := eng.Diff(ctx, ref, raw)
	if err != nil {
		return "", err
	}
	paths := make([]string, len(ch))
	for i, c := range ch {
		paths[i] = c.Path
	}
	conv, err := converts(ctx, at, paths)
	if err != nil || !conv {
		return raw, err
	}
	r := at.With("GIT_INDEX_FILE=" + filepath.Join(scratch, "no-index"))
	var edits []edit
	for _, c := range ch {
		if c.NewOID == "" || c.NewMode == "120000" {
			continue
		}
		blob, err := r.Run(ctx, "cat-file", "blob", c.NewOID)
		if err != nil {
			return "", fmt.Errorf("read %s: %w", c.Path, err)
		}
		out, err := r.RunInput(ctx, blob, "hash-object", "-w", "--stdin", "--path="+c.Path)
		if err != nil {
			return "", fmt.Errorf("normalize %s: %w", c.Path, err)
		}
		if oid := git.Trim(out); oid != c.NewOID {
			edits = append(edits, edit{c.Path, entry{c.NewMode, oid}})
		}
	}
	return editTree(ctx, at, scratch, raw, edits)
}

// smudge returns the object holding the bytes git would write to dir's
// disk for blob oid at path (after smudge/eol filters), or oid itself when
// nothing converts.
func smudge(ctx context.Context, dir, scratch, path, oid string) (string, error) {
	r := runner(dir, scratch)
	b, err := r.Run(ctx, "cat-file", "--filters", "--path="+path, oid)
	if err != nil {
		return "", fmt.Errorf("convert %s for the checkout: %w", path, err)
	}
	out, err := r.RunInput(ctx, b, "hash-object", "-w", "--no-filters", "--stdin")
	if err != nil {
		return "", fmt.Errorf("store %s: %w", path, err)
	}
	return git.Trim(out), nil
}

// changesSinceHead captures the session's files (what names them in an
// error) and lists how they differ from the tree of r's HEAD.
func (s *Session) changesSinceHead(ctx context.Context, r *git.Runner, what string) ([]snapshot.Change, error) {
	cur, err := s.Engine.Capture(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("capture %s: %w", what, err)
	}
	head, err := treeOf(ctx, r, "HEAD")
	if err != nil {
		return nil, err
	}
	return s.Engine.Diff(ctx, head, cur.Tree)
}

// treeOf returns the tree of a commit (or tree) id.
func treeOf(ctx context.Context, r *git.Runner, rev string) (string, error) {
	out, err := r.Run(ctx, "rev-parse", "--verify", "--quiet", rev+"^{tree}")
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", rev, err)
	}
	return git.Trim(out), nil
}

// blocked reports whether a path lies in a write-blocklisted directory or
// a .git directory at any depth.
func blocked(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if strings.EqualFold(c, ".git") || blocklist.Contains(c) {
			return true
		}
	}
	return false
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// gitlinks returns the submodules (gitlinks) of the commit tree a diff
// starts from. Snapshots never hold submodules, so each one shows in a
// diff from a commit's tree to a capture as removed (or replaced).
func gitlinks(ch []snapshot.Change) []string {
	var out []string
	for _, c := range ch {
		if c.OldMode == "160000" {
			out = append(out, c.Path)
		}
	}
	return out
}

// atOrUnder reports whether p is one of dirs or lies beneath one.
func atOrUnder(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// submoduleNote tells what a session wrote inside submodules, which its
// worktree does not check out, and that it is left out.
func submoduleNote(subs, paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	what, it := "is a submodule", "it"
	if len(subs) > 1 {
		what, it = "are submodules", "them"
	}
	verb := "is"
	if len(paths) > 1 {
		verb = "are"
	}
	return fmt.Sprintf("%s %s, which session worktrees do not check out (an empty directory there); the session's %s inside %s %s left out: %s",
		strings.Join(displayPaths(subs), ", "), what, plural(len(paths), "file", "files"), it, verb, strings.Join(displayPaths(capList(paths, 5)), ", "))
}

// capList keeps the first n entries and counts the rest.
func capList(list []string, n int) []string {
	if len(list) <= n {
		return list
	}
	return append(append([]string(nil), list[:n]...), fmt.Sprintf("… and %d more", len(list)-n))
}

// withoutSubmodules takes the submodules out of a merge's three sides:
// their gitlinks out of base, and the files a capture holds at or beneath
// them out of each capture. A session worktree has its submodules
// uninitialised, so a gitlink's absence there is no deletion, and files
// written into the empty directory belong to no repository the checkout
// would take them into. It returns the edited trees, the submodules and
// the paths dropped from the first capture (the session's).
func withoutSubmodules(ctx context.Context, eng *snapshot.Engine, at *git.Runner, scratch, base string, captures ...string) (string, []string, []string, []string, error) {
	ch, err := eng.Diff(ctx, base, captures[0])
	if err != nil {
		return "", nil, nil, nil, err
	}
	subs := gitlinks(ch)
	if len(subs) == 0 {
		return base, captures, nil, nil, nil
	}
	var baseEdits []edit
	for _, s := range subs {
		baseEdits = append(baseEdits, edit{s, entry{}})
	}
	newBase, err := editTree(ctx, at, scratch, base, baseEdits)
	if err != nil {
		return "", nil, nil, nil, err
	}
	out := make([]string, len(captures))
	var dropped []string
	for i, tree := range captures {
		if i > 0 {
			if ch, err = eng.Diff(ctx, base, tree); err != nil {
				return "", nil, nil, nil, err
			}
		}
		var edits []edit
		for _, c := range ch {
			if c.NewOID != "" && atOrUnder(c.Path, subs) {
				edits = append(edits, edit{c.Path, entry{}})
				if i == 0 {
					dropped = append(dropped, c.Path)
				}
			}
		}
		if out[i], err = editTree(ctx, at, scratch, tree, edits); err != nil {
			return "", nil, nil, nil, err
		}
	}
	return newBase, out, subs, dropped, nil
}

// Lander is what `yolop diff|apply|commit` use of a session: the session
// itself, or one another process holds, read through its worktree.
type Lander interface {
	ID() string
	Diff(ctx context.Context, o DiffOptions) (*DiffResult, error)
	Apply(ctx context.Context, o ApplyOptions) (*ApplyResult, error)
	UndoApply(ctx context.Context, o UndoOptions) (*UndoResult, error)
	Commit(ctx context.Context, o CommitOptions) (*CommitResult, error)
	// Repairs are what opening the session repaired (an interrupted
	// apply rolled back, an interrupted turn closed): the command must
	// tell them, whatever it does next.
	Repairs() []string
	Close() error
}
