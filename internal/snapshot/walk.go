package snapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/git"
)

// walkResult is what the capture's own walk of the worktree finds beside
// what git status reports.
type walkResult struct {
	// nested lists the directories (relative, slash-separated) that hold a
	// .git entry: nested repositories and submodules. They are never
	// captured and never touched by a restore, whatever an earlier snapshot
	// held there.
	nested []string
	// modes holds the regular files whose permission bits are narrower
	// than the 0644/0755 a Git tree can express (a 0600 key, a 0400
	// file). A restore gives them those bits back.
	modes map[string]fs.FileMode
	// gitignores digests every .gitignore found (path and content), so
	// a change of the rules inside the worktree is noticed (rules.go).
	gitignores string
	// files, when the walk was asked for them, holds the stat data of
	// every regular file and symlink it found, by directory ("" is the
	// root; a first capture compares them with the seeded index instead
	// of running a status: seedstat.go). incomplete reports a directory
	// it could not read whole: files then does not stand for the
	// worktree.
	files      map[string]*walkedDir
	incomplete bool
}

// walkedDir is what the walk found in one directory: its files, sorted
// by name.
type walkedDir struct {
	files []walkedName
	next  int // the comparison's cursor (seedstat.go)
}

// walkedName is a file the walk found, by name in its directory.
type walkedName struct {
	name    string
	st      walkedFile
	matched bool // an index entry names it (seedstat.go)
}

// walkedFile is the stat data of a file as the walk found it, as git's
// lstat would.
type walkedFile struct {
	mode         uint32 // st_mode: type and permission bits
	ctime, mtime int64  // nanoseconds since the epoch
	ino          uint64
	uid, gid     uint32
	size         int64
}

// The file type bits of st_mode.
const (
	modeTypeMask = 0o170000
	modeRegular  = 0o100000
	modeSymlink  = 0o120000
)

// Walk is what a walk of a worktree found that a status cannot report:
// nested repositories and restrictive permissions (see walkResult). It is
// made when a spare worktree is parked or prepared, off the path of any
// session start, and handed to the first capture of the session that
// claims the spare (Options.KnownWalk).
type Walk struct {
	// At is when the walk began: a file whose inode changed (ctime) less
	// than a second before or any time after may not be as it saw it.
	At     time.Time              `json:"at"`
	Nested []string               `json:"nested,omitempty"`
	Modes  map[string]fs.FileMode `json:"modes,omitempty"`
	// Watched: the walk began after the watcher that the claiming
	// session's engine takes over (Options.Prewatch) was armed over the
	// tree, so whatever changed after the walk looked raised an event:
	// the watcher, not inode times, says which entries to look at again.
	// Never stored: a walk read back from disk has no watcher behind it.
	Watched bool `json:"-"`
}

// WalkTree walks the worktree at root as a capture does.
func WalkTree(root string) Walk {
	at := time.Now()
	w := walkTree(root, nil, false)
	return Walk{At: at, Nested: w.nested, Modes: w.modes}
}

// walkSlack is how long before Walk.At a change may be stamped and still
// be missed by the walk: inode times come from a coarse clock.
const walkSlack = time.Second

