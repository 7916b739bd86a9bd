package land

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/yolop-dev/yolop/internal/failpoint"
	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/fsutil"
	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/snapshot"
)

// Failpoints are the crash points of apply and undo, in the order they are
// reached (the snapshot engine's restore.* points fire inside the write).
var Failpoints = []string{"apply.after_capture", "apply.after_ref", "apply.after_intent", "apply.before_done", "undo.after_intent", "undo.before_done"}

// Outcomes of one path in an apply.
const (
	OutcomeClean    = "clean"           // only the session changed it: its version is written
	OutcomeMerged   = "merged"          // both sides changed it; git merged them
	OutcomeConflict = "conflict"        // both sides changed the same lines (or it cannot be merged)
	OutcomeApplied  = "already applied" // the checkout already has the session's version
	// OutcomeInTheWay: the session creates the path, but the checkout has
	// an ignored or write-blocklisted file there that apply never
	// overwrites; the whole apply is refused until it is moved away.
	OutcomeInTheWay = "in the way"
)

// Conflict modes.
const (
	OnConflictRefuse  = "refuse"
	OnConflictMarkers = "markers"
)

// ApplyOptions configure Apply.
type ApplyOptions struct {
	To         string // another checkout of the same repository ("" = the session's)
	DryRun     bool   // compute and list, write nothing
	OnConflict string // refuse (default) or markers
	// Token, when set, must equal the Token of a preview (a dry run) of
	// the same apply: the write is refused when either side's files or the
	// mode changed since.
	Token string
	// Hints is the grammar of the follow-up commands the texts name.
	Hints Grammar
}

// Grammar is how the texts of apply and undo name the follow-up commands:
// the host's own grammar, so a hint is never one the host rejects.
type Grammar int

// Grammars: the command line's flags (the default), or the session's
// slash commands (TUI, print, ACP).
const (
	GrammarCLI   Grammar = iota // yolop apply --on-conflict markers, yolop apply --undo ID
	GrammarSlash                // /apply markers, /apply undo
)

// markers names the apply that writes conflict markers.
func (g Grammar) markers(id string) string {
	if g == GrammarSlash {
		return "`/apply markers`"
	}
	return "`yolop apply " + id + " --on-conflict markers`"
}

// undo names the undo of the last apply.
func (g Grammar) undo(id string) string {
	if g == GrammarSlash {
		return "`/apply undo`"
	}
	return "`yolop apply --undo " + id + "`"
}

// PathOutcome is one path of an apply.
type PathOutcome struct {
	Path    string `json:"path"`
	Outcome string `json:"outcome"`
}

// ApplyResult describes an apply (or its dry run).
type ApplyResult struct {
	SessionID string        `json:"session_id"`
	Target    string        `json:"target"`
	Paths     []PathOutcome `json:"paths"`
	UndoRef   string        `json:"undo_ref"`
	Conflicts int           `json:"conflicts"`
	DryRun    bool          `json:"dry_run"`
	Written   int           `json:"written"`         // paths written in the checkout
	Notes     []string      `json:"notes,omitempty"` // repairs and kept-version notes
	// Repairs are the notes that report an interrupted apply or undo
	// settled before this one (Text leaves them to the host, which tells
	// them as repairs).
	Repairs []string `json:"-"`
	// Token confirms exactly this apply (the same files on both sides and
	// the same conflict mode); a preview shows it.
	Token string `json:"token,omitempty"`
	// MarkersToken replaces Token in a preview that conflicts in the
	// refuse mode (that apply would be refused): it confirms the same
	// apply with conflict markers written.
	MarkersToken string `json:"markers_token,omitempty"`
	// Markers are the conflicting paths that get conflict markers (the
	// others keep one side, as the notes say).
	Markers []string `json:"markers,omitempty"`
	// InTheWay are the paths the session creates where the checkout has
	// an ignored or write-blocklisted file: the apply is refused.
	InTheWay []string `json:"in_the_way,omitempty"`
	// Beneath are those of InTheWay that lie beneath a symlink of the
	// checkout (the notes say how to apply them).
	Beneath []string `json:"-"`

	// Mode is the conflict mode and Hints the grammar of the hints in
	// Text, as the options gave them.
	Mode  string  `json:"-"`
	Hints Grammar `json:"-"`
}

// ErrStalePreview refuses a confirmation whose preview no longer holds.
var ErrStalePreview = fault.New(fault.StalePreview, "land: the token does not match this apply")

// ConflictError lists the conflicting paths of an apply.
type ConflictError struct {
	Paths     []string
	Markers   []string // the paths that hold conflict markers (written or, in a refused apply, that would be)
	Written   bool     // the apply wrote (markers mode)
	Unchanged bool     // markers mode, but every conflict keeps the checkout's version and nothing else changes
	SessionID string   // for the hints
	Hints     Grammar  // the grammar of the hints
}

func (e *ConflictError) Error() string {
	if e.Written {
		var parts []string
		if len(e.Markers) > 0 {
			parts = append(parts, fmt.Sprintf("%s with conflict markers written: %s", plural(len(e.Markers), "path", "paths"), strings.Join(displayPaths(e.Markers), ", ")))
		}
		if other := without(e.Paths, e.Markers); len(other) > 0 {
			parts = append(parts, fmt.Sprintf("%s conflicting without markers (the notes say which version is kept): %s", plural(len(other), "path", "paths"), strings.Join(displayPaths(other), ", ")))
		}
		return fmt.Sprintf("%s; resolve them, or undo with %s", strings.Join(parts, "; "), e.Hints.undo(e.SessionID))
	}
	if e.Unchanged {
		return fmt.Sprintf("%s conflict: %s; each keeps your version (the notes say why) and nothing else changes, so nothing was written", plural(len(e.Paths), "path", "paths"), strings.Join(displayPaths(e.Paths), ", "))
	}
	if len(e.Markers) == 0 {
		return fmt.Sprintf("%s conflict: %s; nothing was written (with %s each keeps one side, as the notes say; undoable with %s)", plural(len(e.Paths), "path", "paths"), strings.Join(displayPaths(e.Paths), ", "), e.Hints.markers(e.SessionID), e.Hints.undo(e.SessionID))
	}
	return fmt.Sprintf("%s conflict: %s; nothing was written (%s writes conflict markers, undoable with %s)", plural(len(e.Paths), "path", "paths"), strings.Join(displayPaths(e.Paths), ", "), e.Hints.markers(e.SessionID), e.Hints.undo(e.SessionID))
}

