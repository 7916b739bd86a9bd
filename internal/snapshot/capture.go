package snapshot

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/git"
)

// capture updates the private index from the worktree and writes its tree.
// With walk, or when no watcher vouches for the paths changed since the
// last capture, it walks the whole worktree (status and the Go walk);
// otherwise it looks at the changed paths only (watched.go). The caller
// holds e.mu.
func (e *Engine) capture(ctx context.Context, walk bool) (string, error) {
	// Whatever the capture records was looked at after this moment: a
	// walk that arms the watcher counts what changed since as changed.
	e.captureStart = time.Now()
	e.waitIndexUpdate()
	defer ownerOnly(e.privIndex, e.privDir)
	ctx, cancel := context.WithTimeout(ctx, e.budget)
	defer cancel()
	ch := changes{full: "no watcher"}
	prewatched := e.prewatched
	e.prewatched = false
	leftToWatcher, took := prewatched && e.knownClean && !walk, false
	switch {
	case leftToWatcher:
		// The watcher was armed before the proof this capture is
		// derived from: what it saw since (the claim's checkout, and
		// anything else) is left to the next capture, which then needs
		// no walk. Were the capture not derived after all, it walks,
		// and the next one looks again at those paths as well.
		ch.full = "derived from the proof that the worktree is clean"
	case e.watch != nil:
		// The barrier comes first: whatever changes after it is
		// recorded for the next capture, whatever this one sees.
		ch, took = e.watch.take(ctx), true
		if walk && ch.full == "" {
			ch.full = "asked to walk"
		}
		if e.watchOnce && ch.full == "" {
			// The change set is this capture's: the watcher has done
			// what it was kept for, and its teardown's grace period
			// starts now, beside the capture and what follows it.
			e.letWatchGo()
		}
	}
	if !leftToWatcher && e.knownWalk != nil && e.knownWalk.Watched {
		// The watcher the walk was made under is not this capture's
		// to ask (it is not the engine's, or this capture took what it
		// saw): inode times say what to look at again.
		kw := *e.knownWalk
		kw.Watched = false
		e.knownWalk = &kw
	}
	derived := e.derivedCaptures
	tree, err := e.captureOnce(ctx, ch)
	for try := 0; try < changedRetries && err != nil && ctx.Err() == nil && errors.Is(err, errChangedUnderCapture); try++ {
		// Something (a background command) turned a file into a
		// directory while this capture recorded it: what it listed is
		// stale, so look again, all of it.
		tree, err = e.captureOnce(ctx, changes{full: "a path changed kind while the last capture recorded it"})
	}
	if err != nil && ctx.Err() == nil && indexCorrupt(err) {
		// The private index is only a cache; a damaged one is rebuilt.
		if rerr := e.removeIndex(); rerr == nil {
			tree, err = e.captureOnce(ctx, changes{full: "the private index was rebuilt"})
		}
	}
	if err == nil {
		e.lastCapture = time.Now()
	}
	if err == nil && took && e.derivedCaptures > derived && e.watch != nil {
		// Derived from the proof, the capture recorded the tree the
		// proof saw, not what the watcher handed over since (a first
		// capture asked to walk, or a watcher armed after the proof):
		// the next one must look at all of it.
		e.watch.invalidate("a capture derived from the proof left aside what the watcher had seen")
	}
	if err != nil && e.watch != nil {
		// What the failed capture took from the watcher is lost, and
		// the private index may be half updated: the next one walks.
		e.watch.invalidate("the last capture failed")
	}
	if err != nil && ctx.Err() != nil {
		// A git process killed at the deadline may leave our own lock
		// behind; nothing else uses the private index (e.mu), so drop it.
		_ = os.Remove(e.privIndex + ".lock")
	}
	return tree, err
}

// changedRetries is how many times a capture that raced a change of a
// path's kind is tried again before it fails.
const changedRetries = 3

// errChangedUnderCapture marks a capture that a concurrent change made
// fail: a listed file was a directory when git came to record it.
var errChangedUnderCapture = fault.Plain("snapshot: a path changed kind during the capture")

func indexCorrupt(err error) bool {
	var ge *git.Error
	if !errors.As(err, &ge) {
		return false
	}
	s := ge.Stderr
	return strings.Contains(s, "index file corrupt") || strings.Contains(s, "bad signature") ||
		strings.Contains(s, "index file smaller than expected") || strings.Contains(s, "sharedindex") ||
		strings.Contains(s, "bad index version") ||
		// A write of the private index that fails for no reason git names
		// (seen when the index a killed process was writing is met by
		// the repair's first capture): rebuilding it is what is left.
		strings.Contains(s, "Unable to write new index file") ||
		// Objects the index names were pruned (refs deleted by hand, then
		// git gc): rehashing the worktree writes them again.
		strings.Contains(s, "invalid object") || strings.Contains(s, "error building trees")
}