// walkFromNote is the walk a known-clean first capture would make, from a
// walk made when the worktree was parked: its permissions hold for every
// index entry whose inode has not changed since (the claim's status
// refreshed the stat data of every entry it found changed), and the others
// are looked at now. With changed (a Watched walk's watcher vouches for
// what changed since it was armed), the entries looked at are those it
// names instead: a checkout that ended just before the walk stamped a
// second's worth of files (a third of them, for a 100,000-file tree
// checked out in 3 s) that the inode times would send to lstat again.
// ok is false when a nested repository may be there: one found by the
// earlier walk, or a .git in any directory holding index entries (with
// changed, the watcher would have seen one appear, and would not vouch).
// entries are the seeded index's, with the paths a capture leaves out
// already dropped.
func (e *Engine) walkFromNote(note *Walk, entries []indexEntry, changed func(path string) bool) (walkResult, bool) {
	if note == nil || note.At.IsZero() || len(note.Nested) > 0 {
		return walkResult{}, false
	}
	since := note.At.Add(-walkSlack).UnixNano()
	watched := changed != nil
	if watched {
		since = math.MaxInt64
	} else {
		changed = func(string) bool { return false }
	}
	dirs := map[string]bool{}
	var w walkResult
	for _, ent := range entries {
		for d := path.Dir(ent.path); !watched && d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
		if ent.mode&0o170000 != 0o100000 {
			continue
		}
		perm, known := note.Modes[ent.path]
		if ent.ctime >= since || changed(ent.path) {
			e.noteLooks++
			st, err := os.Lstat(filepath.Join(e.root, filepath.FromSlash(ent.path)))
			known = err == nil && st.Mode().IsRegular() && restrictive(st.Mode().Perm())
			if known {
				perm = st.Mode().Perm()
			}
		}
		if known {
			if w.modes == nil {
				w.modes = map[string]fs.FileMode{}
			}
			w.modes[ent.path] = perm
		}
	}
	for d := range dirs {
		if _, err := os.Lstat(filepath.Join(e.root, filepath.FromSlash(d), ".git")); !errors.Is(err, fs.ErrNotExist) {
			return walkResult{}, false
		}
	}
	return w, true
}