// conflictNote says what the merge keeps of a conflicting path that gets
// no conflict markers ("" when there is nothing to add). checkout is the
// apply's target, worktree the session's.
func conflictNote(c conflict, writes bool, checkout, worktree string) string {
	p := git.DisplayPath(c.path)
	if df := c.dirFile; df != nil {
		return df.note(c.path, checkout, worktree)
	}
	base, yours, session := !c.stages[1].missing(), !c.stages[2].missing(), !c.stages[3].missing()
	switch {
	case base && yours && !session:
		return fmt.Sprintf("%s: you changed it, the session deleted it; your version is kept", p)
	case base && !yours && session:
		return fmt.Sprintf("%s: you deleted it, the session changed it; the session's version is kept (delete it again after applying to keep your deletion)", p)
	case !writes:
		n := fmt.Sprintf("%s cannot be merged line by line: your version is kept", p)
		if st, err := os.Lstat(filepath.Join(worktree, c.path)); err == nil && !st.IsDir() {
			n += "; the session's is " + filepath.Join(worktree, c.path)
		}
		return n
	default:
		return fmt.Sprintf("%s: both sides changed it in ways git cannot merge line by line; the merged version is written without conflict markers: check it", p)
	}
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

// checkout is an opened apply target.
type checkout struct {
	dir     string // top level, symlinks resolved
	j       *journal
	eng     *snapshot.Engine
	scratch string
}

func (c *checkout) close() {
	if c.eng != nil {
		c.eng.Wait()
	}
	c.j.close()
	os.RemoveAll(c.scratch)
}

// openCheckout resolves dir, checks that it is a checkout of the same
// repository as worktree and not mid-operation, takes its lock, opens its
// engine and settles an interrupted apply or undo (notes say what was done).
func openCheckout(ctx context.Context, dataDir, sessionID, dir, worktree string) (*checkout, []string, error) {
	if _, err := git.CheckVersion(ctx); err != nil {
		return nil, nil, err
	}
	top, common, err := toplevel(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	if worktree != "" {
		_, wcommon, err := toplevel(ctx, worktree)
		if err != nil {
			return nil, nil, fmt.Errorf("the session's worktree: %w", err)
		}
		if wcommon != common {
			return nil, nil, fmt.Errorf("%w: %s belongs to %s, the session to %s", ErrOtherRepo, top, common, wcommon)
		}
	}
	if err := checkIdle(ctx, top); err != nil {
		return nil, nil, err
	}
	j, err := openJournal(dataDir, top)
	if err != nil {
		return nil, nil, err
	}
	c := &checkout{dir: top, j: j}
	c.scratch, err = os.MkdirTemp(j.dir, "scratch-")
	if err != nil {
		j.close()
		return nil, nil, err
	}
	c.eng, err = snapshot.Open(ctx, snapshot.Options{Worktree: top, SessionID: sessionID, StateDir: filepath.Join(j.dir, "snapshot"), Failpoint: failpoint.Hit})
	if err != nil {
		c.close()
		return nil, nil, fmt.Errorf("read the checkout %s: %w", top, err)
	}
	notes, err := c.settlePending(ctx)
	if err != nil {
		c.close()
		return nil, nil, err
	}
	return c, notes, nil
}

// refuseOtherWorktree refuses a target that is another session's worktree
// (checked before the target's state is opened: nothing is touched).
func (s *Session) refuseOtherWorktree(ctx context.Context, target string) error {
	top, _, err := toplevel(ctx, target)
	if err != nil {
		return nil // openCheckout says what is wrong with it
	}
	if s.WorktreeOwner != nil {
		if other := s.WorktreeOwner(top); other != "" && other != s.ID {
			return &SessionWorktreeError{Dir: top, Owner: other}
		}
	}
	if s.DataDir != "" && !fsutil.SameDir(top, s.Worktree) {
		data := s.DataDir
		if d, err := filepath.EvalSymlinks(data); err == nil {
			data = d
		}
		if rel, err := filepath.Rel(data, top); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return &SessionWorktreeError{Dir: top}
		}
	}
	return nil
}

// SessionWorktreeError refuses an apply into another session's worktree.
type SessionWorktreeError struct{ Dir, Owner string }

func (e *SessionWorktreeError) Error() string {
	if e.Owner == "" {
		return fmt.Sprintf("%s is inside yolop's data directory (a worktree yolop keeps for a session or as a spare), not a checkout of yours; apply into your own checkout instead (nothing was written)", e.Dir)
	}
	return fmt.Sprintf("%s is the worktree of session %s, not a checkout of yours: writing there would change that session's files behind its checkpoints. Apply into your own checkout instead, or continue from its work with `yolop sessions fork %s` (nothing was written)", e.Dir, e.Owner, e.Owner)
}

func (e *SessionWorktreeError) Unwrap() error { return ErrSessionWorktree }

// toplevel returns dir's work tree top level and its repository's common
// git dir, both with symlinks resolved.
func toplevel(ctx context.Context, dir string) (string, string, error) {
	out, err := git.New(dir).Run(ctx, "rev-parse", "--show-toplevel", "--git-common-dir")
	if err != nil {
		return "", "", fmt.Errorf("%s is not a git checkout: %w", dir, err)
	}
	f := strings.Split(git.Trim(out), "\n")
	if len(f) != 2 || f[0] == "" {
		return "", "", fmt.Errorf("%s is not a git checkout (a bare repository has no files to apply to)", dir)
	}
	top, err := filepath.EvalSymlinks(f[0])
	if err != nil {
		return "", "", err
	}
	common := f[1]
	if !filepath.IsAbs(common) {
		common = filepath.Join(dir, common)
	}
	if c, err := filepath.EvalSymlinks(common); err == nil {
		common = c
	}
	return top, common, nil
}

// checkIdle refuses a checkout in the middle of a merge, rebase,
// cherry-pick, revert or bisect, or whose index is locked.
func checkIdle(ctx context.Context, top string) error { return CheckIdle(ctx, top, true) }

// CheckIdle refuses (ErrCheckoutBusy) a checkout in the middle of a merge,
// rebase, cherry-pick, revert or bisect, and with indexLock one whose index
// is locked.
func CheckIdle(ctx context.Context, top string, indexLock bool) error {
	names := append([]string(nil), busyNames...)
	if indexLock {
		names = append(names, "index.lock")
	}
	args := []string{"rev-parse"}
	for _, n := range names {
		args = append(args, "--git-path", n)
	}
	out, err := git.New(top).Run(ctx, args...)
	if err != nil {
		return fmt.Errorf("inspect %s: %w", top, err)
	}
	return checkIdlePaths(top, names, strings.Split(git.Trim(out), "\n"))
}

// busyNames are the files of a git operation in progress: each is kept in
// the git directory of the worktree it runs in (git's per-worktree files,
// never the common directory's).
var busyNames = []string{"MERGE_HEAD", "rebase-merge", "rebase-apply", "CHERRY_PICK_HEAD", "REVERT_HEAD", "BISECT_LOG"}

// CheckIdleIn is CheckIdle without the index lock, for a checkout whose
// git directory (the worktree's own, `git rev-parse --absolute-git-dir`)
// is already known: no git process is started.
func CheckIdleIn(top, gitDir string) error {
	paths := make([]string, len(busyNames))
	for i, n := range busyNames {
		paths[i] = filepath.Join(gitDir, n)
	}
	return checkIdlePaths(top, busyNames, paths)
}

func checkIdlePaths(top string, names, paths []string) error {
	what := map[string]string{"MERGE_HEAD": "a merge", "rebase-merge": "a rebase", "rebase-apply": "a rebase or am", "CHERRY_PICK_HEAD": "a cherry-pick", "REVERT_HEAD": "a revert", "BISECT_LOG": "a bisect"}
	for i, p := range paths {
		if i >= len(names) {
			break
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(top, p)
		}
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if names[i] == "index.lock" {
			return fmt.Errorf("%w: %s exists (another git command is running, or one crashed: remove the file if none runs)", ErrCheckoutBusy, p)
		}
		return fmt.Errorf("%w: %s is in the middle of %s; finish or abort it first", ErrCheckoutBusy, top, what[names[i]])
	}
	return nil
}

// Apply merges the session's net changes (base → current files) into the
// checkout as uncommitted changes. With conflicts and the refuse mode it
// returns the result (outcomes) together with a *ConflictError and writes
// nothing; with markers it writes and also returns the *ConflictError.
func Apply(ctx context.Context, s Session, o ApplyOptions) (*ApplyResult, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if s.InPlace {
		return nil, applyInPlace(s)
	}
	switch o.OnConflict {
	case "":
		o.OnConflict = OnConflictRefuse
	case OnConflictRefuse, OnConflictMarkers:
	default:
		return nil, fmt.Errorf("land: --on-conflict must be refuse or markers, not %q", o.OnConflict)
	}
	v, err := git.CheckVersion(ctx)
	if err != nil {
		return nil, err
	}
	if !v.AtLeast(git.Version{Major: 2, Minor: 38}) {
		return nil, fmt.Errorf("%w: apply needs git 2.38 or newer (merge-tree --write-tree), this is %s", ErrGitTooOld, v)
	}
	target := o.To
	if target == "" {
		target = s.Checkout
	}
	if target == "" {
		return nil, errors.New("land: the session does not name the checkout it was started from; use --to DIR")
	}
	if err := s.refuseOtherWorktree(ctx, target); err != nil {
		return nil, err
	}
	c, notes, err := openCheckout(ctx, s.DataDir, s.ID, target, s.Worktree)
	if err != nil {
		return nil, err
	}
	defer c.close()
	res := &ApplyResult{SessionID: s.ID, Target: c.dir, Paths: []PathOutcome{}, DryRun: o.DryRun, Notes: notes, Repairs: append([]string(nil), notes...), Mode: o.OnConflict, Hints: o.Hints}
	if fsutil.SameDir(c.dir, s.Worktree) {
		return nil, fmt.Errorf("land: %s is the session's own worktree; apply brings its work to another checkout", c.dir)
	}

	r := runner(c.dir, c.scratch).With("GIT_AUTHOR_NAME=yolop", "GIT_AUTHOR_EMAIL=yolop@localhost", "GIT_COMMITTER_NAME=yolop", "GIT_COMMITTER_EMAIL=yolop@localhost")
	base, err := treeOf(ctx, r, s.Base)
	if err != nil {
		return nil, fmt.Errorf("the session's base commit %s is not in %s: %w", git.ShortOID(s.Base), c.dir, err)
	}

	// The three sides: base, the user's files, the session's files.
	sess, err := s.Engine.Capture(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("capture the session's files: %w", err)
	}
	userRaw, err := c.eng.Capture(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("capture the checkout %s: %w", c.dir, err)
	}
	failpoint.Hit("apply.after_capture")
	token := func(mode string) string {
		sum := sha256.Sum256([]byte(strings.Join([]string{s.ID, c.dir, userRaw.Tree, sess.Tree, mode}, "\x00")))
		return base64.RawURLEncoding.EncodeToString(sum[:6])
	}
	res.Token = token(o.OnConflict)
	if o.Token != "" && o.Token != res.Token {
		return nil, fmt.Errorf("%w: it is mistyped, or your checkout, the session's files or the conflict mode changed since its preview; run /apply again for a new one (nothing was written)", ErrStalePreview)
	}
	if !o.DryRun {
		// A token confirms a previewed apply; this one is no preview.
		res.Token = ""
	}
	wt, err := s.worktreeGit(c.scratch)
	if err != nil {
		return nil, err
	}
	theirs, err := normalize(ctx, s.Engine, wt, c.scratch, base, sess.Tree)
	if err != nil {
		return nil, err
	}
	ours, err := normalize(ctx, c.eng, git.New(c.dir), c.scratch, base, userRaw.Tree)
	if err != nil {
		return nil, err
	}
	// Submodules are not the session's to change: neither the gitlink
	// its worktree lacks nor files written into the empty directory.
	base, sides, subs, dropped, err := withoutSubmodules(ctx, c.eng, git.New(c.dir), c.scratch, base, theirs, ours)
	if err != nil {
		return nil, err
	}
	theirs, ours = sides[0], sides[1]
	if n := submoduleNote(subs, dropped); n != "" {
		notes = append(notes, n)
	}
	bu, err := diffMap(ctx, c.eng, base, ours)
	if err != nil {
		return nil, err
	}
	mergeBase, err := renamedBase(ctx, r, c.dir, c.scratch, base, theirs, bu)
	if err != nil {
		return nil, err
	}
	theirLabel := "session " + s.ID
	if s.Branch != "" {
		theirLabel += " (" + s.Branch + ")"
	}
	merged, conflicts, err := mergeTrees(ctx, r, c.dir, c.scratch, mergeBase, ours, theirs, mergeLabels{base: "base " + git.ShortOID(s.Base), ours: "your checkout", theirs: theirLabel})
	if err != nil {
		return nil, err
	}

	// Outcomes, from four cheap tree comparisons.
	bs, err := diffMap(ctx, c.eng, base, theirs)
	if err != nil {
		return nil, err
	}
	um, err := diffMap(ctx, c.eng, ours, merged)
	if err != nil {
		return nil, err
	}
	sm, err := diffMap(ctx, c.eng, theirs, merged)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for p := range bs {
		set[p] = true
	}
	for p := range um {
		set[p] = true
	}
	isConflict := map[string]conflict{}
	for _, cf := range conflicts {
		set[cf.path] = true
		isConflict[cf.path] = cf
	}
	// A nested repository in the checkout is left alone by the restore:
	// what the session has there gets no outcome, it is not written or
	// counted, and undo does not look at it.
	probe := make([]snapshot.Change, 0, len(set))
	for p := range set {
		probe = append(probe, snapshot.Change{Path: p})
	}
	_, nested := c.eng.LeftAlone(probe)
	if len(nested) > 0 {
		sort.Strings(nested)
		what, it := "is a nested repository", "it"
		if len(nested) > 1 {
			what, it = "are nested repositories", "them"
		}
		notes = append(notes, fmt.Sprintf("left alone: %s %s in %s; the session's changes inside %s are not written", strings.Join(displayPaths(nested), ", "), what, c.dir, it))
	}
	var conflictPaths, markers []string
	inTheWay := c.inTheWay(um)
	through, replaced := c.throughLinks(um)
	for _, l := range sortedKeys(replaced) {
		notes = append(notes, replacedLinkNote(c.dir, l, replaced[l]))
	}
	// The session's files in a directory that conflicts with the
	// checkout's file are not applied; the conflict's note names them.
	var keptOut []string
	for _, cf := range conflicts {
		if cf.dirFile != nil && !cf.dirFile.sessionFile {
			keptOut = append(keptOut, cf.path+"/")
		}
	}
	for _, p := range sortedKeys(set) {
		if _, conflicted := isConflict[p]; !conflicted && atOrUnder(p, nested) {
			continue
		}
		out := OutcomeApplied
		ch, writes := um[p]
		if !writes && underAny(p, keptOut) {
			continue
		}
		_, fromSession := sm[p]
		_, userChanged := bu[p]
		cf, conflicted := isConflict[p]
		switch {
		case through[p].link != "":
			out = OutcomeInTheWay
			res.InTheWay = append(res.InTheWay, p)
			res.Beneath = append(res.Beneath, p)
			notes = append(notes, through[p].note(c.dir, s.Worktree, p))
		case inTheWay[p] != nil:
			out = OutcomeInTheWay
			res.InTheWay = append(res.InTheWay, p)
		case conflicted:
			out = OutcomeConflict
			conflictPaths = append(conflictPaths, p)
			if writes && hasMarkers(ctx, r, newSide(ch)) {
				markers = append(markers, p)
			} else if n := conflictNote(cf, writes, c.dir, s.Worktree); n != "" {
				notes = append(notes, n)
			}
		case !writes:
			out = OutcomeApplied
		case !fromSession && !userChanged:
			out = OutcomeClean
		default:
			out = OutcomeMerged
		}
		res.Paths = append(res.Paths, PathOutcome{Path: p, Outcome: out})
	}
	res.Conflicts = len(conflicts)
	res.Markers = markers
	res.Notes = notes
	var cerr error
	if len(conflicts) > 0 {
		cerr = &ConflictError{Paths: conflictPaths, Markers: markers, Written: o.OnConflict == OnConflictMarkers && !o.DryRun, SessionID: s.ID, Hints: o.Hints}
		if o.DryRun && o.OnConflict == OnConflictRefuse {
			// That apply would be refused: offer the one that writes
			// markers instead.
			res.Token, res.MarkersToken = "", token(OnConflictMarkers)
		}
	}
	if len(res.InTheWay) > 0 {
		// Nothing can be written before they are moved: say so in the
		// preview too, whatever the conflicts.
		res.Token, res.MarkersToken = "", ""
		return res, &InTheWayError{Paths: res.InTheWay, Holding: inTheWay, Through: through, DryRun: o.DryRun}
	}
	if o.DryRun || (cerr != nil && o.OnConflict == OnConflictRefuse) {
		return res, cerr
	}

	// What to write: the checkout's raw capture with each merged path in
	// the bytes git would check out.
	conv, err := converts(ctx, git.New(c.dir), sortedKeys(set))
	if err != nil {
		return nil, err
	}
	var edits []edit
	for _, p := range sortedKeys(um) {
		ch := um[p]
		e := newSide(ch)
		if !e.missing() && conv && e.mode != "120000" {
			if e.oid, err = smudge(ctx, c.dir, c.scratch, p, e.oid); err != nil {
				return nil, err
			}
		}
		edits = append(edits, edit{p, e})
	}
	written, err := editTree(ctx, git.New(c.dir), c.scratch, userRaw.Tree, edits)
	if err != nil {
		return nil, err
	}
	changes, err := c.eng.Diff(ctx, userRaw.Tree, written)
	if err != nil {
		return nil, err
	}
	// Paths inside a nested repository are left alone (see above).
	changes, _ = c.eng.LeftAlone(changes)
	if len(changes) == 0 {
		if ce, ok := cerr.(*ConflictError); ok {
			// Each conflict keeps the checkout's version: nothing to
			// write, nothing to undo.
			ce.Written, ce.Unchanged = false, true
		}
		return res, cerr
	}
	var paths []string
	for _, ch := range changes {
		paths = append(paths, ch.Path)
	}

	// Anchor the capture, journal the intent, write, verify, journal.
	n, err := c.nextN(ctx, s.ID)
	if err != nil {
		return nil, err
	}
	ref := fmt.Sprintf("%s%s/%d", ApplyRefPrefix, s.ID, n)
	if _, err := git.New(c.dir).Run(ctx, "-c", "core.logAllRefUpdates=false", "-c", "core.fsync=reference", "update-ref", "--no-deref", ref, userRaw.Tree); err != nil {
		return nil, fmt.Errorf("anchor the checkout's files at %s: %w", ref, err)
	}
	failpoint.Hit("apply.after_ref")
	start := record{Type: recApplyStarted, SessionID: s.ID, N: n, Target: c.dir, UndoRef: ref, Before: userRaw.Tree, After: written, Paths: paths, Dirs: existingDirs(c.dir, paths), Conflicts: len(conflicts)}
	if err := c.j.append(start); err != nil {
		return nil, err
	}
	failpoint.Hit("apply.after_intent")
	if _, err := c.eng.Restore(ctx, userRaw, written); err != nil {
		// Put back what was written; the ref keeps the capture either way.
		note, serr := c.settle(context.WithoutCancel(ctx), start)
		if serr != nil {
			return nil, fmt.Errorf("apply: %w; rolling back failed too: %v (the checkout's files before the apply are at %s; %s retries)", err, serr, ref, o.Hints.undo(s.ID))
		}
		return nil, rolledBack(err, note)
	}
	failpoint.Hit("apply.before_done")
	if err := c.j.append(record{Type: recApplyDone, SessionID: s.ID, N: n, Target: c.dir, After: written}); err != nil {
		return nil, err
	}
	res.UndoRef = ref
	res.Written = len(changes)
	return res, cerr
}

// inTheWay returns the paths an apply would write (the changes from the
// checkout's capture to the merged files) that hold an ignored or
// write-blocklisted file in the checkout: not in the capture but on disk,
// in a blocklisted directory, or a directory the session replaces with a
// file that holds such files (mapped to a few of them). Apply never
// overwrites or removes those.
func (c *checkout) inTheWay(um map[string]snapshot.Change) map[string][]string {
	out := map[string][]string{}
	for p, ch := range um {
		if blocked(p) {
			out[p] = []string{}
			continue
		}
		if ch.Kind != snapshot.Added || symlinkedParent(c.dir, p) != "" {
			// Under a symlink, what is on disk is not the checkout's:
			// throughLinks decides.
			continue
		}
		st, err := os.Lstat(filepath.Join(c.dir, p))
		switch {
		case err != nil:
		case !st.IsDir():
			out[p] = []string{}
		default:
			if held := uncaptured(c.dir, p, um); len(held) > 0 {
				out[p] = held
			}
		}
	}
	return out
}

// symlinkedParent returns the nearest parent directory of p in root that
// is a symlink ("" when none: every existing parent is a real directory).
// Nothing is followed: each component is looked at with lstat.
func symlinkedParent(root, p string) string {
	comps := strings.Split(p, "/")
	for i := 1; i < len(comps); i++ {
		sub := strings.Join(comps[:i], "/")
		st, err := os.Lstat(filepath.Join(root, sub))
		if err != nil || !st.IsDir() && st.Mode()&fs.ModeSymlink == 0 {
			return ""
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			return sub
		}
	}
	return ""
}

// linkPath is a path an apply would write beneath a symlink of the
// checkout: the symlink, its target as stored, and whether it resolves
// outside the checkout.
type linkPath struct {
	link, target string
	outside      bool
}

// throughLinks finds the paths the apply would write beneath a symlink
// of the checkout. A symlink the merge deletes (the session replaced it
// with a directory) is removed before anything is written beneath it,
// as the session did: those are in replaced, keyed by the symlink. A
// symlink that stays would be written through, which apply never does:
// those paths are in through.
func (c *checkout) throughLinks(um map[string]snapshot.Change) (through map[string]linkPath, replaced map[string]linkPath) {
	through, replaced = map[string]linkPath{}, map[string]linkPath{}
	for p, ch := range um {
		if ch.Kind == snapshot.Deleted {
			continue
		}
		l := symlinkedParent(c.dir, p)
		if l == "" {
			continue
		}
		lp := linkPath{link: l}
		lp.target, _ = os.Readlink(filepath.Join(c.dir, l))
		if real, err := filepath.EvalSymlinks(filepath.Join(c.dir, l)); err != nil || !within(c.dir, real) {
			lp.outside = true
		}
		if lc, ok := um[l]; ok && lc.Kind == snapshot.Deleted {
			replaced[l] = lp
			continue
		}
		through[p] = lp
	}
	return through, replaced
}

// within reports whether path (symlinks resolved) lies in root.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// where words a symlink's target for a note: "a symlink to X (outside
// the checkout)".
func (lp linkPath) where() string {
	s := "a symlink to " + git.DisplayText(lp.target)
	if lp.outside {
		s += " (outside the checkout)"
	}
	return s
}

// note says why p is not written and how to get it there.
func (lp linkPath) note(checkout, worktree, p string) string {
	l := filepath.Join(checkout, lp.link)
	return fmt.Sprintf("%s: in your checkout %s is %s, and apply never writes through a symlink; to apply it, replace the symlink with a directory (rm %s && mkdir %s) and apply again, or copy the session's file through the symlink by hand: cp -Pp %s %s",
		git.DisplayPath(p), git.DisplayPath(lp.link), lp.where(), shellQuote(l), shellQuote(l), shellQuote(filepath.Join(worktree, p)), shellQuote(filepath.Join(checkout, p)))
}

// replacedLinkNote says that the session replaced a symlink of the
// checkout with a directory and that the apply does the same.
func replacedLinkNote(checkout, link string, lp linkPath) string {
	return fmt.Sprintf("%s: the session replaced this symlink with a directory; in your checkout it is %s, and the apply replaces it the same way (the symlink is removed, nothing is written through it)", git.DisplayPath(link), lp.where())
}

// uncaptured returns up to a few files on disk under the directory d of
// root that are not among the captured files the apply deletes there
// (ignored or blocklisted ones: the restore would refuse to remove them).
func uncaptured(root, d string, um map[string]snapshot.Change) []string {
	var held []string
	errStop := errors.New("enough")
	filepath.WalkDir(filepath.Join(root, d), func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return nil
		}
		rel, rerr := filepath.Rel(root, path)
		if rerr != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if ch, ok := um[rel]; ok && ch.Kind == snapshot.Deleted {
			return nil
		}
		held = append(held, rel)
		if len(held) == 3 {
			return errStop
		}
		return nil
	})
	return held
}