func (e *Engine) removeIndex() error {
	e.seedIsHead, e.seedBase, e.seedCache = false, nil, nil
	e.rules, e.rulesLoaded = nil, true
	for _, p := range []string{e.privIndex, e.privIndex + ".settle", e.privIndex + ".lock", e.rulesFile()} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

func (e *Engine) captureOnce(ctx context.Context, ch changes) (string, error) {
	if err := writeIfChanged(filepath.Join(e.privDir, "info", "exclude"), []byte(e.excludeTextFresh())); err != nil {
		return "", e.fileErr("cannot prepare the private git directory", err)
	}
	_, err := os.Stat(e.privIndex)
	seeding := err != nil
	if seeding && ch.full == "" {
		ch.full = "the private index is being seeded"
	}
	var early *pendingWalk
	if ch.full != "" && !e.knownClean {
		// This capture walks, whatever else it finds: the walk starts
		// now, beside the seed or the settling that come before the
		// status it runs beside. A capture that fails first still waits
		// for it, so that no walk arms the watcher behind its back.
		// A seeding walk keeps the stat data it finds (seedstat.go).
		early = e.startWalk(seeding && seedStatOS && !e.noSeedStat)
		defer early.wait()
		// The walk is the capture's longest step: it gets this
		// processor now, and what follows here takes the next one
		// free. On two cores the other is often busy (the count of the
		// user's inotify watches, a background fsync), and the walk's
		// goroutine waited 1-3 ms for it.
		runtime.Gosched()
	}
	if seeding {
		// One read of the real index serves the seed and its rules;
		// when it fails, the paths that read the file report why.
		if snap, err := readIndexSnap(e.realIndex, e.hashSize()); err == nil {
			e.realSnap = snap
			defer func() { e.realSnap = nil }()
		}
		// A new private index starts from the real one: whatever was
		// reconciled before is no longer there.
		if err := os.Remove(e.rulesFile()); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", e.fileErr("cannot reset the private index", err)
		}
		e.rules, e.rulesLoaded = nil, true
	}
	if !e.rulesLoaded {
		e.rules, e.rulesLoaded = e.loadRules(), true
	}
	e.realKey, e.realSet = e.realIndexSet(e.rules)
	if stamp := e.ignoreStamp() + "\x00" + e.realSet; stamp != e.lastIgnore {
		// A rule from outside the worktree changed, or what the
		// repository tracks: what is captured changed everywhere, not
		// at the paths the watcher saw.
		if ch.full == "" {
			ch.full = "an ignore rule outside the worktree, or what the repository tracks, changed"
		}
		e.lastIgnore = stamp
	}
	derive, err := e.ensureIndex(ctx)
	if err != nil {
		return "", err
	}
	// A seed made by this capture is not settled first: its status
	// re-hashes the racily clean entries anyway, and the capture's own
	// index write (below, or the background update of a tree edit) settles
	// them, as any index write does: git re-checks every entry racy with
	// respect to the index it read before writing a newer one.
	if e.seededNow {
		e.seededNow, e.seedWhole = false, true
		defer func() { e.seedWhole = false }()
	} else if err := e.settle(ctx); err != nil {
		return "", err
	}
	// Only one Engine uses a state dir at a time, but the file, not memory,
	// is what status compares with.
	headKnown := e.headIsTree && e.headFileIs(e.head)
	if ch.full == "" && len(e.lastLeftOut) > 0 {
		// Which files are left out for their size is what a whole status
		// lists; a watched change set does not say.
		ch.full = "files are left out for their size"
	}
	if ch.full == "" && !derive {
		switch {
		case !headKnown:
			ch.full = "no captured tree to start from"
		case e.indexStale:
			ch.full = "the private index did not catch up"
		case !e.walkKnown:
			ch.full = "no walk to start from"
		case e.rules == nil:
			ch.full = "the ignore rules are not reconciled yet"
		default:
			tree, err := e.watchedTree(ctx, ch)
			if err == nil {
				e.watchedCaptures++
				return tree, nil
			}
			if !errors.Is(err, errNotWatched) {
				return "", err
			}
			ch.full = "the change set is too large"
		}
	}
	e.walkedCaptures++
	e.lastWalkReason = ch.full
	tree, err := e.walkedCapture(ctx, derive, headKnown, early)
	if err == nil {
		e.walkKnown = true
		e.indexStale = false
	}
	return tree, err
}