// walkTree walks the worktree without following symlinks, skipping the
// write blocklist, restore temporaries and nested repositories. A directory
// it cannot read is skipped: git status reports that problem. Directories
// are read by a few goroutines (one per CPU) and files are stat'ed relative
// to their open directory, so the walk costs about what git status's own
// stat pass does, and runs beside it. With arm, the walk arms a watcher
// as it goes (watch_linux.go): each directory is watched before it is
// read, and what changed since the capture began is recorded. With stats,
// it records the stat data of every regular file and symlink (files).
func walkTree(root string, arm *walkArm, stats bool) walkResult {
	type dirJob struct {
		rel     string // "" is the root
		suspect bool   // a directory above changed since the capture began
	}
	var (
		mu      sync.Mutex
		w       walkResult
		ignores []string
		pending sync.WaitGroup
	)
	if stats {
		w.files = map[string]*walkedDir{}
	}
	fail := func() {
		if stats {
			mu.Lock()
			w.incomplete = true
			mu.Unlock()
		}
	}
	jobs := make(chan dirJob, 1024)
	var queue []dirJob // overflow when jobs is full, so workers never block on each other
	var qmu sync.Mutex
	push := func(j dirJob) {
		pending.Add(1)
		select {
		case jobs <- j:
		default:
			qmu.Lock()
			queue = append(queue, j)
			qmu.Unlock()
		}
	}
	pop := func() (dirJob, bool) {
		qmu.Lock()
		defer qmu.Unlock()
		if len(queue) == 0 {
			return dirJob{}, false
		}
		j := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		return j, true
	}
	visit := func(j dirJob) {
		defer pending.Done()
		dir := root
		if j.rel != "" {
			dir = filepath.Join(root, j.rel)
		}
		if arm != nil {
			arm.enter(j.rel, dir)
		}
		f, err := openDir(dir)
		if err != nil {
			if !gone(err) || j.rel == "" {
				fail()
			}
			if arm != nil && !gone(err) {
				arm.fail(fmt.Sprintf("cannot read %q: %v", j.rel, err))
			}
			return
		}
		defer f.Close()
		suspect := j.suspect
		if arm != nil && !suspect && !arm.watchedAhead(j.rel) {
			if ct, ok := dirCtime(f); !ok || arm.recent(ct) {
				// Entries came or went since the capture began,
				// maybe before the watch: all of it is looked at.
				suspect = true
				arm.replaced(j.rel)
			}
		}
		ents, err := f.ReadDir(-1)
		if err != nil {
			fail()
		}
		if err != nil && arm != nil {
			arm.fail(fmt.Sprintf("cannot read %q: %v", j.rel, err))
		}
		if err != nil && len(ents) == 0 {
			return
		}
		if j.rel != "" {
			for _, d := range ents {
				if d.Name() == ".git" {
					mu.Lock()
					w.nested = append(w.nested, j.rel)
					mu.Unlock()
					if arm != nil && suspect {
						arm.walkNext("a nested repository appeared or went away")
					}
					return
				}
			}
		}
		var modes map[string]fs.FileMode
		var files []walkedName
		if stats {
			files = make([]walkedName, 0, len(ents))
		}
		for _, d := range ents {
			name := d.Name()
			if isBlocked(name) || strings.HasPrefix(name, tmpPrefix) {
				continue
			}
			if name == ".gitignore" {
				rec := join(j.rel, name) + "\x00" + gitignoreDigest(filepath.Join(dir, name))
				mu.Lock()
				ignores = append(ignores, rec)
				mu.Unlock()
			}
			changed := suspect
			switch t := d.Type(); {
			case t.IsDir():
				push(dirJob{join(j.rel, name), suspect})
				continue
			case t.IsRegular():
				st, err := statAt(f, name)
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					// Readable but not searchable, or worse: git
					// cannot look at the file either.
					fail()
				}
				ok := err == nil && st.mode&modeTypeMask == modeRegular
				if perm := fs.FileMode(st.mode & 0o777); ok && restrictive(perm) {
					if modes == nil {
						modes = map[string]fs.FileMode{}
					}
					modes[join(j.rel, name)] = perm
				}
				if ok && stats {
					files = append(files, walkedName{name: name, st: st})
				}
				changed = changed || !ok || (arm != nil && arm.recent(st.ctime))
			case t&fs.ModeSymlink != 0 && stats:
				st, err := statAt(f, name)
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					fail()
				}
				if err == nil && st.mode&modeTypeMask == modeSymlink {
					files = append(files, walkedName{name: name, st: st})
				}
			}
			if arm != nil && changed {
				if name == ".gitignore" {
					arm.walkNext("an ignore file changed")
				}
				arm.changed(join(j.rel, name))
			}
		}
		if stats && len(files) > 0 {
			slices.SortFunc(files, func(a, b walkedName) int { return strings.Compare(a.name, b.name) })
			mu.Lock()
			w.files[j.rel] = &walkedDir{files: files}
			mu.Unlock()
		}
		if len(modes) > 0 {
			mu.Lock()
			if w.modes == nil {
				w.modes = map[string]fs.FileMode{}
			}
			for p, m := range modes {
				w.modes[p] = m
			}
			mu.Unlock()
		}
	}
	push(dirJob{})
	done := make(chan struct{})
	workers := runtime.GOMAXPROCS(0)
	if workers > 4 {
		workers = 4
	}
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if j, ok := pop(); ok {
					visit(j)
					continue
				}
				select {
				case j := <-jobs:
					visit(j)
				case <-done:
					return
				}
			}
		}()
	}
	go func() { pending.Wait(); close(done) }()
	wg.Wait()
	sort.Strings(w.nested)
	sort.Strings(ignores)
	w.gitignores = strings.Join(ignores, "\x00")
	return w
}

// join is the worktree-relative path of name in the directory rel.
func join(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

// gone reports an error opening a directory that is no longer one: it
// was removed or replaced (by a file or a symlink).
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP)
}