// InTheWayError refuses an apply that would overwrite ignored or
// write-blocklisted files of the checkout.
type InTheWayError struct {
	Paths []string
	// Holding maps a path that is a directory in the checkout to the
	// ignored files in it (a few); a file in the way maps to none.
	Holding map[string][]string
	// Through maps a path beneath a symlink of the checkout that stays
	// to that symlink: apply never writes through one.
	Through map[string]linkPath
	DryRun  bool
}

func (e *InTheWayError) Error() string {
	var files, dirs, links []string
	for _, p := range e.Paths {
		if lp := e.Through[p]; lp.link != "" {
			links = append(links, fmt.Sprintf("%s beneath %s, %s", git.DisplayPath(p), git.DisplayPath(lp.link), lp.where()))
			continue
		}
		if held := e.Holding[p]; len(held) > 0 {
			dirs = append(dirs, fmt.Sprintf("a file %s where your checkout has a directory holding %s", git.DisplayPath(p), strings.Join(displayPaths(held), ", ")))
		} else {
			files = append(files, git.DisplayPath(p))
		}
	}
	var what []string
	if len(files) > 0 {
		what = append(what, fmt.Sprintf("%s, where your checkout has an ignored or write-blocklisted file", strings.Join(files, ", ")))
	}
	what = append(what, dirs...)
	if len(links) > 0 {
		// Nothing of the user's is in the way: a symlink is, and moving
		// what it points at would be wrong advice.
		msg := fmt.Sprintf("%s: the session creates %s; apply never writes through a symlink: replace it with a directory and apply again, or copy the files by hand (the notes give the commands; nothing was written)", ErrInTheWay.Error(), strings.Join(links, "; and "))
		if len(what) > 0 {
			msg = strings.TrimSuffix(msg, "; nothing was written)") + fmt.Sprintf("); it also creates %s, which apply never overwrites or removes: move them away (nothing was written)", strings.Join(what, "; and "))
		}
		return msg
	}
	return fmt.Sprintf("%s: the session creates %s, which apply never overwrites or removes; move %s away and apply again (nothing was written)", ErrInTheWay.Error(), strings.Join(what, "; and "), map[bool]string{true: "it", false: "them"}[len(e.Paths) == 1])
}