// walkedCapture is the capture that looks at the whole worktree: git
// status against the private index beside the Go walk. early is the walk
// when the capture started it already (nil: it starts here).
func (e *Engine) walkedCapture(ctx context.Context, derive, headKnown bool, early *pendingWalk) (string, error) {
	// The walk finds what status cannot report: nested repositories where
	// captured files used to be, and permissions a tree cannot hold. It
	// runs while git stats the same files.
	walked := early
	if derive {
		// The status that proved the worktree clean compared every file
		// with the very entries the private index now holds: its tree
		// is the worktree's, unless a nested repository hides entries.
		var changed func(string) bool
		if e.knownWalk != nil && e.knownWalk.Watched && e.watch != nil {
			// nil when the watcher cannot vouch: inode times decide.
			changed, _ = e.watch.peek(ctx)
		}
		if w, ok := e.walkFromNote(e.knownWalk, e.seedEntries, changed); ok && e.seedEntries != nil {
			e.noteWalks++
			walked = walkDone(w)
		} else if walked == nil {
			walked = e.startWalk(false)
		}
		entries := e.seedEntries
		e.knownWalk, e.seedEntries = nil, nil
		out, err := e.runPriv(ctx, nil, "write-tree")
		w := walked.wait()
		if err != nil {
			return "", e.captureErr(ctx, "cannot write the snapshot tree", err)
		}
		if len(w.nested) == 0 {
			if e.noteWalks > 0 && w.gitignores == "" {
				// Known clean: every .gitignore is an entry.
				w.gitignores = entryGitignores(e.root, entries)
			}
			// The private index is the real one: nothing to reconcile.
			rules := &rulesState{stamp: rulesStamp(e.ignoreStamp(), w.gitignores, e.realSet), realKey: e.realKey, realSet: e.realSet, tracked: map[string]bool{}}
			if err := e.saveRules(rules); err != nil {
				return "", e.fileErr("cannot write private state", err)
			}
			e.rules, e.seededReal = rules, false
			e.lastWalk = w
			e.derivedCaptures++
			tree := git.Trim(out)
			e.setHead(tree)
			return tree, nil
		}
	} else if walked == nil {
		walked = e.startWalk(false)
	}
	var paths []string
	var indexDiffers bool
	var w walkResult
	compared := false
	statusDone := func() {
		if e.onStatus != nil {
			e.onStatus()
		}
	}
	if src := e.seedStat; src != nil {
		// The seed is the user's index unchanged: the walk's stat data
		// stand for a status's, and git lists only the untracked files
		// (seedstat.go).
		e.seedStat = nil
		statusDone()
		statusDone = func() {}
		w = walked.wait()
		var others []string
		paths, others, compared = seedChanged(src.snap, src.entries, w, e.maxFileSize)
		if compared && len(others) > 0 {
			untracked, err := e.untrackedFiles(ctx, others)
			if err != nil {
				return "", err
			}
			paths = append(paths, untracked...)
		} else if compared {
			e.lastUntracked = nil
		}
		if compared {
			e.statusless, e.statuslessRoot = true, src.root
			e.statuslessCaptures++
		}
	}
	if !compared {
		var err error
		paths, indexDiffers, err = e.changedPaths(ctx)
		statusDone()
		w = walked.wait()
		if err != nil {
			return "", err
		}
	}
	// The stat data served their turn; the rest of the walk is kept.
	w.files = nil
	e.lastWalk = w
	if len(w.nested) > 0 {
		kept := paths[:0]
		for _, p := range paths {
			if !underAny(p, w.nested) {
				kept = append(kept, p)
			}
		}
		paths = kept
		dropped, err := e.dropNested(ctx, w.nested)
		if err != nil {
			return "", err
		}
		// The index no longer holds the private HEAD's tree.
		indexDiffers = indexDiffers || dropped
	}
	// The rules decide what the private index may hold (rules.go).
	rules := e.rules
	seededReal := e.seededReal
	e.seededReal = false
	stamp := rulesStamp(e.ignoreStamp(), w.gitignores, e.realSet)
	switch {
	case e.folder:
		// A folder has no repository besides the session's own: what
		// its private index holds is what is tracked (folder.go).
		rules = &rulesState{stamp: stamp, realKey: e.realKey, realSet: e.realSet, tracked: map[string]bool{}}
	case rules == nil && seededReal:
		// The private index was just copied from the real one: it
		// holds what the repository tracks, and status adds only what
		// the rules let through.
		rules = &rulesState{stamp: stamp, realKey: e.realKey, realSet: e.realSet, tracked: map[string]bool{}}
	case rules == nil || rules.stamp != stamp:
		rules = &rulesState{stamp: stamp, realKey: e.realKey, realSet: e.realSet}
		add, dropped, err := e.reconcileRules(ctx, w.nested, rules)
		if err != nil {
			return "", err
		}
		if len(dropped) > 0 {
			gone := map[string]bool{}
			for _, p := range dropped {
				gone[p] = true
			}
			kept := paths[:0]
			for _, p := range paths {
				if !gone[p] {
					kept = append(kept, p)
				}
			}
			paths = kept
			indexDiffers = true
		}
		// Ignored files are written to the index at once (no tree edit
		// with a background update): were that update lost with the
		// process, status would not list them again.
		indexDiffers = indexDiffers || len(add) > 0
		paths = mergePaths(paths, add)
	default:
		// A copy: a failed capture must find them as they were.
		rules = rules.clone()
		back := e.recreatedTracked(rules)
		indexDiffers = indexDiffers || len(back) > 0 // at once, as above
		paths = mergePaths(paths, back)
		if err := e.noteTrackedGone(ctx, rules, paths); err != nil {
			return "", err
		}
	}
	// Files over Options.MaxFileSize are left out of the snapshot: an
	// untracked one is not added, one the index holds is dropped from it.
	var dropTracked []string
	paths, e.lastLeftOut, dropTracked = e.dropLarge(paths)
	if len(dropTracked) > 0 {
		indexDiffers = true // the fast tree edit would hash them
	}
	tree, err := e.walkedTree(ctx, paths, dropTracked, indexDiffers, headKnown)
	if err != nil {
		return "", err
	}
	if err := e.saveRules(rules); err != nil {
		return "", e.fileErr("cannot write private state", err)
	}
	e.rules = rules
	return tree, nil
}