// gitignoreDigest identifies a .gitignore's kind and content.
func gitignoreDigest(p string) string {
	st, err := os.Lstat(p)
	if err != nil {
		return "gone"
	}
	if !st.Mode().IsRegular() {
		return st.Mode().Type().String()
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "unreadable " + err.Error()
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// defaultPerm is what a file gets from a tree entry alone: 0755 for an
// executable, else 0644.
func defaultPerm(perm fs.FileMode) fs.FileMode {
	if perm&0o111 != 0 {
		return 0o755
	}
	return 0o644
}

// restrictive reports whether perm lacks a bit its tree mode would grant,
// so restoring the file from the tree alone would make it more open.
func restrictive(perm fs.FileMode) bool {
	def := defaultPerm(perm)
	return perm&def != def
}

// underAny reports whether p is one of dirs or inside one of them.
func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// literalSpecs turns directories into pathspecs matching them and
// everything beneath, with no wildcard interpretation.
func literalSpecs(dirs []string) []string {
	specs := make([]string, len(dirs))
	for i, d := range dirs {
		specs[i] = ":(top,literal)" + d
	}
	return specs
}

// dropNested removes from the private index every entry beneath a nested
// repository, so a directory captured before it became one stops being
// captured. It reports whether anything was removed.
func (e *Engine) dropNested(ctx context.Context, nested []string) (bool, error) {
	if len(nested) == 0 {
		return false, nil
	}
	out, err := e.runPriv(ctx, nil, append([]string{"ls-files", "-z", "--"}, literalSpecs(nested)...)...)
	if err != nil {
		return false, e.captureErr(ctx, "cannot read the private index", err)
	}
	stale := git.SplitZ(out)
	if len(stale) == 0 {
		return false, nil
	}
	in := strings.Join(stale, "\x00") + "\x00"
	if _, err := e.runPriv(ctx, []byte(in), "update-index", "--force-remove", "-z", "--stdin"); err != nil {
		return false, e.captureErr(ctx, "cannot record changed files", err)
	}
	return true, nil
}

// NestedRepos lists the nested repositories and submodules in the worktree
// as it is now (directories holding a .git entry), relative and sorted.
// Captures leave them out and restores leave them alone.
func (e *Engine) NestedRepos() []string {
	return walkTree(e.root, nil, false).nested
}

// LeftAlone splits changes (from Diff) into those a restore applies and the
// nested repositories or submodules, now in the worktree, that it leaves
// alone although the target differs there.
func (e *Engine) LeftAlone(changes []Change) (apply []Change, alone []string) {
	return splitNested(e.root, changes)
}

// splitNested separates the changes beneath (or at) a directory that now
// holds a .git entry.
func splitNested(root string, changes []Change) (apply []Change, alone []string) {
	isRepo := map[string]bool{}
	repoAt := func(dir string) bool {
		v, ok := isRepo[dir]
		if !ok {
			st, err := os.Lstat(filepath.Join(root, dir))
			if err == nil && st.IsDir() {
				_, err = os.Lstat(filepath.Join(root, dir, ".git"))
				v = err == nil
			}
			isRepo[dir] = v
		}
		return v
	}
	seen := map[string]bool{}
	for _, c := range changes {
		if checkPath(c.Path) != nil {
			apply = append(apply, c) // never looked up; a restore rejects it
			continue
		}
		repo := ""
		comps := strings.Split(c.Path, "/")
		for i := 1; i <= len(comps); i++ {
			if d := strings.Join(comps[:i], "/"); repoAt(d) {
				repo = d
				break
			}
		}
		if repo == "" {
			apply = append(apply, c)
			continue
		}
		if !seen[repo] {
			seen[repo] = true
			alone = append(alone, repo)
		}
	}
	sort.Strings(alone)
	return apply, alone
}

// treeWithout returns tree minus every entry at or beneath dirs, written
// through a throwaway index in the state directory.
func (e *Engine) treeWithout(ctx context.Context, tree string, dirs []string) (string, error) {
	if len(dirs) == 0 {
		return tree, nil
	}
	idx := filepath.Join(e.stateDir, "verify-index")
	defer os.Remove(idx)
	defer os.Remove(idx + ".lock")
	r := e.repo.With("GIT_INDEX_FILE=" + idx)
	if _, err := r.Run(ctx, "read-tree", tree); err != nil {
		return "", fmt.Errorf("snapshot: read tree %s: %w", tree, err)
	}
	out, err := r.Run(ctx, append([]string{"ls-files", "-z", "--"}, literalSpecs(dirs)...)...)
	if err != nil {
		return "", fmt.Errorf("snapshot: list %s: %w", tree, err)
	}
	if gone := git.SplitZ(out); len(gone) > 0 {
		in := strings.Join(gone, "\x00") + "\x00"
		if _, err := r.RunInput(ctx, []byte(in), "update-index", "--force-remove", "-z", "--stdin"); err != nil {
			return "", fmt.Errorf("snapshot: edit %s: %w", tree, err)
		}
	}
	out, err = r.Run(ctx, "write-tree")
	if err != nil {
		return "", fmt.Errorf("snapshot: write tree: %w", err)
	}
	return git.Trim(out), nil
}

// ModesRefPrefix is the namespace of the permission records kept beside
// the snapshot refs: refs/yolop/modes/<session>/<name> points at a blob
// listing the captured files whose permissions a tree cannot express.
const ModesRefPrefix = "refs/yolop/modes/"

const modesHeader = "yolop-modes 1"

// encodeModes serialises a permission record: a header naming the tree,
// then "<octal perm> <path>" entries, all NUL-terminated, sorted by path.
func encodeModes(tree string, modes map[string]fs.FileMode) []byte {
	paths := make([]string, 0, len(modes))
	for p := range modes {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var b strings.Builder
	b.WriteString(modesHeader + " " + tree + "\x00")
	for _, p := range paths {
		b.WriteString(strconv.FormatUint(uint64(modes[p]), 8) + " " + p + "\x00")
	}
	return []byte(b.String())
}

// errBadModes marks a permission record that cannot be parsed.
var errBadModes = fault.Plain("snapshot: malformed permission record")

// decodeModes parses a permission record; tree is the tree it describes.
func decodeModes(b []byte) (tree string, modes map[string]fs.FileMode, err error) {
	fields := git.SplitZ(b)
	if len(fields) == 0 || len(b) == 0 || b[len(b)-1] != 0 {
		return "", nil, errBadModes
	}
	head, ok := strings.CutPrefix(fields[0], modesHeader+" ")
	if !ok || !git.IsOID(head) {
		return "", nil, fmt.Errorf("%w: bad header %q", errBadModes, fields[0])
	}
	modes = map[string]fs.FileMode{}
	for _, f := range fields[1:] {
		o, p, ok := strings.Cut(f, " ")
		if !ok || p == "" {
			return "", nil, fmt.Errorf("%w: entry %q", errBadModes, f)
		}
		v, err := strconv.ParseUint(o, 8, 32)
		if err != nil || v > 0o777 {
			return "", nil, fmt.Errorf("%w: permission %q", errBadModes, o)
		}
		if checkPath(p) != nil {
			return "", nil, fmt.Errorf("%w: path %q", errBadModes, p)
		}
		modes[p] = fs.FileMode(v)
	}
	return head, modes, nil
}

// capturedModes keeps of the walk's restrictive permissions those of paths
// the capture holds: an ignored file's permissions are not the snapshot's.
func (e *Engine) capturedModes(ctx context.Context, modes map[string]fs.FileMode) (map[string]fs.FileMode, error) {
	if len(modes) == 0 {
		return nil, nil
	}
	paths := make([]string, 0, len(modes))
	for p := range modes {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	// check-ignore reads the private index (a tracked file is never
	// ignored): the background update rewriting it, and removing the
	// shared part it names, must be done.
	e.waitIndexUpdate()
	in := strings.Join(paths, "\x00") + "\x00"
	out, err := e.runPriv(ctx, []byte(in), "check-ignore", "-z", "--stdin")
	if err != nil {
		var ge *git.Error
		if !errors.As(err, &ge) || ge.ExitCode != 1 { // 1: nothing ignored
			return nil, e.captureErr(ctx, "cannot check ignored files", err)
		}
	}
	kept := make(map[string]fs.FileMode, len(modes))
	for p, m := range modes {
		kept[p] = m
	}
	for _, p := range git.SplitZ(out) {
		delete(kept, p)
	}
	return kept, nil
}

// modesFor returns the restrictive permissions captured with tree: those
// recorded beside every snapshot ref of this session that points at it,
// merged to the narrowest (a file that was 0600 in any capture of this
// exact tree does not come back more open).
func (e *Engine) modesFor(ctx context.Context, tree string) (map[string]fs.FileMode, error) {
	out, err := e.repo.Run(ctx, "for-each-ref", "--format=%(refname)", "--points-at="+tree, RefPrefix+e.sessionID+"/")
	if err != nil {
		return nil, fmt.Errorf("snapshot: find the snapshots of %s: %w", tree, err)
	}
	var names []string
	for _, r := range strings.Split(git.Trim(out), "\n") {
		if n, ok := strings.CutPrefix(r, RefPrefix+e.sessionID+"/"); ok && n != "" {
			names = append(names, e.modesRef(n))
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	out, err = e.repo.RunInput(ctx, []byte(strings.Join(names, "\n")+"\n"), "cat-file", "--batch")
	if err != nil {
		return nil, fmt.Errorf("snapshot: read permission records: %w", err)
	}
	var merged map[string]fs.FileMode
	counted := 0
	for rest := out; len(rest) > 0; {
		line, after, _ := strings.Cut(string(rest), "\n")
		f := strings.Fields(line)
		if len(f) == 2 && f[1] == "missing" {
			// This capture found nothing restrictive: a file it holds
			// gets its tree mode.
			merged = narrow(merged, nil, counted)
			counted++
			rest = []byte(after)
			continue
		}
		if len(f) != 3 || f[1] != "blob" {
			return nil, fmt.Errorf("%w: cat-file answered %q", errBadModes, line)
		}
		n, err := strconv.Atoi(f[2])
		if err != nil || n < 0 || n+1 > len(after) {
			return nil, fmt.Errorf("%w: cat-file answered %q", errBadModes, line)
		}
		t, m, err := decodeModes([]byte(after[:n]))
		if err != nil {
			return nil, err
		}
		if t == tree {
			merged = narrow(merged, m, counted)
			counted++
		}
		rest = []byte(after[n+1:])
	}
	return merged, nil
}

// narrow merges the record m into acc (counted records merged so far),
// keeping for each path only the bits every record grants; a path missing
// from a record had its tree mode there.
func narrow(acc, m map[string]fs.FileMode, counted int) map[string]fs.FileMode {
	if counted == 0 {
		out := map[string]fs.FileMode{}
		for p, v := range m {
			out[p] = v
		}
		return out
	}
	for p, v := range m {
		if old, ok := acc[p]; ok {
			acc[p] = old & v
		} else {
			acc[p] = v // the earlier records had the tree mode, which is wider
		}
	}
	return acc
}

func (e *Engine) modesRef(name string) string { return ModesRefPrefix + e.sessionID + "/" + name }

// guardLink runs before every use of the worktree's repository: a shell
// command may have rewritten the worktree's `.git` file (pointing it at
// another repository, say), and git would then read and write the wrong
// repository. The link is repaired from the repository's own record of the
// worktree (git.CheckWorktreeLink); when that is impossible the call fails
// with the reason and changes nothing.
func (e *Engine) guardLink() error {
	if e.seal != nil {
		if err := git.CheckSeal(e.dirs.GitDir, *e.seal); err != nil {
			return &CaptureError{Reason: "the worktree's git configuration changed", Err: err}
		}
	}
	if !e.linked {
		return nil
	}
	r, err := git.CheckWorktreeLink(e.root, e.commonDir)
	if err != nil {
		return &CaptureError{Reason: "the worktree's .git link is broken and could not be repaired", Err: err}
	}
	if r.Repaired {
		was := r.Was
		if was == "" {
			was = "nothing: it was deleted"
		}
		e.notesMu.Lock()
		e.linkNotes = append(e.linkNotes, fmt.Sprintf("the worktree's .git file had been changed by a command (it held %q); yolop pointed it back at the session's repository (%s), and touched nothing else", was, r.AdminDir))
		e.notesMu.Unlock()
	}
	return nil
}

// LinkRepairs returns, once, a note for each repair of the worktree's
// `.git` link since the last call.
func (e *Engine) LinkRepairs() []string {
	e.notesMu.Lock()
	defer e.notesMu.Unlock()
	n := e.linkNotes
	e.linkNotes = nil
	return n
}
