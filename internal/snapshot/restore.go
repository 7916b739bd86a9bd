package snapshot

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/yolop-dev/yolop/internal/git"
)

// failpoint calls Options.Failpoint, when set, between restore steps with
// the step's name ("restore.after_write", "restore.after_delete",
// "restore.before_verify") so crash tests can stop the process there.
func (e *Engine) failpoint(name string) {
	if f := e.failpointFn; f != nil {
		f(name)
	}
}

// RestoreResult describes a completed restore.
type RestoreResult struct {
	Changes    []Change      // the changes applied, sorted by path
	LeftAlone  []string      // nested repositories and submodules where the target differs, left alone
	Ignored    []string      // written paths that the ignore rules in force now ignore (see RestoreCheck.Ignored)
	Tree       string        // the verified tree of the worktree as captures see it (the target minus LeftAlone and Ignored)
	ApplyTime  time.Duration // validating, writing and deleting
	VerifyTime time.Duration // re-capturing and comparing
	// IndexWarning says the worktree's own index could not be set to
	// HEAD for the restored paths (Options.OwnIndex): the files are
	// restored, but `git status` there may show what an undone turn
	// staged.
	IndexWarning string
}

// Restore makes the worktree equal to target. from must be a fresh capture
// of the current worktree: only the paths that differ between from.Tree and
// target are touched. The whole change set is validated before the first
// write; afterwards the worktree is captured again and must equal target.
// Failures are *RestoreError values telling whether anything was changed;
// something no snapshot holds in the way of a write is a *BlockedError
// inside one, found before anything changed.
func (e *Engine) Restore(ctx context.Context, from Snapshot, target string) (RestoreResult, error) {
	e.lockNow()
	defer e.mu.Unlock()
	// The files are about to change under the background index update.
	e.waitIndexUpdate()
	if err := e.guardLink(); err != nil {
		return RestoreResult{}, &RestoreError{Step: "validate", Err: err}
	}
	start := time.Now()
	changes, alone, p, err := e.prepare(ctx, from.Tree, target)
	if err != nil {
		return RestoreResult{}, &RestoreError{Step: "validate", Err: err}
	}
	// The target's captured files whose permissions were narrower than a
	// tree can say get them back.
	modes, err := e.modesFor(ctx, target)
	if err != nil {
		return RestoreResult{}, &RestoreError{Step: "validate", Err: err}
	}
	expect, err := e.treeWithout(ctx, target, alone)
	if err != nil {
		return RestoreResult{}, &RestoreError{Step: "validate", Err: err}
	}
	p.modes = modes
	// A failure from here on leaves the rollback to the caller, which
	// restores the capture it started from; files this restore created
	// that the ignore rules hide from that capture are taken back here.
	if err := e.apply(ctx, p); err != nil {
		e.dropIgnoredCreations(ctx, p)
		return RestoreResult{}, err
	}
	tightened, err := e.tighten(p, alone)
	if err != nil {
		e.dropIgnoredCreations(ctx, p)
		return RestoreResult{}, &RestoreError{Step: "write", Applied: true, Err: err}
	}
	if len(changes) > 0 || tightened {
		// The caller journals the restore as done once Restore returns;
		// the restored bytes must reach the disk before that record can,
		// or a power loss could leave the new head over old files. On
		// Linux one syncfs costs less than an fsync per written file and
		// directory; elsewhere each file and directory is synced.
		if err := syncRestored(e.root, touchedDirs(changes)); err != nil {
			return RestoreResult{}, &RestoreError{Step: "sync", Applied: true, Err: err}
		}
	}
	res := RestoreResult{Changes: changes, LeftAlone: alone, ApplyTime: time.Since(start)}
	e.failpoint("restore.before_verify")
	vstart := time.Now()
	// What was left alone is not compared: the worktree must equal the
	// target minus those subtrees.
	got, ignored, err := e.verifyRestored(ctx, expect, p)
	if err != nil {
		e.dropIgnoredCreations(ctx, p)
		return RestoreResult{}, &RestoreError{Step: "verify", Applied: len(changes) > 0 || tightened, Err: err}
	}
	res.VerifyTime = time.Since(vstart)
	res.Tree, res.Ignored = got, ignored
	// The files are restored and verified; what the undone turns staged
	// in the session worktree's own index goes with them. A failure here
	// changes nothing the restore did: it is said, not undone.
	paths := make([]string, len(changes))
	for i, c := range changes {
		paths[i] = c.Path
	}
	if err := e.resetOwnIndex(ctx, paths); err != nil {
		res.IndexWarning = fmt.Sprintf("the files are restored, but the session worktree's index could not be reset to HEAD for them (%v), so git status there may show changes staged by the undone turns; run git reset -q in %s to clear them", err, e.root)
	}
	return res, nil
}