// pendingWalk is a walk started before the capture knows what else it
// does; wait returns its result, as often as asked.
type pendingWalk struct {
	done chan struct{}
	w    walkResult
}

// startWalk starts the walk of the worktree beside whatever comes next.
func (e *Engine) startWalk(stats bool) *pendingWalk {
	p := &pendingWalk{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.w = e.walk(stats)
	}()
	return p
}

// walkDone is a walk already made.
func walkDone(w walkResult) *pendingWalk {
	p := &pendingWalk{done: make(chan struct{}), w: w}
	close(p.done)
	return p
}

func (p *pendingWalk) wait() walkResult {
	<-p.done
	return p.w
}

// walk walks the worktree beside the capture's status. A watcher waiting
// for a walk to arm it (WatchOptions.ArmWithWalk) is armed by this one.
// With stats the walk keeps the stat data of the files it finds.
func (e *Engine) walk(stats bool) walkResult {
	var arm *walkArm
	if e.watch != nil {
		arm = e.watch.walkArm(e.captureStart)
	}
	if arm != nil {
		arm.onEnter = e.onWalkDir
	}
	w := walkTree(e.root, arm, stats)
	if arm != nil {
		arm.finish()
	}
	return w
}

// mergePaths adds more to the sorted-or-not paths, without duplicates.
func mergePaths(paths, more []string) []string {
	if len(more) == 0 {
		return paths
	}
	seen := map[string]bool{}
	for _, p := range paths {
		seen[p] = true
	}
	for _, p := range more {
		if !seen[p] {
			paths = append(paths, p)
			seen[p] = true
		}
	}
	return paths
}

// walkedTree writes the tree from the private HEAD and the paths the walk
// found changed.
func (e *Engine) walkedTree(ctx context.Context, paths, dropTracked []string, indexDiffers, headKnown bool) (string, error) {
	if len(paths) == 0 && !indexDiffers && headKnown && e.headIsTree {
		// status compared the worktree with the index and the index with
		// the private HEAD, the last captured tree, and found no
		// difference: write-tree would only read the index to return it.
		return e.head, nil
	}
	// The tree the index holds when it shows no difference with the
	// private HEAD: HEAD itself, or before the first capture the tree of
	// the worktree's HEAD commit.
	base := ""
	// The seeded index's entries, which stand for base wherever status
	// shows no difference: the first capture computes base's trees from
	// them instead of reading them from the object store.
	seed, cached := e.seedBase, e.seedCache
	e.seedBase, e.seedCache = nil, nil
	hinted := false
	// Without a status nothing compared the seed with base (seedstat.go).
	statusless, seedRoot := e.statusless, e.statuslessRoot
	e.statusless, e.statuslessRoot = false, ""
	if !indexDiffers {
		switch {
		case headKnown && e.headIsTree:
			base = e.head
		case !e.headIsTree && e.head != "" && e.seedIsHead && e.headFileIs(e.head):
			if seed != nil && len(paths) > 0 && e.commitTree[0] == e.head {
				// HEAD's tree as Open's look found it. HEAD may have
				// moved between that look's two lookups of it, so the
				// edit takes this tree only if the seed's own tree
				// (the index the status compared) is it. A clean
				// worktree's capture is that tree itself: git says.
				base, hinted = e.commitTree[1], true
			} else {
				base = e.headCommitTree(ctx)
			}
		default:
			seed = nil
		}
	} else {
		seed = nil
	}
	if len(paths) == 0 && base != "" && !e.headIsTree && (!statusless || base == seedRoot) {
		// A first capture of a clean worktree: its tree is the commit's
		// (without a status, when the seed's cache tree says its own
		// tree is).
		e.setHead(base)
		return base, nil
	}
	if base != "" {
		// The index holds base exactly, so editing that tree at the
		// listed paths gives the worktree's tree without reading the
		// index; the index catches up in the background.
		rule := seedTrusted
		switch {
		case statusless:
			rule = seedOnly
		case hinted:
			rule = seedHint
		}
		tree, err := e.fastTreeFrom(ctx, base, seed, cached, rule, paths, false)
		if err == nil {
			e.treeEdits++
			e.setHead(tree)
			if e.head == tree {
				e.startIndexUpdate(paths, e.fastDeleted)
			}
			return tree, nil
		}
		if !errors.Is(err, errNotFast) {
			return "", err
		}
	}
	return e.indexTree(ctx, paths, dropTracked)
}

// headCommitTree is the tree of the HEAD commit the private HEAD names
// ("" when git cannot say).
func (e *Engine) headCommitTree(ctx context.Context) string {
	out, err := e.runPriv(ctx, nil, "rev-parse", "--verify", "--quiet", e.head+"^{tree}")
	if err != nil {
		return ""
	}
	return git.Trim(out)
}