func (e *InTheWayError) Unwrap() error { return ErrInTheWay }

// renamedBase returns the tree to merge over: base, except that a file the
// session renamed and the checkout already has under the new name only
// (applied before, or renamed by the user too) is moved there in the base
// as well. Without it git's rename detection sees the checkout's side as a
// delete plus an unrelated add whenever the file was also edited, and a
// second apply would conflict with the first.
func renamedBase(ctx context.Context, r *git.Runner, dir, scratch, base, theirs string, bu map[string]snapshot.Change) (string, error) {
	out, err := r.Run(ctx, "diff-tree", "-r", "-z", "-M", "--name-status", "--no-commit-id", base, theirs)
	if err != nil {
		return "", fmt.Errorf("find the session's renames: %w", err)
	}
	f := git.SplitZ(out)
	var edits []edit
	for i := 0; i < len(f); {
		status := f[i]
		if !strings.HasPrefix(status, "R") && !strings.HasPrefix(status, "C") {
			i += 2
			continue
		}
		if i+2 >= len(f) {
			break
		}
		src, dst := f[i+1], f[i+2]
		i += 3
		gone, added := bu[src], bu[dst]
		if status[0] != 'R' || gone.Kind != snapshot.Deleted || added.Kind != snapshot.Added {
			continue
		}
		edits = append(edits, edit{src, entry{}}, edit{dst, oldSide(gone)})
	}
	return editTree(ctx, git.New(dir), scratch, base, edits)
}