// RestoreCheck is what a restore from a fresh capture to a target would
// do, found without changing anything.
type RestoreCheck struct {
	Changes   []Change // the changes the restore makes, sorted by path
	LeftAlone []string // nested repositories and submodules where the target differs, left alone
	// Ignored are the paths among Changes the restore writes that the
	// ignore rules in force once it is done ignore (a rule added to the
	// repository's info/exclude or core.excludesFile since the capture):
	// they are restored byte for byte, as ignored files that later
	// captures leave out.
	Ignored []string
}

// CheckRestore validates a restore from fromTree, a fresh capture of the
// worktree, to target exactly as Restore will, without changing anything:
// a *BlockedError says what is in the way.
func (e *Engine) CheckRestore(ctx context.Context, fromTree, target string) (RestoreCheck, error) {
	e.lockNow()
	defer e.mu.Unlock()
	if err := e.guardLink(); err != nil {
		return RestoreCheck{}, err
	}
	changes, alone, _, err := e.prepare(ctx, fromTree, target)
	if err != nil {
		return RestoreCheck{}, err
	}
	chk := RestoreCheck{Changes: changes, LeftAlone: alone}
	set, err := e.ignoredAfter(ctx, changes)
	if err != nil {
		return RestoreCheck{}, err
	}
	for _, c := range changes {
		if set[c.Path] {
			chk.Ignored = append(chk.Ignored, c.Path)
		}
	}
	return chk, nil
}

// prepare computes and validates the change set of a restore from fromTree
// to target: nested repositories are split off, and the plan is checked
// against the worktree as it is now.
func (e *Engine) prepare(ctx context.Context, fromTree, target string) ([]Change, []string, *plan, error) {
	all, err := e.diff(ctx, fromTree, target)
	if err != nil {
		return nil, nil, nil, err
	}
	// Every path is checked before any is looked up on disk.
	for _, c := range all {
		if err := checkPath(c.Path); err != nil {
			return nil, nil, nil, err
		}
	}
	// Nested repositories and submodules are left alone, also where the
	// target holds files captured before the directory became one.
	changes, alone := splitNested(e.root, all)
	p, err := e.plan(ctx, changes)
	if err != nil {
		return nil, nil, nil, err
	}
	return changes, alone, p, nil
}

// verifyRestored captures the worktree after a restore and checks it
// against expect. A written path the capture leaves out is accepted when
// the ignore rules in force now ignore it and the worktree holds exactly
// its target content: a rule from outside the worktree (info/exclude,
// core.excludesFile) that appeared since the target was captured. got is
// the worktree's tree as captures see it, ignored those paths.
func (e *Engine) verifyRestored(ctx context.Context, expect string, p *plan) (got string, ignored []string, err error) {
	// Writes through mmap raise no inotify event: the check walks.
	got, err = e.capture(ctx, true)
	if err != nil {
		return "", nil, err
	}
	if got == expect {
		return got, nil, nil
	}
	ch, err := e.diff(ctx, expect, got)
	if err != nil {
		return "", nil, fmt.Errorf("%w: worktree is %s, want %s", ErrMismatch, got, expect)
	}
	written := map[string]bool{}
	for _, c := range p.writes {
		written[c.Path] = true
	}
	var cands []string
	for _, c := range ch {
		if c.Kind == Deleted && written[c.Path] {
			cands = append(cands, c.Path)
		}
	}
	set, err := e.checkIgnored(ctx, e.root, cands)
	if err != nil {
		return "", nil, err
	}
	var bad []Change
	for _, c := range ch {
		if c.Kind == Deleted && set[c.Path] {
			ok, err := e.diskMatches(c.Path, c.OldMode, c.OldOID)
			if err != nil {
				return "", nil, fmt.Errorf("snapshot: verify %q: %w", c.Path, err)
			}
			if ok {
				ignored = append(ignored, c.Path)
				continue
			}
		}
		bad = append(bad, c)
	}
	if len(bad) == 0 {
		return got, ignored, nil
	}
	return "", nil, mismatch(got, expect, bad)
}