// indexTree records the listed paths in the private index, removes the
// paths of drop from it, and writes its tree.
func (e *Engine) indexTree(ctx context.Context, paths, drop []string) (string, error) {
	// A path whose parent became a symlink is gone from the tree, but
	// update-index --remove refuses to look beyond the link: drop those
	// entries without looking. This is rare, so it usually costs nothing.
	var normal []string
	beyond := drop
	for _, p := range paths {
		if e.beyondSymlink(p) {
			beyond = append(beyond, p)
		} else {
			normal = append(normal, p)
		}
	}
	// One after the other, never piped: status may hold the index lock.
	for _, batch := range []struct {
		paths []string
		args  []string
	}{
		{beyond, []string{"update-index", "--force-remove", "-z", "--stdin"}},
		{normal, []string{"update-index", "--add", "--remove", "--replace", "-z", "--stdin"}},
	} {
		if len(batch.paths) == 0 {
			continue
		}
		in := strings.Join(batch.paths, "\x00") + "\x00"
		if _, err := e.runPriv(ctx, []byte(in), batch.args...); err != nil {
			return "", e.captureErr(ctx, "cannot record changed files", err)
		}
	}
	out, err := e.runPriv(ctx, nil, "write-tree")
	if err != nil {
		return "", e.captureErr(ctx, "cannot write the snapshot tree", err)
	}
	if len(paths) > 0 {
		e.settled() // update-index wrote the index
	}
	tree := git.Trim(out)
	e.setHead(tree)
	return tree, nil
}

// settled drops the settle marker once an index write has settled the
// seed's racily clean entries.
func (e *Engine) settled() {
	// A marker left behind only costs one refresh.
	_ = os.Remove(e.privIndex + ".settle")
}

// headFileIs reports whether the private HEAD file names oid.
func (e *Engine) headFileIs(oid string) bool {
	b, err := os.ReadFile(filepath.Join(e.privDir, "HEAD"))
	return err == nil && strings.TrimSpace(string(b)) == oid
}

// setHead points the private HEAD at tree, so that the next status compares
// the index with the tree it last produced: that comparison then costs
// nothing (the index's cache tree matches HEAD everywhere) and an empty
// status proves the tree unchanged. HEAD is only a cache; when it cannot be
// written it keeps naming what it named, and e.head with it.
func (e *Engine) setHead(tree string) {
	if tree == e.head && e.headIsTree && e.headFileIs(tree) {
		return
	}
	if err := writeIfChanged(filepath.Join(e.privDir, "HEAD"), []byte(tree+"\n")); err == nil {
		e.head, e.headIsTree = tree, true
	}
}

// beyondSymlink reports whether one of p's parent directories is a symlink
// (or not a directory at all).
func (e *Engine) beyondSymlink(p string) bool {
	dir := filepath.Dir(p)
	if dir == "." {
		return false
	}
	for d := dir; d != "." && d != "/"; d = filepath.Dir(d) {
		st, err := os.Lstat(filepath.Join(e.root, d))
		if err == nil && !st.IsDir() {
			return true
		}
	}
	return false
}

// excludeTextFresh re-reads the repository's info/exclude so an edit made
// during the session is honoured by the next capture.
func (e *Engine) excludeTextFresh() string {
	if e.folder {
		// The folder's .yolopignore, read again for every capture.
		e.excludes = folderIgnoreText(e.root)
		return e.excludeText()
	}
	if b, err := os.ReadFile(filepath.Join(e.commonDir, "info", "exclude")); err == nil {
		e.excludes = string(b)
	} else {
		e.excludes = ""
	}
	return e.excludeText()
}

// changedPaths lists the paths whose worktree state differs from the private
// index, including untracked non-ignored files, excluding nested
// repositories and blocklisted paths. indexDiffers reports that the index
// itself differs from the private HEAD.
func (e *Engine) changedPaths(ctx context.Context) (paths []string, indexDiffers bool, err error) {
	args := []string{"status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--ignore-submodules=all"}
	if e.seedWhole {
		// The seed's first status leaves the index whole: converting
		// it to a split index would write all of it once more, and
		// the update that follows the capture writes it anyway.
		e.seedWhole = false
		args = append([]string{"-c", "core.splitIndex=false"}, args...)
	}
	out, err := e.runPriv(ctx, nil, args...)
	if err != nil {
		var ge *git.Error
		if errors.As(err, &ge) && strings.Contains(ge.Stderr, "HEAD") && ctx.Err() == nil {
			// The tree in the private HEAD is gone (pruned while no ref
			// held it); compare with the worktree's HEAD commit instead.
			if herr := e.refreshHead(ctx); herr == nil {
				out, err = e.runPriv(ctx, nil, args...)
			}
		}
		if err != nil {
			return nil, false, e.captureErr(ctx, "cannot list changed files", err)
		}
	}
	paths, indexDiffers = parseStatus(out)
	e.lastUntracked = nil
	if e.maxFileSize > 0 {
		e.lastUntracked = untrackedOf(out)
	}
	return paths, indexDiffers, nil
}

// untrackedOf returns the untracked paths of a `status --porcelain=v1 -z`.
func untrackedOf(out []byte) map[string]bool {
	u := map[string]bool{}
	fields := git.SplitZ(out)
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 4 {
			continue
		}
		if f[0] == 'R' || f[0] == 'C' {
			i++
		}
		if f[0] == '?' {
			u[f[3:]] = true
		}
	}
	return u
}