// conflict is one conflicting path of a merge with the entries of its
// index stages: 1 the base, 2 the checkout, 3 the session (missing when
// that side deleted it or never had it).
type conflict struct {
	path   string
	stages [4]entry
	// dirFile, set for a file on one side where the other has a
	// directory: which side has the file, whether the base had a
	// directory (true) or a file there, and the files in the directory
	// side's version (at most a few, with their count).
	dirFile *dirFile
}

// dirFile describes a file/directory conflict.
type dirFile struct {
	sessionFile bool     // the session's side was moved aside: the checkout's entry holds the path
	inside      []string // files in the directory side (first few)
	more        int      // how many more
	untracked   map[string]bool
	// base, ours and theirs are the entries at the path in the base, the
	// checkout and the session (a directory is mode 040000); oursLink and
	// theirsLink the targets of those that are symlinks.
	base, ours, theirs   entry
	oursLink, theirsLink string
}

// kindOf names the kind of a tree entry for a note.
func kindOf(e entry) string {
	switch {
	case e.missing():
		return "nothing"
	case e.mode == "040000":
		return "directory"
	case e.mode == "120000":
		return "symlink"
	case e.mode == "160000":
		return "submodule"
	}
	return "file"
}

// side describes one side's entry: "a regular file", "a symlink to X",
// "a directory holding a, b".
func (df *dirFile) side(e entry, link string) string {
	switch kindOf(e) {
	case "directory":
		if l := df.list(); l != "" {
			return "a directory holding " + l
		}
		return "a directory"
	case "symlink":
		return "a symlink to " + git.DisplayText(link)
	case "submodule":
		return "a submodule (commit " + git.ShortOID(e.oid) + ")"
	}
	if e.mode == "100755" {
		return "an executable file"
	}
	return "a regular file"
}