// mismatch describes a worktree tree that differs from the one wanted.
func mismatch(got, want string, ch []Change) error {
	var paths []string
	for i, c := range ch {
		if i == 10 {
			paths = append(paths, fmt.Sprintf("and %d more", len(ch)-10))
			break
		}
		paths = append(paths, fmt.Sprintf("%s %q", c.Kind, c.Path))
	}
	return fmt.Errorf("%w: worktree is %s, want %s (%s)", ErrMismatch, got, want, strings.Join(paths, ", "))
}

type plan struct {
	writes  []Change               // added, modified, type or mode changed, by path
	deletes []Change               // deleted, by path
	del     map[string]bool        // captured paths that go away (may block a write)
	removed map[string]bool        // deletions already done while writing
	modes   map[string]fs.FileMode // captured permissions narrower than the tree mode
	created map[string]string      // added paths where nothing was on disk before -> their deepest existing directory
}

// dropIgnoredCreations removes, after a failed restore, the files it
// created where nothing was before and that the ignore rules in force hide
// from captures (a rule added outside the worktree since the target was
// captured): the caller's rollback, a restore of its own earlier capture,
// cannot see them. A file is removed only while it holds exactly what was
// written. Best effort: whatever stays is an ignored file.
func (e *Engine) dropIgnoredCreations(ctx context.Context, p *plan) {
	var cands []Change
	for _, c := range p.writes {
		if _, ok := p.created[c.Path]; ok {
			cands = append(cands, c)
		}
	}
	if len(cands) == 0 {
		return
	}
	paths := make([]string, len(cands))
	for i, c := range cands {
		paths[i] = c.Path
	}
	ctx = context.WithoutCancel(ctx)
	set, err := e.checkIgnored(ctx, e.root, paths)
	if err != nil {
		return
	}
	for _, c := range cands {
		if !set[c.Path] {
			continue
		}
		if ok, err := e.diskMatches(c.Path, c.NewMode, c.NewOID); err != nil || !ok {
			continue
		}
		if os.Remove(filepath.Join(e.root, c.Path)) != nil {
			continue
		}
		// The directories the restore made for it go too.
		for dir := path.Dir(c.Path); dir != "." && dir != "/" && dir != p.created[c.Path]; dir = path.Dir(dir) {
			if os.Remove(filepath.Join(e.root, dir)) != nil {
				break // not empty: leave it
			}
		}
	}
}

// checkPath rejects a tree path that could escape the worktree, reach into
// a git directory or a blocklisted directory, or is not a clean relative path.
func checkPath(p string) error {
	if p == "" || strings.ContainsRune(p, 0) || strings.HasPrefix(p, "/") {
		return fmt.Errorf("%w: %q is empty, absolute or contains NUL", ErrUnsafePath, p)
	}
	for _, c := range strings.Split(p, "/") {
		switch {
		case c == "" || c == "." || c == "..":
			return fmt.Errorf("%w: %q has an empty, '.' or '..' component", ErrUnsafePath, p)
		case strings.EqualFold(c, ".git"):
			return fmt.Errorf("%w: %q reaches into a .git directory", ErrUnsafePath, p)
		case isBlocked(c):
			return fmt.Errorf("%w: %q is inside the write-blocklisted %q", ErrUnsafePath, p, c)
		case strings.HasPrefix(c, tmpPrefix):
			return fmt.Errorf("%w: %q uses the reserved prefix %q", ErrUnsafePath, p, tmpPrefix)
		}
	}
	return nil
}