// dropLarge takes out of paths the regular files larger than
// Options.MaxFileSize: leftOut names them all (sorted), tracked those the
// private index holds (to be removed from it).
func (e *Engine) dropLarge(paths []string) (kept, leftOut, tracked []string) {
	if e.maxFileSize <= 0 {
		return paths, nil, nil
	}
	kept = paths[:0:0]
	for _, p := range paths {
		st, err := os.Lstat(filepath.Join(e.root, filepath.FromSlash(p)))
		if err != nil || !st.Mode().IsRegular() || st.Size() <= e.maxFileSize {
			kept = append(kept, p)
			continue
		}
		leftOut = append(leftOut, p)
		if !e.lastUntracked[p] {
			tracked = append(tracked, p)
		}
	}
	sort.Strings(leftOut)
	return kept, leftOut, tracked
}

// refreshHead points the private HEAD at the worktree's HEAD commit.
func (e *Engine) refreshHead(ctx context.Context) error {
	out, err := e.repo.Run(ctx, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		return err
	}
	commit := git.Trim(out)
	if err := writeIfChanged(filepath.Join(e.privDir, "HEAD"), []byte(commit+"\n")); err != nil {
		return err
	}
	e.head, e.headIsTree = commit, false
	return nil
}

// parseStatus extracts from `status --porcelain=v1 -z` the paths that
// update-index must look at: worktree-side changes, untracked files and
// unmerged entries. indexDiffers reports any index-side change (the index
// differs from HEAD), whatever the path.
func parseStatus(out []byte) (paths []string, indexDiffers bool) {
	fields := git.SplitZ(out)
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 4 {
			continue
		}
		x, y, p := f[0], f[1], f[3:]
		if x == 'R' || x == 'C' {
			i++ // the source path follows
		}
		if x != ' ' && x != '?' && x != '!' {
			indexDiffers = true
		}
		unmerged := x == 'U' || y == 'U' || (x == 'A' && y == 'A') || (x == 'D' && y == 'D')
		if y == ' ' && !unmerged {
			continue
		}
		if strings.HasSuffix(p, "/") || excludedPath(p) {
			// A directory entry is a nested repository: left alone.
			continue
		}
		paths = append(paths, p)
	}
	return paths, indexDiffers
}

// excludedPath reports whether a worktree-relative path is blocklisted or a
// restore temporary.
// It is asked of every entry of the user's index when the private index is
// seeded, so it looks at the components in place.
func excludedPath(p string) bool {
	for p != "" {
		c := p
		if i := strings.IndexByte(p, '/'); i >= 0 {
			c, p = p[:i], p[i+1:]
		} else {
			p = ""
		}
		if isBlocked(c) || strings.HasPrefix(c, tmpPrefix) {
			return true
		}
	}
	return false
}

func isBlocked(component string) bool {
	if len(component) == 4 && strings.EqualFold(component, ".git") {
		return true
	}
	for _, b := range Blocklist {
		if component == b {
			return true
		}
	}
	return false
}

// ensureIndex seeds the private index when it does not exist yet. derive
// reports that the seed may stand for the worktree without a status (see
// Options.KnownClean).
func (e *Engine) ensureIndex(ctx context.Context) (derive bool, err error) {
	// The proof is about the worktree as the session started: it holds
	// for the first capture only, never for a seed made later (after a
	// damaged private index was dropped).
	knownClean := e.knownClean
	e.knownClean = false
	if _, err := os.Stat(e.privIndex); err == nil {
		e.knownWalk = nil
		return false, nil
	}
	seeded, flagged := false, false
	if e.folder || !e.conversionConfigured() {
		snap := e.realSnap
		var ok bool
		var err error
		if snap != nil {
			ok, err = true, writeSeed(snap, e.privIndex)
		} else {
			ok, err = copyPreservingMtime(e.realIndex, e.privIndex)
		}
		if err != nil {
			return false, e.fileErr("cannot copy the worktree index", err)
		}
		if ok {
			f, attrs, err := e.cleanSeed(ctx, snap)
			if err != nil {
				_ = os.Remove(e.privIndex)
				return false, err
			}
			// A tracked .gitattributes may convert content: the stat data
			// of the real index cannot stand for the bytes on disk.
			// A folder's index is yolop's own, of raw bytes.
			seeded, flagged = !attrs || e.folder, f
			e.seededReal = seeded
			if !seeded {
				if err := os.Remove(e.privIndex); err != nil {
					return false, e.fileErr("cannot reset the private index", err)
				}
			}
		}
	}
	if !seeded {
		// No stat data: every file is hashed once, as raw bytes.
		_, err := e.runPriv(ctx, nil, "read-tree", "HEAD")
		if err != nil && ctx.Err() == nil {
			// The private HEAD's tree may be gone; the worktree's commit is not.
			if herr := e.refreshHead(ctx); herr == nil {
				_, err = e.runPriv(ctx, nil, "read-tree", "HEAD")
			}
		}
		if err != nil {
			return false, e.captureErr(ctx, "cannot build the private index", err)
		}
		if flagged, _, err = e.cleanSeed(ctx, nil); err != nil {
			_ = os.Remove(e.privIndex)
			return false, err
		}
	}
	// Only a seed made in this process, with nothing pruned, is known to
	// hold the HEAD commit's tree wherever status shows no difference.
	e.seedIsHead = !e.seedPruned
	e.seedBase = nil
	if e.seedIsHead {
		e.seedBase = e.seedEntries
	} else {
		e.seedCache = nil
	}
	derive = seeded && knownClean && !flagged && e.pinnedConfig(ctx)
	e.seedStat = nil
	if seeded && !flagged && !derive && !e.folder && e.seedIsHead && !e.headIsTree && e.head != "" && seedStatOS && !e.noSeedStat && canCompareSeed(e.realSnap, e.seedEntries) {
		src := &seedSource{snap: e.realSnap, entries: e.seedEntries}
		if c, ok := e.seedCache[""]; ok && c.count == len(src.entries) && !anyIntentToAdd(src.entries) {
			src.root = hex.EncodeToString([]byte(c.oid))
		}
		e.seedStat = src
	}
	if !derive {
		e.seedEntries, e.knownWalk = nil, nil
	}
	if seeded && (e.seedSettled || derive) {
		return derive, nil
	}
	if err := os.WriteFile(e.privIndex+".settle", nil, 0o600); err != nil {
		return false, e.fileErr("cannot write private state", err)
	}
	e.seededNow = true
	return false, nil
}