// note says exactly what each side has at path, which one the apply
// keeps (always the checkout's), where the session's is, and the
// commands that take the session's instead.
func (df *dirFile) note(path, checkout, worktree string) string {
	p := git.DisplayPath(path)
	ok, tk, bk := kindOf(df.ours), kindOf(df.theirs), kindOf(df.base)
	var how string
	switch {
	case bk == "nothing":
		how = "both created it"
	case bk == tk:
		how = fmt.Sprintf("you replaced the %s with the %s, and the session changed the %s", bk, ok, bk)
	case bk == ok && bk == "directory":
		how = fmt.Sprintf("the session replaced the directory with the %s, and you changed files in it", tk)
	case bk == ok:
		how = fmt.Sprintf("the session replaced the %s with the %s, and you changed the %s", bk, tk, bk)
	default:
		how = fmt.Sprintf("each side replaced the %s with something else", bk)
	}
	mine, theirs := filepath.Join(checkout, path), filepath.Join(worktree, path)
	kept := fmt.Sprintf("your %s is kept", ok)
	switch tk {
	case "directory":
		kept += fmt.Sprintf("; the session's files are in %s/", theirs)
	case "file":
		kept += "; the session's file is " + theirs
	}
	var aside, take string
	switch ok {
	case "symlink":
		aside = "rm " + shellQuote(mine)
	case "file", "directory":
		aside = "mv " + shellQuote(mine) + " " + shellQuote(mine+".mine")
	}
	switch tk {
	case "file":
		take = "cp -p " + shellQuote(theirs) + " " + shellQuote(mine)
	case "directory":
		take = "cp -R " + shellQuote(theirs) + " " + shellQuote(mine)
	case "symlink":
		take = "ln -s " + shellQuote(df.theirsLink) + " " + shellQuote(mine)
	}
	todo := "resolve it by hand"
	if aside != "" && take != "" {
		todo = "to take the session's instead: " + aside + " && " + take
	}
	return fmt.Sprintf("%s: your checkout has %s at %s; the session has %s there (%s); %s; %s", p, df.side(df.ours, df.oursLink), p, df.side(df.theirs, df.theirsLink), how, kept, todo)
}

// mergeLabels name the sides in conflict markers.
type mergeLabels struct{ base, ours, theirs string }

// mergeTrees merges ours and theirs over the base tree with merge-tree,
// through three throwaway commits: the base, and each side with the base as
// its parent. It returns the merged tree, with the conflict markers
// labelled, and the conflicting paths.
func mergeTrees(ctx context.Context, r *git.Runner, dir, scratch, baseTree, ours, theirs string, labels mergeLabels) (string, []conflict, error) {
	out, err := r.Run(ctx, "commit-tree", "-m", "yolop apply: base", baseTree)
	if err != nil {
		return "", nil, fmt.Errorf("prepare the merge: %w", err)
	}
	base := git.Trim(out)
	commit := func(tree, msg string) (string, error) {
		out, err := r.Run(ctx, "commit-tree", "-p", base, "-m", msg, tree)
		if err != nil {
			return "", fmt.Errorf("prepare the merge: %w", err)
		}
		return git.Trim(out), nil
	}
	cu, err := commit(ours, "yolop apply: checkout")
	if err != nil {
		return "", nil, err
	}
	cs, err := commit(theirs, "yolop apply: session")
	if err != nil {
		return "", nil, err
	}
	// The commits' only common ancestor is base, so merge-tree finds it
	// without --merge-base (git 2.40+).
	out, err = r.Run(ctx, "merge-tree", "--write-tree", "-z", "--no-messages", cu, cs)
	var ge *git.Error
	conflicted := false
	if err != nil {
		if errors.As(err, &ge) && ge.ExitCode == 1 {
			conflicted = true
		} else {
			return "", nil, fmt.Errorf("merge: %w", err)
		}
	}
	f := git.SplitZ(out)
	if len(f) == 0 || f[0] == "" {
		return "", nil, fmt.Errorf("merge: unexpected merge-tree output %q", out)
	}
	tree := f[0]
	byPath := map[string]*conflict{}
	for _, l := range f[1:] {
		if l == "" {
			break // the messages section follows
		}
		// "<mode> <oid> <stage>\t<path>"
		meta, p, ok := strings.Cut(l, "\t")
		m := strings.Fields(meta)
		if !ok || len(m) != 3 {
			return "", nil, fmt.Errorf("merge: unexpected merge-tree entry %q", l)
		}
		st, err := strconv.Atoi(m[2])
		if err != nil || st < 1 || st > 3 {
			return "", nil, fmt.Errorf("merge: unexpected merge-tree entry %q", l)
		}
		c := byPath[p]
		if c == nil {
			c = &conflict{path: p}
			byPath[p] = c
		}
		c.stages[st] = entry{m[0], m[1]}
	}
	if conflicted && len(byPath) == 0 {
		return "", nil, errors.New("merge: git reported conflicts without naming a path")
	}
	conflicts := make([]conflict, 0, len(byPath))
	for _, p := range sortedKeys(byPath) {
		conflicts = append(conflicts, *byPath[p])
	}
	tree, err = relabel(ctx, r, dir, scratch, tree, conflicts, map[string]string{base: labels.base, cu: labels.ours, cs: labels.theirs})
	if err != nil {
		return "", nil, err
	}
	return dirFileConflicts(ctx, r, dir, scratch, baseTree, tree, conflicts, cu, cs)
}