// plan validates every change against the tree rules and the worktree as it
// is now, without touching anything.
func (e *Engine) plan(ctx context.Context, changes []Change) (*plan, error) {
	p := &plan{del: map[string]bool{}, removed: map[string]bool{}, created: map[string]string{}}
	for _, c := range changes {
		if err := checkPath(c.Path); err != nil {
			return nil, err
		}
		if c.Kind == Deleted {
			p.deletes = append(p.deletes, c)
			p.del[c.Path] = true
			continue
		}
		switch c.NewMode {
		case "100644", "100755", "120000":
		default:
			return nil, fmt.Errorf("%w: %q has mode %s; snapshots hold only files and symlinks", ErrUnsafePath, c.Path, c.NewMode)
		}
		p.writes = append(p.writes, c)
	}
	dirs := map[string]bool{} // directories whose entries change
	for _, c := range p.writes {
		parent, err := e.checkParents(ctx, p, c, dirs)
		if err != nil {
			return nil, err
		}
		dirs[parent] = true
		full := filepath.Join(e.root, c.Path)
		st, err := os.Lstat(full)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			if c.Kind == Added {
				p.created[c.Path] = parent
			}
		case err != nil:
			return nil, fmt.Errorf("snapshot: inspect %q: %w", c.Path, err)
		case st.IsDir():
			if err := e.checkReplaceableDir(ctx, p, c, dirs); err != nil {
				return nil, err
			}
		case c.Kind == ModeChanged && !st.Mode().IsRegular():
			return nil, fmt.Errorf("%w: %q should be a regular file whose mode changes, but it is %s; capture the worktree again", ErrConflict, c.Path, st.Mode().Type())
		case c.Kind == Added && !e.beyondSymlink(c.Path):
			// Not in the capture the restore starts from, yet there: an
			// ignored file (or one made since). No snapshot holds it, so
			// overwriting it would lose it, unless it already is what the
			// restore writes.
			same, err := e.diskMatches(c.Path, c.NewMode, c.NewOID)
			if err != nil {
				return nil, fmt.Errorf("snapshot: inspect %q: %w", c.Path, err)
			}
			if !same {
				return nil, e.blocked(ctx, c, c.Path, st.Mode())
			}
		}
	}
	for _, c := range p.deletes {
		parent, err := e.checkParents(ctx, p, c, dirs)
		if err != nil {
			return nil, err
		}
		if _, err := os.Lstat(filepath.Join(e.root, c.Path)); err == nil {
			dirs[parent] = true
		}
	}
	keys := make([]string, 0, len(dirs))
	for d := range dirs {
		keys = append(keys, d)
	}
	sort.Strings(keys)
	for _, d := range keys {
		if err := syscall.Access(filepath.Join(e.root, d), 0x2|0x1); err != nil { // W_OK|X_OK
			name := d
			if name == "." {
				name = "the worktree root"
			}
			return nil, fmt.Errorf("%w: directory %q is not writable (%v); fix its permissions and retry", ErrConflict, name, err)
		}
	}
	return p, nil
}

// checkParents walks rel's parent directories from the root. Each must be a
// real directory, be missing (it will be created), or be a captured file or
// symlink that this restore deletes anyway. A symlinked parent is never
// followed. It returns the deepest existing directory, relative to the root.
func (e *Engine) checkParents(ctx context.Context, p *plan, c Change, dirs map[string]bool) (string, error) {
	rel := c.Path
	comps := strings.Split(rel, "/")
	existing := "."
	for i := 0; i < len(comps)-1; i++ {
		sub := strings.Join(comps[:i+1], "/")
		st, err := os.Lstat(filepath.Join(e.root, sub))
		if errors.Is(err, fs.ErrNotExist) {
			return existing, nil
		}
		if err != nil {
			return "", fmt.Errorf("snapshot: inspect %q: %w", sub, err)
		}
		if st.IsDir() {
			existing = sub
			continue
		}
		if !p.del[sub] {
			if c.Kind == Deleted {
				return "", fmt.Errorf("%w: cannot delete %s: %s is a %s that no snapshot holds; move it away and retry", ErrConflict, git.DisplayPath(rel), git.DisplayPath(sub), kindOf(st.Mode()))
			}
			return "", e.blocked(ctx, c, sub, st.Mode())
		}
		// The file or symlink in the way is replaced by a directory.
		dirs[existing] = true
		return existing, nil
	}
	return existing, nil
}