// pinnedConfig reports whether the repository's settings that decide what
// a status compares are what the engine pins for its own statuses
// (privConfig): core.fileMode, core.symlinks, core.trustCtime (true),
// core.ignoreCase (false) and core.checkStat (default). Only then does a
// status run with the repository's settings prove what the engine's would,
// and refresh the inode time of every entry whose inode changed. Unknown is
// false.
func (e *Engine) pinnedConfig(ctx context.Context) bool {
	out, err := e.repo.Run(ctx, "config", "-z", "--get-regexp", `^core\.(filemode|symlinks|trustctime|ignorecase|checkstat)$`)
	if err != nil {
		var ge *git.Error
		// 1: none is set; git's defaults are the pinned values.
		return errors.As(err, &ge) && ge.ExitCode == 1
	}
	for _, kv := range git.SplitZ(out) {
		k, v, hasValue := strings.Cut(kv, "\n")
		v = strings.ToLower(strings.TrimSpace(v))
		// A key without a value is true.
		truth := !hasValue || v == "true" || v == "yes" || v == "on" || v == "1"
		switch strings.ToLower(k) {
		case "core.checkstat":
			if v != "default" {
				return false
			}
		case "core.ignorecase":
			if truth || (v != "false" && v != "no" && v != "off" && v != "0") {
				return false
			}
		default:
			if !truth {
				return false
			}
		}
	}
	return true
}

// cleanSeed removes from a freshly seeded private index what the real index
// may carry but a snapshot must not: assume-unchanged and skip-worktree flags
// (their edits would be invisible), submodules, blocklisted paths, and a
// split-index link to a shared index that only exists in the real git dir.
// flagged reports that it found assume-unchanged or skip-worktree entries,
// attrs that the index tracks a .gitattributes file. from is what the
// private index was just written from (nil: read the file).
func (e *Engine) cleanSeed(ctx context.Context, from *indexSnap) (flagged, attrs bool, err error) {
	// The shared index of a split real index lives in the real git dir;
	// reading it there and writing a whole index breaks the link.
	var split bool
	if from != nil {
		split, err = splitLink(e.privIndex, from.data)
	} else {
		split, err = hasSplitLink(e.privIndex)
	}
	if err != nil {
		return false, false, &CaptureError{Reason: "cannot read the worktree index", Err: err}
	} else if split {
		r := e.repo.With("GIT_INDEX_FILE=" + e.privIndex)
		if _, err := r.Run(ctx, "-c", "core.splitIndex=false", "update-index", "--no-split-index"); err != nil {
			return false, false, e.captureErr(ctx, "cannot convert the split worktree index", err)
		}
	}
	var assumed, skipped, remove []string
	e.seedEntries, e.seedCache = nil, nil
	var entries []indexEntry
	if from != nil && !split {
		// The file holds exactly from's bytes.
		entries, err = from.entries, from.err
		if err == nil {
			e.seedCache = parseCacheTree(from.data, from.ext, e.hashSize())
		}
	} else {
		entries, err = readIndexFile(e.privIndex, e.hashSize())
	}
	if err == nil {
		kept := entries[:0]
		for _, ent := range entries {
			attrs = attrs || isAttributes(ent.path)
			switch {
			case ent.mode == 0o160000 || excludedPath(ent.path):
				remove = append(remove, ent.path)
				continue
			case ent.assumed:
				assumed = append(assumed, ent.path)
			}
			if ent.skipWorktree {
				skipped = append(skipped, ent.path)
			}
			kept = append(kept, ent)
		}
		e.seedEntries = kept
	} else {
		out, err := e.runPriv(ctx, nil, "ls-files", "-s", "-v", "-z")
		if err != nil {
			return false, false, e.captureErr(ctx, "cannot read the private index", err)
		}
		for _, f := range git.SplitZ(out) {
			// "<tag> <mode> <oid> <stage>\t<path>"
			meta, path, ok := strings.Cut(f, "\t")
			if !ok || len(meta) < 2 {
				continue
			}
			attrs = attrs || isAttributes(path)
			tag := meta[0]
			if strings.Contains(meta, " 160000 ") || excludedPath(path) {
				remove = append(remove, path)
				continue
			}
			if tag >= 'a' && tag <= 'z' {
				assumed = append(assumed, path)
			}
			if tag == 'S' || tag == 's' {
				skipped = append(skipped, path)
			}
		}
	}
	flagged = len(assumed) > 0 || len(skipped) > 0
	// The index then lacks entries of the HEAD commit's tree that status
	// does not report (a submodule's, with --ignore-submodules=all).
	e.seedPruned = len(remove) > 0
	// update-index applies only one of the flag options per run.
	for _, step := range []struct {
		flag  string
		paths []string
	}{{"--no-assume-unchanged", assumed}, {"--no-skip-worktree", skipped}, {"--force-remove", remove}} {
		if len(step.paths) == 0 {
			continue
		}
		in := strings.Join(step.paths, "\x00") + "\x00"
		if _, err := e.runPriv(ctx, []byte(in), "update-index", step.flag, "-z", "--stdin"); err != nil {
			return false, false, e.captureErr(ctx, "cannot prepare the private index", err)
		}
	}
	return flagged, attrs, nil
}