// list names the files of a directory side for a note.
func (df *dirFile) list() string {
	names := make([]string, len(df.inside))
	for i, p := range df.inside {
		names[i] = git.DisplayPath(p)
		if df.untracked[p] {
			names[i] += " (untracked)"
		}
	}
	s := strings.Join(names, ", ")
	if df.more > 0 {
		s += fmt.Sprintf(" and %d more", df.more)
	}
	return s
}

// dirFileConflicts turns merge-tree's file/directory conflicts into
// conflicts of the real path. git moves the file aside to
// "<path>~<side's commit id>", an unstable name in neither tree: that
// entry is dropped from the merged files and the path keeps the
// checkout's version (its directory, or its file in place of the
// session's directory), as a note says.
func dirFileConflicts(ctx context.Context, r *git.Runner, dir, scratch, baseTree, tree string, conflicts []conflict, cu, cs string) (string, []conflict, error) {
	var edits []edit
	out := make([]conflict, 0, len(conflicts))
	byPath := map[string]int{}
	for _, c := range conflicts {
		real, sessionFile := "", false
		switch {
		case strings.HasSuffix(c.path, "~"+cs):
			real, sessionFile = strings.TrimSuffix(c.path, "~"+cs), true
		case strings.HasSuffix(c.path, "~"+cu):
			real = strings.TrimSuffix(c.path, "~"+cu)
		default:
			if i, ok := byPath[c.path]; ok {
				// The directory side's own conflict at the same path.
				out[i].stages = mergeStages(out[i].stages, c.stages)
				continue
			}
			byPath[c.path] = len(out)
			out = append(out, c)
			continue
		}
		df := &dirFile{sessionFile: sessionFile}
		var err error
		for _, side := range []struct {
			e    *entry
			link *string
			tree string
		}{{&df.base, nil, baseTree}, {&df.ours, &df.oursLink, cu}, {&df.theirs, &df.theirsLink, cs}} {
			if *side.e, err = lsTree(ctx, r, side.tree, real); err != nil {
				return "", nil, err
			}
			if side.link != nil && side.e.mode == "120000" {
				b, err := r.Run(ctx, "cat-file", "blob", side.e.oid)
				if err != nil {
					return "", nil, fmt.Errorf("read the symlink %s: %w", real, err)
				}
				*side.link = string(b)
			}
		}
		inside, err := filesUnder(ctx, r, tree, real)
		if err != nil {
			return "", nil, err
		}
		if n := len(inside); n > 3 {
			df.inside, df.more = inside[:3], n-3
		} else {
			df.inside = inside
		}
		if sessionFile {
			// The directory is the checkout's: say which of its files
			// git does not track (the user may not think of them).
			df.untracked = untracked(ctx, dir, df.inside)
		}
		edits = append(edits, edit{c.path, entry{}})
		if !sessionFile {
			// The checkout's file goes back in place of the session's
			// directory.
			for _, p := range inside {
				edits = append(edits, edit{p, entry{}})
			}
			edits = append(edits, edit{real, c.stages[2]})
		}
		nc := conflict{path: real, stages: c.stages, dirFile: df}
		if i, ok := byPath[real]; ok {
			out[i] = nc
			continue
		}
		byPath[real] = len(out)
		out = append(out, nc)
	}
	if len(edits) == 0 {
		return tree, conflicts, nil
	}
	tree, err := editTree(ctx, git.New(dir), scratch, tree, edits)
	if err != nil {
		return "", nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return tree, out, nil
}

// underAny reports whether p lies under one of the directories dirs
// (each ending in a slash).
func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(p, d) {
			return true
		}
	}
	return false
}

// mergeStages fills the missing stages of a with b's.
func mergeStages(a, b [4]entry) [4]entry {
	for i := range a {
		if a[i].missing() {
			a[i] = b[i]
		}
	}
	return a
}

// filesUnder lists the files of tree under the directory d.
func filesUnder(ctx context.Context, r *git.Runner, tree, d string) ([]string, error) {
	out, err := r.With("GIT_LITERAL_PATHSPECS=1").Run(ctx, "ls-tree", "-r", "-z", "--name-only", "--full-tree", tree, "--", d+"/")
	if err != nil {
		return nil, fmt.Errorf("list %s/ in the merged files: %w", d, err)
	}
	var files []string
	for _, p := range git.SplitZ(out) {
		if p != "" {
			files = append(files, p)
		}
	}
	return files, nil
}

// untracked returns which of paths the checkout's index does not track
// (read only; empty when it cannot tell).
func untracked(ctx context.Context, dir string, paths []string) map[string]bool {
	if len(paths) == 0 {
		return nil
	}
	out, err := git.New(dir).With("GIT_LITERAL_PATHSPECS=1", "GIT_OPTIONAL_LOCKS=0").Run(ctx, append([]string{"ls-files", "-z", "--"}, paths...)...)
	if err != nil {
		return nil
	}
	tracked := map[string]bool{}
	for _, p := range git.SplitZ(out) {
		tracked[p] = true
	}
	m := map[string]bool{}
	for _, p := range paths {
		if !tracked[p] {
			m[p] = true
		}
	}
	return m
}