// checkReplaceableDir makes sure a directory that a file or symlink replaces
// holds nothing but captured files this restore deletes.
func (e *Engine) checkReplaceableDir(ctx context.Context, p *plan, c Change, dirs map[string]bool) error {
	rel := c.Path
	return filepath.WalkDir(filepath.Join(e.root, rel), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(e.root, path)
		r = filepath.ToSlash(r)
		if d.IsDir() {
			dirs[r] = true
			if filepath.Base(r) == ".git" || isBlocked(filepath.Base(r)) {
				return &BlockedError{Path: rel, Restore: restoredKind(c), Blocker: r, Kind: "directory", Why: "never captured"}
			}
			return nil
		}
		if !p.del[r] {
			st, err := os.Lstat(path)
			if err != nil {
				return fmt.Errorf("snapshot: inspect %q: %w", r, err)
			}
			return e.blocked(ctx, c, r, st.Mode())
		}
		return nil
	})
}

// blocked describes blocker, an entry no snapshot holds, in the way of
// restoring c.
func (e *Engine) blocked(ctx context.Context, c Change, blocker string, m fs.FileMode) error {
	why := "not captured"
	if isBlocked(path.Base(blocker)) {
		why = "never captured"
	} else if set, err := e.checkIgnored(ctx, e.root, []string{blocker}); err == nil && set[blocker] {
		why = "ignored"
	}
	return &BlockedError{Path: c.Path, Restore: restoredKind(c), Blocker: blocker, Kind: kindOf(m), Why: why}
}

// restoredKind names what a change writes.
func restoredKind(c Change) string {
	if c.NewMode == "120000" {
		return "symlink"
	}
	return "file"
}

func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "directory"
	default:
		return "special file"
	}
}

// apply performs the planned writes, then the deletions.
func (e *Engine) apply(ctx context.Context, p *plan) (err error) {
	touched := false
	fail := func(step string, err error) error {
		return &RestoreError{Step: step, Applied: touched, Err: err}
	}
	var blobs *blobReader
	var need []string
	for _, c := range p.writes {
		if c.Kind != ModeChanged {
			need = append(need, c.NewOID)
		}
	}
	if len(need) > 0 {
		blobs, err = e.openBlobs(ctx, need)
		if err != nil {
			return fail("write", err)
		}
		defer func() {
			if cerr := blobs.close(); cerr != nil && err == nil {
				err = fail("write", cerr)
			}
		}()
	}
	for _, c := range p.writes {
		if err := ctx.Err(); err != nil {
			return fail("write", err)
		}
		var content []byte
		if c.Kind != ModeChanged {
			content, err = blobs.next(c.NewOID)
			if err != nil {
				return fail("write", err)
			}
		}
		touched = true
		if err := e.writeOne(p, c, content); err != nil {
			return fail("write", err)
		}
	}
	e.failpoint("restore.after_write")
	for _, c := range p.deletes {
		if p.removed[c.Path] {
			continue
		}
		touched = true
		if err := e.deleteOne(c.Path); err != nil {
			return fail("delete", err)
		}
	}
	e.failpoint("restore.after_delete")
	return nil
}

// makeParents creates rel's missing parent directories, replacing a captured
// file or symlink in the way (plan checked that it is one).
func (e *Engine) makeParents(p *plan, rel string) error {
	comps := strings.Split(rel, "/")
	for i := 0; i < len(comps)-1; i++ {
		sub := strings.Join(comps[:i+1], "/")
		full := filepath.Join(e.root, sub)
		st, err := os.Lstat(full)
		if err == nil && st.IsDir() {
			continue
		}
		if err == nil {
			if !p.del[sub] {
				return fmt.Errorf("%w: %q is a %s in the way of %q", ErrConflict, sub, kindOf(st.Mode()), rel)
			}
			if err := os.Remove(full); err != nil {
				return fmt.Errorf("snapshot: remove %q: %w", sub, err)
			}
			p.removed[sub] = true
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("snapshot: inspect %q: %w", sub, err)
		}
		if err := os.Mkdir(full, 0o755); err != nil {
			return fmt.Errorf("snapshot: create directory %q: %w", sub, err)
		}
	}
	return nil
}