// settle rewrites a freshly seeded index once it is a second old, so entries
// that were racily clean (modified in the same second as the index was
// written) stop being re-hashed on every capture.
func (e *Engine) settle(ctx context.Context) error {
	marker := e.privIndex + ".settle"
	if _, err := os.Stat(marker); err != nil {
		return nil
	}
	st, err := os.Stat(e.privIndex)
	if err != nil {
		return nil
	}
	if time.Since(st.ModTime()) < 1100*time.Millisecond {
		return nil
	}
	if _, err := e.runPriv(ctx, nil, "update-index", "--refresh", "-q", "--force-write-index"); err != nil {
		var ge *git.Error
		// --refresh exits 1 when files need updating; the write happened.
		if !errors.As(err, &ge) || ge.ExitCode != 1 || git.IsLockError(err) {
			return e.captureErr(ctx, "cannot refresh the private index", err)
		}
	}
	_ = os.Remove(marker)
	return nil
}

// conversionConfigured reports whether settings outside the tree may make
// the content stored in the real index differ from the bytes on disk
// (core.autocrlf, an attributes file); a tracked .gitattributes is found by
// cleanSeed. Then stat data from the real index cannot be trusted to mean
// "the blob is the disk bytes".
func (e *Engine) conversionConfigured() bool {
	return git.ConvertsOutsideTree(e.autocrlf, e.attrFile, filepath.Join(e.commonDir, "info", "attributes"))
}

// isAttributes reports whether an index path is a .gitattributes file.
func isAttributes(p string) bool {
	return p == ".gitattributes" || strings.HasSuffix(p, "/.gitattributes")
}

// copyPreservingMtime copies src to dst keeping src's mtime: the index's
// mtime is what tells git which entries are racily clean. It reports false
// when src does not exist.
func copyPreservingMtime(src, dst string) (bool, error) {
	in, err := os.Open(src)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return false, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".index-seed-")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Close(); err != nil {
		return false, err
	}
	if err := os.Chtimes(tmp.Name(), st.ModTime(), st.ModTime()); err != nil {
		return false, err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return false, err
	}
	return true, nil
}

// writeSeed writes the private index at dst from snap, with the real
// index's mtime (see copyPreservingMtime).
func writeSeed(snap *indexSnap, dst string) error {
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".index-seed-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(snap.data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chtimes(tmp.Name(), snap.mtime, snap.mtime); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// hasSplitLink reports whether an index file carries the split-index "link"
// extension, i.e. depends on a sharedindex file in its git dir.
func hasSplitLink(path string) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	return splitLink(path, b)
}

// splitLink is hasSplitLink of the index file bytes b, read from path.
func splitLink(path string, b []byte) (bool, error) {
	if len(b) < 12 || string(b[:4]) != "DIRC" {
		return false, fmt.Errorf("%s is not a git index", path)
	}
	// Entries are variable-length; instead of parsing them, look for the
	// extension signature followed by a plausible size. A false positive only
	// costs one rewrite of the private index.
	return strings.Contains(string(b[12:]), "link\x00\x00"), nil
}

// ownerOnly narrows the files git writes in the state directory (the
// private index and the shared part of a split index, created 0666 less the
// umask) to 0600. The state directory itself is 0700, so nobody else could
// reach them anyway; this keeps every file yolop writes owner-only.
func ownerOnly(index, gitDir string) {
	names := []string{index}
	if m, err := filepath.Glob(filepath.Join(gitDir, "sharedindex.*")); err == nil {
		names = append(names, m...)
	}
	for _, n := range names {
		if st, err := os.Lstat(n); err == nil && st.Mode().IsRegular() && st.Mode().Perm() != 0o600 {
			_ = os.Chmod(n, 0o600) // best effort: the directory is owner-only
		}
	}
}

// fileErr classifies a failure to write private state: a full disk is
// named as such.
func (e *Engine) fileErr(what string, err error) error {
	if noSpace(err) || e.diskFull() {
		return &CaptureError{Reason: "no space left on device", Err: fmt.Errorf("%w: %v", ErrNoSpace, err)}
	}
	return &CaptureError{Reason: what, Err: err}
}