// markerRE matches a conflict marker line that names a side by a commit
// id (merge-tree labels each side with the name it was given, the merge
// base with an abbreviated id), with the
// path the side had it under when renamed. Compiled when first used: its
// bounded repetition costs every process (the tools' helpers included) a
// fifth of a millisecond at start otherwise.
var markerRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^([<>|]{7,}) ([0-9a-f]{7,64})(:[^\r\n]*)?(\r?)$`)
})

// relabel rewrites the conflict markers of the conflicting paths of tree
// so they name the sides for people ("your checkout", the session) rather
// than by the throwaway commits' ids.
func relabel(ctx context.Context, r *git.Runner, dir, scratch, tree string, conflicts []conflict, names map[string]string) (string, error) {
	var edits []edit
	for _, c := range conflicts {
		e, err := lsTree(ctx, r, tree, c.path)
		if err != nil {
			return "", err
		}
		if e.missing() || e.mode == "120000" || e.mode == "160000" {
			continue
		}
		blob, err := r.Run(ctx, "cat-file", "blob", e.oid)
		if err != nil {
			return "", fmt.Errorf("read the merged %s: %w", c.path, err)
		}
		changed := false
		out := markerRE().ReplaceAllFunc(blob, func(line []byte) []byte {
			m := markerRE().FindSubmatch(line)
			// The base is named by an abbreviated id.
			name, ok := "", false
			for oid, n := range names {
				if strings.HasPrefix(oid, string(m[2])) {
					name, ok = n, true
				}
			}
			if !ok {
				return line
			}
			changed = true
			label := name
			if len(m[3]) > 0 && string(m[3][1:]) != c.path {
				label += " (as " + string(m[3][1:]) + ")"
			}
			return []byte(string(m[1]) + " " + label + string(m[4]))
		})
		if !changed {
			continue
		}
		h, err := r.RunInput(ctx, out, "hash-object", "-w", "--no-filters", "--stdin")
		if err != nil {
			return "", fmt.Errorf("store the merged %s: %w", c.path, err)
		}
		edits = append(edits, edit{c.path, entry{e.mode, git.Trim(h)}})
	}
	return editTree(ctx, git.New(dir), scratch, tree, edits)
}

// lsTree returns the entry of path in tree (missing when absent).
func lsTree(ctx context.Context, r *git.Runner, tree, path string) (entry, error) {
	out, err := r.With("GIT_LITERAL_PATHSPECS=1").Run(ctx, "ls-tree", "-z", "--full-tree", tree, "--", path)
	if err != nil {
		return entry{}, fmt.Errorf("look up %s in the merged files: %w", path, err)
	}
	for _, l := range git.SplitZ(out) {
		meta, p, ok := strings.Cut(l, "\t")
		m := strings.Fields(meta)
		if ok && p == path && len(m) == 3 {
			return entry{m[0], m[2]}, nil
		}
	}
	return entry{}, nil
}

// hasMarkers reports whether a merged blob holds conflict markers.
func hasMarkers(ctx context.Context, r *git.Runner, e entry) bool {
	if e.missing() || e.mode == "120000" || e.mode == "160000" {
		return false
	}
	blob, err := r.Run(ctx, "cat-file", "blob", e.oid)
	if err != nil {
		return false
	}
	return conflictStartRE().Match(blob)
}

var conflictStartRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^<{7,}( |\r?$)`) })

// nextN numbers the next apply of the session: above every journaled one
// and every existing ref (applies to other checkouts share the refs).
func (c *checkout) nextN(ctx context.Context, sessionID string) (int, error) {
	n := c.j.nextN(sessionID)
	out, err := git.New(c.dir).Run(ctx, "for-each-ref", "--format=%(refname)", ApplyRefPrefix+sessionID+"/")
	if err != nil {
		return 0, fmt.Errorf("list apply refs: %w", err)
	}
	for _, l := range strings.Split(git.Trim(out), "\n") {
		if k, err := strconv.Atoi(strings.TrimPrefix(l, ApplyRefPrefix+sessionID+"/")); err == nil && k >= n {
			n = k + 1
		}
	}
	return n, nil
}

// settle finishes an interrupted step: an apply is rolled back (its paths
// get rec.Before's content), an undo is completed (rec.After's). A path
// holding neither side was changed by someone else: it is left alone and
// named in the note.
func (c *checkout) settle(ctx context.Context, rec record) (string, error) {
	goal, other := rec.Before, rec.After
	if rec.Type == recUndoStarted {
		goal, other = rec.After, rec.Before
	}
	cur, err := c.eng.Capture(ctx, "")
	if err != nil {
		return "", fmt.Errorf("capture the checkout: %w", err)
	}
	toGoal, err := diffMap(ctx, c.eng, cur.Tree, goal)
	if err != nil {
		return "", err
	}
	toOther, err := diffMap(ctx, c.eng, cur.Tree, other)
	if err != nil {
		return "", err
	}
	var edits []edit
	var skipped []string
	for _, p := range rec.Paths {
		ch, differs := toGoal[p]
		if !differs {
			continue
		}
		if _, isOther := toOther[p]; isOther {
			skipped = append(skipped, p)
			continue
		}
		edits = append(edits, edit{p, newSide(ch)})
	}
	target, err := editTree(ctx, git.New(c.dir), c.scratch, cur.Tree, edits)
	if err != nil {
		return "", err
	}
	if target != cur.Tree {
		if _, err := c.eng.Restore(ctx, cur, target); err != nil {
			return "", err
		}
	}
	if err := recreateDirs(c.dir, rec.Dirs); err != nil {
		return "", err
	}
	note := ""
	if rec.Type == recUndoStarted {
		note = fmt.Sprintf("completed an interrupted undo of apply %d of session %s in %s (%s restored)", rec.N, rec.SessionID, c.dir, plural(len(edits), "path", "paths"))
	} else {
		note = fmt.Sprintf("rolled back an interrupted apply %d of session %s in %s (%s restored)", rec.N, rec.SessionID, c.dir, plural(len(edits), "path", "paths"))
	}
	if len(skipped) > 0 {
		note += fmt.Sprintf("; left alone because they changed since: %s", strings.Join(skipped, ", "))
	}
	out := record{Type: recApplyAborted, SessionID: rec.SessionID, N: rec.N, Target: c.dir, Note: note}
	if rec.Type == recUndoStarted {
		out.Type = recUndoDone
	}
	if err := c.j.append(out); err != nil {
		return "", err
	}
	return note, nil
}

// settlePending settles the journal's interrupted step, if any.
func (c *checkout) settlePending(ctx context.Context) ([]string, error) {
	rec := c.j.pending()
	if rec == nil {
		return nil, nil
	}
	note, err := c.settle(ctx, *rec)
	if err != nil {
		return nil, fmt.Errorf("repair the interrupted %s of session %s in %s: %w", strings.TrimSuffix(rec.Type, ".started"), rec.SessionID, c.dir, err)
	}
	return []string{note}, nil
}

// existingDirs lists the parent directories of paths that exist in root.
func existingDirs(root string, paths []string) []string {
	seen := map[string]bool{}
	for _, p := range paths {
		for d := filepath.Dir(p); d != "." && d != "/" && !seen[d]; d = filepath.Dir(d) {
			if st, err := os.Lstat(filepath.Join(root, d)); err == nil && st.IsDir() {
				seen[d] = true
			}
		}
	}
	return sortedKeys(seen)
}

// recreateDirs puts back directories that deleting files emptied and
// removed.
func recreateDirs(root string, dirs []string) error {
	for _, d := range dirs {
		full := filepath.Join(root, d)
		if _, err := os.Lstat(full); err == nil {
			continue
		}
		if err := os.MkdirAll(full, 0o755); err != nil {
			return fmt.Errorf("recreate directory %s: %w", d, err)
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for p := range m {
		k = append(k, p)
	}
	sort.Strings(k)
	return k
}

// rolledBack describes a write into the checkout that failed and was put
// back: what failed (the engine's own wording about the worktree's state is
// moot once the rollback succeeded), that nothing changed, and what to do.
func rolledBack(err error, note string) error {
	cause := err
	var re *snapshot.RestoreError
	if errors.As(err, &re) && re.Err != nil {
		cause = re.Err
	}
	advice := "run the apply again"
	if errors.Is(err, syscall.ENOSPC) {
		advice = "the disk is full: free space and run the apply again"
	}
	return fmt.Errorf("apply: writing into the checkout failed: %w; nothing changed (%s); %s", cause, note, advice)
}