func (e *Engine) writeOne(p *plan, c Change, content []byte) error {
	if err := e.makeParents(p, c.Path); err != nil {
		return err
	}
	full := filepath.Join(e.root, c.Path)
	st, err := os.Lstat(full)
	exists := err == nil
	if exists && st.IsDir() {
		if err := e.removeCapturedDir(p, c.Path); err != nil {
			return err
		}
		exists = false
	}
	if c.Kind == ModeChanged {
		if !exists || !st.Mode().IsRegular() {
			return fmt.Errorf("%w: %q is no longer a regular file", ErrConflict, c.Path)
		}
		return os.Chmod(full, e.permOf(p, c, st.Mode().Perm()))
	}
	dir := filepath.Dir(full)
	if c.NewMode == "120000" {
		tmp := filepath.Join(dir, tmpPrefix+strconv.FormatInt(time.Now().UnixNano(), 36))
		if err := os.Symlink(string(content), tmp); err != nil {
			return fmt.Errorf("snapshot: create symlink %q: %w", c.Path, err)
		}
		if err := os.Rename(tmp, full); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("snapshot: replace %q: %w", c.Path, err)
		}
		return nil
	}
	perm := fs.FileMode(0o644)
	if exists && st.Mode().IsRegular() {
		perm = st.Mode().Perm()
	}
	perm = e.permOf(p, c, perm)
	// Created with its final permissions: never, not even for a moment,
	// more open than it was captured (umask can only narrow them; the
	// Chmod below undoes that).
	f, tmp, err := createTemp(dir, perm)
	if err != nil {
		return fmt.Errorf("snapshot: write %q: %w", c.Path, err)
	}
	_, werr := f.Write(content)
	if werr == nil {
		werr = f.Chmod(perm)
	}
	if werr == nil && syncEachFile {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, full)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("snapshot: write %q: %w", c.Path, werr)
	}
	return nil
}

// createTemp creates a new restore temporary in dir with permissions perm.
func createTemp(dir string, perm fs.FileMode) (*os.File, string, error) {
	for i := 0; ; i++ {
		name := filepath.Join(dir, tmpPrefix+strconv.FormatInt(time.Now().UnixNano(), 36)+strconv.Itoa(i))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err == nil {
			return f, name, nil
		}
		if !errors.Is(err, fs.ErrExist) || i >= 100 {
			return nil, "", err
		}
	}
}

// permOf is the permissions a written file gets: those captured with the
// target when they were narrower than its tree mode, else cur adjusted to
// the tree mode's exec bit.
func (e *Engine) permOf(p *plan, c Change, cur fs.FileMode) fs.FileMode {
	if m, ok := p.modes[c.Path]; ok {
		return permFor(m, c.NewMode)
	}
	return permFor(cur, c.NewMode)
}

// tighten gives the target's recorded narrow permissions back to files the
// change set did not write (their content is the same, their permissions
// were opened since). It only ever removes permission bits. It reports
// whether it changed anything.
func (e *Engine) tighten(p *plan, alone []string) (bool, error) {
	written := map[string]bool{}
	for _, c := range p.writes {
		written[c.Path] = true
	}
	paths := make([]string, 0, len(p.modes))
	for path := range p.modes {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	changed := false
	for _, path := range paths {
		if written[path] || underAny(path, alone) || e.beyondSymlink(path) {
			continue
		}
		full := filepath.Join(e.root, path)
		st, err := os.Lstat(full)
		if err != nil || !st.Mode().IsRegular() {
			continue // not there as a file: verify reports any difference
		}
		cur := st.Mode().Perm()
		want := p.modes[path]
		// Keep the exec bits the tree decided (verify checks them).
		want = permFor(want, map[bool]string{true: "100755", false: "100644"}[cur&0o111 != 0])
		if cur&^want == 0 {
			continue
		}
		if err := os.Chmod(full, cur&want); err != nil {
			return changed, fmt.Errorf("snapshot: restore permissions of %q: %w", path, err)
		}
		changed = true
	}
	return changed, nil
}

// permFor keeps a file's permission bits but sets the exec bits (where
// readable) for 100755 and clears them for 100644.
func permFor(perm fs.FileMode, mode string) fs.FileMode {
	if mode == "100755" {
		if perm&0o444 == 0 {
			perm |= 0o444
		}
		return perm | (perm&0o444)>>2
	}
	return perm &^ 0o111
}

// removeCapturedDir removes a directory that only holds captured files this
// restore deletes (plan checked it), deepest first.
func (e *Engine) removeCapturedDir(p *plan, rel string) error {
	root := filepath.Join(e.root, rel)
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, path)
			return nil
		}
		r, _ := filepath.Rel(e.root, path)
		r = filepath.ToSlash(r)
		if !p.del[r] {
			return fmt.Errorf("%w: %q appeared in directory %q during the restore", ErrConflict, r, rel)
		}
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("snapshot: remove %q: %w", r, err)
		}
		p.removed[r] = true
		return nil
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Remove(dirs[i]); err != nil {
			return fmt.Errorf("snapshot: remove directory %q: %w", dirs[i], err)
		}
	}
	return nil
}

// deleteOne removes a captured file or symlink and then its parent
// directories that became empty.
func (e *Engine) deleteOne(rel string) error {
	full := filepath.Join(e.root, rel)
	st, err := os.Lstat(full)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("snapshot: inspect %q: %w", rel, err)
	}
	if st.IsDir() {
		return fmt.Errorf("%w: %q should be a file but is a directory; capture the worktree again", ErrConflict, rel)
	}
	if err := os.Remove(full); err != nil {
		return fmt.Errorf("snapshot: delete %q: %w", rel, err)
	}
	for dir := filepath.Dir(rel); dir != "." && dir != "/"; dir = filepath.Dir(dir) {
		if os.Remove(filepath.Join(e.root, dir)) != nil {
			break // not empty (or not ours): leave it
		}
	}
	return nil
}

// blobReader streams blobs from one `git cat-file --batch` process in the
// order they were requested.
type blobReader struct {
	out  *bufio.Reader
	wait func() error
}

func (e *Engine) openBlobs(ctx context.Context, oids []string) (*blobReader, error) {
	args := []string{"cat-file", "--batch"}
	cmd, stderr := e.repo.Command(ctx, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, e.repo.WrapError(args, err, stderr)
	}
	go func() {
		// Written concurrently with reading so neither pipe fills up.
		w := bufio.NewWriter(stdin)
		for _, o := range oids {
			w.WriteString(o + "\n")
		}
		w.Flush()
		stdin.Close()
	}()
	br := &blobReader{out: bufio.NewReaderSize(stdout, 64<<10)}
	br.wait = func() error {
		_, _ = io.Copy(io.Discard, stdout)
		return e.repo.WrapError(args, cmd.Wait(), stderr)
	}
	return br, nil
}

func (b *blobReader) next(oid string) ([]byte, error) {
	hdr, err := b.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("snapshot: read object %s: %w", oid, err)
	}
	f := strings.Fields(hdr)
	if len(f) != 3 || f[0] != oid || f[1] != "blob" {
		return nil, fmt.Errorf("snapshot: object %s: unexpected cat-file answer %q", oid, strings.TrimSpace(hdr))
	}
	n, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("snapshot: object %s: bad size in %q", oid, strings.TrimSpace(hdr))
	}
	buf := make([]byte, n+1)
	if _, err := io.ReadFull(b.out, buf); err != nil {
		return nil, fmt.Errorf("snapshot: read object %s: %w", oid, err)
	}
	return buf[:n], nil
}

func (b *blobReader) close() error { return b.wait() }

// touchedDirs lists the directories (relative to the root) whose entries a
// restore of changes may have changed: each path's parent and its ancestors.
func touchedDirs(changes []Change) []string {
	seen := map[string]bool{}
	var dirs []string
	for _, c := range changes {
		for d := filepath.Dir(c.Path); d != "." && d != "/" && !seen[d]; d = filepath.Dir(d) {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	sort.Strings(dirs)
	return dirs
}
