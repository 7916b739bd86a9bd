package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/yolop-dev/yolop/internal/blocklist"
	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/fsutil"
	"github.com/yolop-dev/yolop/internal/git"
)

// DefaultBudget is the capture time budget when Options.Budget is zero.
const DefaultBudget = 60 * time.Second

// RefPrefix is the namespace of every snapshot ref.
const RefPrefix = "refs/yolop/checkpoints/"

// Blocklist names directories that are never captured and never touched by a
// restore, at any depth: the list the file tools refuse to write into.
var Blocklist = blocklist.Dirs

// tmpPrefix names restore's temporary files; they are excluded from captures
// so an interrupted restore never puts a half-written file into a snapshot.
const tmpPrefix = ".yolop-tmp-"

// Options configure an Engine.
type Options struct {
	Worktree  string        // absolute path of the session-owned worktree (its top level)
	SessionID string        // refs live at refs/yolop/checkpoints/<SessionID>/<name>
	StateDir  string        // private dir owned by the session, outside the worktree; created 0700; one Engine at a time
	Budget    time.Duration // capture time budget; 0 = DefaultBudget
	// Failpoint, when set, is called between restore steps with the step's
	// name so crash tests can stop the process there.
	Failpoint func(name string)
	// BeforeRef, when set, is waited for before the engine first writes
	// a ref in the repository: a ref must never name a session that a
	// crash could still lose (session.Session.Durable). Its error fails
	// that capture, and every one after it.
	BeforeRef func() error
	// CommonDir, when set, is the common git directory of the repository
	// the worktree is a linked worktree of (the session's own record).
	// Open then repairs the worktree's .git link before asking git
	// anything, and every later call keeps it guarded.
	CommonDir string
	// SeedSettled says the worktree's real index was refreshed well after
	// its files were written (a recycled worktree: parked, then checked
	// with a status when claimed), so a private index seeded from it has
	// no racily-clean entries and needs no settle pass (a refresh that
	// costs one lstat of every file). Only a hint: when it is wrong, the
	// few racy entries are re-hashed by each capture, never missed.
	SeedSettled bool
	// KnownClean says a `git status --untracked-files=all` on the
	// worktree's real index has just found nothing (index equal to the
	// HEAD commit, every tracked file equal to its entry, no untracked
	// file), and nothing ran in the worktree since except git moving it
	// to its new HEAD with a two-tree checkout (a recycled worktree's
	// claim). The first capture then takes its tree from the seeded index
	// instead of running a status of its own, when the seed is what a
	// status would have confirmed: stat data copied from the real index,
	// no content conversion, no assume-unchanged or skip-worktree entry,
	// the repository's core.fileMode, core.symlinks and core.ignoreCase as
	// the engine pins them, and no nested repository. Otherwise the
	// capture runs as usual. Later captures are unaffected.
	KnownClean bool
	// KnownWalk, with KnownClean, is the walk made when the worktree was
	// parked: the first capture then looks only at the files whose inode
	// changed since, instead of walking the whole tree again.
	KnownWalk *Walk
	// Prewatch, with KnownClean, is a watcher armed before the proof
	// (NewPrewatch): Watch takes it over, the first capture takes nothing
	// from it, and the next looks at what changed since it was armed
	// instead of walking. The engine releases it if Watch is never
	// called.
	Prewatch *Prewatch
	// Look is the engine's first question to git, asked ahead by a
	// caller about to open an engine on the worktree (LookAhead): Open
	// takes its answer instead of asking again when it was asked in the
	// worktree or below its top level, for an engine with no pinned
	// directories and no earlier capture in its state dir.
	Look *Look
	// GitDir, with CommonDir, is the worktree's administrative directory
	// as the session recorded it: every git process of the engine on the
	// repository is pinned to it (git.Dirs), whatever the worktree's .git
	// link says.
	GitDir string
	// Seal, when set, is what the administrative directory's
	// config.worktree and info/sparse-checkout held when recorded: every
	// call first checks they still do and fails with a
	// *git.ConfigChangedError otherwise (a command may have planted
	// filters or hooks there that git would run).
	Seal *git.Seal
	// Folder says GitDir (= CommonDir) is the private repository of a
	// folder outside git (ImportFolder): the folder has no .git link to
	// guard, and the repository's index is yolop's own, of raw bytes.
	Folder bool
	// MaxFileSize leaves files larger than this many bytes out of every
	// capture (Snapshot.LeftOut names them); 0 = no limit.
	MaxFileSize int64
	// OwnIndex says the worktree is the session's own (a session
	// worktree, never the user's checkout): its real index is nobody
	// else's, and after a restore the entries of the restored paths are
	// set to the worktree's HEAD (Restore), so `git status` there shows
	// the restored files against HEAD, not what an undone turn staged.
	// Ignored with Folder.
	OwnIndex bool
}

// Snapshot is a captured tree and the ref anchoring it ("" when unnamed).
type Snapshot struct {
	Tree string
	Ref  string
	// LeftOut are the files larger than Options.MaxFileSize that the
	// tree does not hold although no ignore rule leaves them out: the
	// snapshot is partial.
	LeftOut []string
}

// Engine captures and restores one session worktree. Its methods are safe for
// concurrent use; they run one at a time.
type Engine struct {
	mu sync.Mutex // serialises every use of the private index

	root      string // worktree top level, symlinks resolved
	sessionID string
	stateDir  string
	budget    time.Duration
	// failpointFn is Options.Failpoint.
	failpointFn func(name string)
	// beforeRef is Options.BeforeRef, asked once (refsMayName).
	beforeRef     func() error
	beforeRefOnce sync.Once
	beforeRefErr  error
	// seedSettled is Options.SeedSettled.
	seedSettled bool
	// knownClean is Options.KnownClean until the first seed uses it,
	// knownWalk Options.KnownWalk.
	knownClean bool
	knownWalk  *Walk
	// prewatch is Options.Prewatch until Watch takes it; prewatched: the
	// watcher is that one and no capture ran yet.
	prewatch   *Prewatch
	prewatched bool
	// seededNow: the current capture seeded the private index (its settle
	// pass is left to the capture's own index write).
	seededNow bool
	// seedPruned: the seed's clean-up removed entries (submodules,
	// blocklisted paths), so the index is not the HEAD commit's tree even
	// where status shows no difference.
	seedPruned bool
	// seedIsHead: this process seeded the private index and pruned
	// nothing from it (see captureOnce's base).
	seedIsHead bool
	// seedEntries are the entries of the index just seeded, as
	// cleanSeed kept them (nil when read through git).
	seedEntries []indexEntry
	// seedBase is what the first capture edits instead of reading the
	// HEAD commit's trees: the seeded index's entries (cleanSeed's), kept
	// until that capture (nil when read through git or already used).
	seedBase []indexEntry
	// seedCache is the cache tree of the user's index the seed's
	// entries were read from (parseCacheTree; nil for none), used with
	// seedBase.
	seedCache map[string]cachedTree
	// seedWhole: the next status is the first of a seed made by this
	// capture (see changedPaths).
	seedWhole bool
	// seedStat is the user's index the private index was just seeded
	// from unchanged, which the first capture compares with its walk
	// instead of running a status (seedstat.go); nil otherwise.
	seedStat *seedSource
	// statusless: the capture under way listed its changes without a
	// status (its tree edit must take base's trees from the seed);
	// statuslessRoot is the root its seed's cache tree names ("" when
	// none is valid).
	statusless     bool
	statuslessRoot string
	// statuslessCaptures counts them (tests); noSeedStat turns the
	// comparison off (tests).
	statuslessCaptures int
	noSeedStat         bool
	// fastPacked: the last tree edit wrote its objects as a pack (many
	// paths; see startIndexUpdate).
	fastPacked bool
	// fastEdit is the private index being written in Go after the last
	// packed tree edit (indexwrite.go), until an index update or the
	// next capture waits for it; nil when there is none.
	fastEdit *pendingIndex
	// lastEdit is what the last tree edit changed, which Diff gives for
	// its two trees without asking git (trees are named by their content:
	// it stays true).
	lastEdit    treeEdit
	editMu      sync.Mutex // guards lastEdit: Diff does not hold mu
	indexWrites int        // private indexes written in Go (tests)
	// realSnap is the user's index as the capture seeding the private
	// index read it (nil otherwise).
	realSnap *indexSnap
	// seedTrees counts tree edits whose base trees were computed from
	// seedBase (tests).
	seedTrees int
	// derivedCaptures counts captures whose tree came from a seed known
	// clean, without a status (tests).
	derivedCaptures int
	// noteWalks counts derived captures that took their walk from
	// Options.KnownWalk (tests).
	noteWalks int
	// noteLooks counts the entries such a walk looked at again (tests).
	noteLooks int

	gitDir    string // the worktree's own git dir (linked worktrees: .git/worktrees/<n>)
	commonDir string // the repository's common git dir (shared by linked worktrees)
	objects   string // the repository's object directory
	realIndex string // the worktree's real index file
	excludes  string // repository's info/exclude
	exclFile  string // effective core.excludesFile of the repository ("" = git default)
	// The repository's core.autocrlf and core.attributesFile ("" = git's
	// default file), read with exclFile in one git process at Open.
	autocrlf string
	attrFile string
	// refFiles: the capture's refs are written as loose files
	// (looseref.go); looseRefWrites counts the transactions written so
	// (tests).
	refFiles       bool
	looseRefWrites int
	// lookTaken: Open took Options.Look's answer (tests).
	lookTaken bool
	// emptyIndexRuns counts the git processes run against an empty index
	// (runEmptyIndex; tests).
	emptyIndexRuns int
	// sharedRepo is core.sharedRepository: git gives the files it makes
	// group or other permissions, so objects are left to git.
	sharedRepo string
	objFormat  string // sha1 or sha256

	privDir   string // private GIT_DIR
	privIndex string
	// head is what the private HEAD holds: the tree of the last capture
	// (headIsTree), or else the worktree's HEAD commit. `git status`
	// compares the private index with it, so when status reports nothing
	// at all and head is a captured tree, the index's tree is head. A
	// captured tree is the only tree id ever written there; the worktree's
	// commit is not trusted that way, as its tree may hold submodules
	// whose absence from the index status does not report.
	head       string
	headIsTree bool
	// commitTree is the worktree's HEAD commit and its tree, as Open's
	// look found them (two lookups of HEAD, which may have moved in
	// between): a first capture that edits that commit's tree takes this
	// one when the seed's own tree confirms it, without asking git.
	commitTree [2]string

	// indexUpdate is closed when the background update-index started by
	// the last capture's tree edit has finished (nil: none running).
	indexUpdate chan struct{}
	treeEdits   int // captures answered by a tree edit (tests)
	// fastDeleted are the paths the last tree edit found deleted,
	// fastSkipped those it found neither in the tree nor on disk.
	fastDeleted []string
	fastSkipped []string
	// indexUpdateFailed is set by a background index update that
	// failed; the next capture turns it into indexStale: the private
	// index may not hold the private HEAD's tree, so no capture trusts
	// it for the paths it does not look at until a walk.
	indexUpdateFailed bool
	indexStale        bool

	// watch records the paths changed since the last capture (long-lived
	// hosts on Linux; nil: every capture walks). See watched.go.
	watch   *watcher
	noWatch string // why Watch could not start one, or why it stopped
	// watchOnce: WatchOptions.Once; watchLetGo is the watcher it let go,
	// its watches removed, which Close closes (nil: none).
	watchOnce  bool
	watchLetGo *watcher
	// walkKnown says lastWalk describes the worktree as of the last
	// capture (kept up to date by watched captures).
	walkKnown bool
	// lastIgnore stamps the ignore rules from outside the worktree as
	// the last capture saw them.
	lastIgnore string
	// rules is what the private index is reconciled with (rules.go;
	// nil: not yet, or not known), loaded from the state dir once;
	// realKey and realSet identify the real index as this capture saw it.
	// seededReal says the private index was just copied from the real
	// one (it holds what the repository tracks, nothing else).
	seededReal       bool
	rules            *rulesState
	rulesLoaded      bool
	realKey, realSet string
	// watchedCaptures and walkedCaptures count the two kinds of capture;
	// lastWalkReason says why the last walk was needed.
	watchedCaptures, walkedCaptures int
	lastWalkReason                  string
	// resync is the periodic safety-net walk (watched.go).
	resyncMu     sync.Mutex
	resyncCancel context.CancelFunc
	resyncStop   chan struct{}
	resyncDone   chan struct{}
	lastCapture  time.Time
	captureStart time.Time    // when the running capture began
	waiting      atomic.Int32 // callers about to take mu (the background walk gives way)
	// lastWalk is what the last capture's walk found (nested
	// repositories, restrictive permissions).
	lastWalk walkResult

	linked    bool       // a linked worktree: its .git file is guarded
	notesMu   sync.Mutex // guards linkNotes
	linkNotes []string   // link repairs not yet reported

	// dirs pins the real repository's git processes (Options.GitDir);
	// zero when the engine finds them through the worktree's .git.
	dirs git.Dirs
	seal *git.Seal // Options.Seal

	folder      bool  // Options.Folder
	ownIndex    bool  // Options.OwnIndex (never with folder)
	maxFileSize int64 // Options.MaxFileSize
	// lastLeftOut are the files the last capture left out for their size;
	// lastUntracked the untracked paths of its status (with MaxFileSize).
	lastLeftOut   []string
	lastUntracked map[string]bool

	repo *git.Runner // real repository, worktree as cwd
	priv *git.Runner // private GIT_DIR / index / work tree

	onPriv func(args []string) // tests: sees every git command run on the private index
	// noEditDiff makes Diff ask git even for the last tree edit's trees
	// (tests).
	noEditDiff bool
	// Tests: onStatus runs when a walked capture's status is done,
	// onWalkDir before a walk that arms the watcher watches a directory.
	onStatus  func()
	onWalkDir func(rel string)
	// countWatches, when set, stands for the count of the user's free
	// inotify watches that a watcher with the default budget makes
	// (tests).
	countWatches func() (int, error)
	// onPackNamed, when set, wraps the sync that makes a written pack's
	// names durable (tests).
	onPackNamed func(named func() error) func() error
	// provisionalWatches, when positive, stands for the provisional
	// budget a walk arms with before the count is known (tests).
	provisionalWatches int
}

// validName reports whether s may name a snapshot (and a session) in a
// ref: 1-128 of [A-Za-z0-9_.-], not starting with '.' or '-', without
// "..", not ending in "." or ".lock". Checked by hand: the equivalent
// regular expression's bounded repetition costs every process (the tools'
// helpers included) half a millisecond to compile at start.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_':
		case (c == '.' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return !strings.Contains(s, "..") && !strings.HasSuffix(s, ".lock") && !strings.HasSuffix(s, ".")
}

// Open validates the worktree and prepares the session's private state. The
// worktree must be the top level of a non-bare work tree whose repository
// has at least one commit.
func Open(ctx context.Context, o Options) (*Engine, error) {
	e, err := open(ctx, o)
	if err != nil {
		o.Prewatch.Close()
	}
	return e, err
}

func open(ctx context.Context, o Options) (*Engine, error) {
	if !validName(o.SessionID) {
		return nil, fmt.Errorf("%w: session id %q (use letters, digits, '_', '-', '.')", ErrBadName, o.SessionID)
	}
	if !filepath.IsAbs(o.Worktree) || !filepath.IsAbs(o.StateDir) {
		return nil, fmt.Errorf("snapshot: worktree %q and state dir %q must be absolute paths", o.Worktree, o.StateDir)
	}
	// git's version is asked beside the engine's first look at the
	// worktree (each a process of a few milliseconds); a git that is
	// missing or too old fails both, and its error is the one reported.
	version := make(chan error, 1)
	go func() {
		_, err := git.CheckVersion(ctx)
		version <- err
	}()
	root, err := filepath.EvalSymlinks(o.Worktree)
	if err != nil {
		if verr := <-version; verr != nil {
			return nil, &CaptureError{Reason: "git is unavailable or too old", Err: verr}
		}
		return nil, &CaptureError{Reason: "worktree is missing", Err: err}
	}
	e := &Engine{root: root, sessionID: o.SessionID, budget: o.Budget, failpointFn: o.Failpoint, beforeRef: o.BeforeRef, seedSettled: o.SeedSettled, knownClean: o.KnownClean, knownWalk: o.KnownWalk, prewatch: o.Prewatch, repo: git.New(root), folder: o.Folder, maxFileSize: o.MaxFileSize, ownIndex: o.OwnIndex && !o.Folder}
	if o.CommonDir != "" && o.GitDir != "" {
		e.dirs = git.Dirs{GitDir: o.GitDir, CommonDir: o.CommonDir, WorkTree: root}
		e.repo = e.dirs.Runner()
		e.seal = o.Seal
	}
	if o.CommonDir != "" && !o.Folder {
		e.linked, e.commonDir = true, o.CommonDir
		if err := e.guardLink(); err != nil {
			return nil, err
		}
	}
	if e.budget <= 0 {
		e.budget = DefaultBudget
	}
	prev := privateHead(filepath.Clean(o.StateDir))
	var f []string
	var head, headTree, prevTree string
	var cfg repoConfig
	// git's relative paths are relative to where it ran.
	base := root
	if l := o.Look; l != nil && prev == "" && e.dirs == (git.Dirs{}) && l.answers(root) {
		e.lookTaken = true
		f, head, headTree, cfg, err = l.f, l.head, l.headTree, l.cfg, l.err
		base = l.dir
	} else {
		// The settings a capture depends on are read meanwhile: a
		// worktree lookUp refuses only discards them.
		config := make(chan repoConfig, 1)
		go func() { config <- readRepoConfig(ctx, e.repo) }()
		f, head, headTree, prevTree, err = lookUp(ctx, e.repo, o.Worktree, prev)
		cfg = <-config
	}
	e.exclFile, e.autocrlf, e.attrFile, e.sharedRepo = cfg.exclFile, cfg.autocrlf, cfg.attrFile, cfg.sharedRepo
	if verr := <-version; verr != nil {
		return nil, &CaptureError{Reason: "git is unavailable or too old", Err: verr}
	}
	if err != nil {
		return nil, err
	}
	top, err := filepath.EvalSymlinks(f[1])
	if err != nil || top != root {
		return nil, fmt.Errorf("%w: %s (top level is %s)", ErrNotTopLevel, o.Worktree, f[1])
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(base, p)
	}
	e.gitDir = f[2]
	if e.linked && !fsutil.SameDir(abs(f[3]), e.commonDir) {
		return nil, &CaptureError{Reason: "the worktree belongs to another repository than the session's", Err: fmt.Errorf("%w: %s uses %s, the session's repository is %s", ErrNotRepo, o.Worktree, abs(f[3]), e.commonDir)}
	}
	e.commonDir = abs(f[3])
	e.realIndex = abs(f[4])
	e.objects = abs(f[5])
	e.objFormat = f[6]
	if st, err := os.Lstat(filepath.Join(root, ".git")); err == nil && st.Mode().IsRegular() && !fsutil.SameDir(e.gitDir, e.commonDir) {
		e.linked = true
	}
	if head == "" {
		if head, err = e.headCommit(ctx); err != nil {
			return nil, err
		}
	}
	if b, err := os.ReadFile(filepath.Join(e.commonDir, "info", "exclude")); err == nil {
		e.excludes = string(b)
	}
	e.refFiles = refsInFiles(e.commonDir, cfg.refStorage, cfg.sharedRepo)

	state := filepath.Clean(o.StateDir)
	if rel, err := filepath.Rel(root, state); err == nil && !strings.HasPrefix(rel, "..") {
		return nil, fmt.Errorf("snapshot: state dir %s is inside the worktree %s; it would end up in its own snapshots", o.StateDir, o.Worktree)
	}
	if real, err := filepath.EvalSymlinks(state); err == nil {
		if rel, err := filepath.Rel(root, real); err == nil && !strings.HasPrefix(rel, "..") {
			return nil, fmt.Errorf("snapshot: state dir %s is inside the worktree %s; it would end up in its own snapshots", o.StateDir, o.Worktree)
		}
	}
	e.stateDir = state
	e.privDir = filepath.Join(state, "git")
	e.privIndex = filepath.Join(state, "index")
	e.head, e.headIsTree = e.previousHead(ctx, head, prev, prevTree)
	if !e.headIsTree && headTree != "" {
		e.commitTree = [2]string{head, headTree}
	}
	if err := e.initPrivateDir(e.head); err != nil {
		return nil, err
	}
	env := []string{
		"GIT_DIR=" + e.privDir,
		"GIT_INDEX_FILE=" + e.privIndex,
		"GIT_OBJECT_DIRECTORY=" + e.objects,
		"GIT_WORK_TREE=" + root,
		"GIT_OPTIONAL_LOCKS=1",
	}
	e.priv = git.New(root).With(env...)
	// Only one Engine uses a state dir at a time (the session's single-writer
	// lock guarantees it), so an index.lock found now was left by a process
	// that died mid-capture; without removing it every capture would fail.
	if err := os.Remove(e.privIndex + ".lock"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("snapshot: remove stale lock in %s: %w", e.stateDir, err)
	}
	return e, nil
}

// repoConfig is the repository settings a capture depends on.
type repoConfig struct {
	exclFile, autocrlf, attrFile, sharedRepo, refStorage string
}

// readRepoConfig reads them in one git process. A failure leaves git's
// defaults, as each git a capture runs would fail on the same config.
func readRepoConfig(ctx context.Context, r *git.Runner) repoConfig {
	v, err := git.ConfigValues(ctx, r, "core.excludesfile", "core.autocrlf", "core.attributesfile", "core.sharedrepository", "extensions.refstorage")
	if err != nil {
		// Unknown: git writes the objects and the refs.
		return repoConfig{sharedRepo: sharedUnknown}
	}
	return repoConfig{exclFile: v["core.excludesfile"], autocrlf: v["core.autocrlf"], attrFile: v["core.attributesfile"], sharedRepo: v["core.sharedrepository"], refStorage: v["extensions.refstorage"]}
}

// Look is the first question an engine asks git about its worktree: the
// repository's directories, HEAD and the settings a capture depends on
// (two git processes, side by side). LookAhead asks it before the engine
// is opened, for a caller that knows it is about to open one there and
// has other work to do first; Options.Look hands the answer to Open.
type Look struct {
	dir  string // the directory asked about, symlinks resolved
	done chan struct{}

	f              []string
	head, headTree string
	err            error
	cfg            repoConfig
}

// LookAhead starts asking git about the worktree at dir (its top level or
// a directory below it, for Open to take the answer).
func LookAhead(ctx context.Context, dir string) *Look {
	l := &Look{dir: dir, done: make(chan struct{})}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		l.dir = real
	}
	ctx = context.WithoutCancel(ctx) // an engine that takes it must not see a half answer
	r := git.New(dir)
	config := make(chan repoConfig, 1)
	go func() { config <- readRepoConfig(ctx, r) }()
	go func() {
		defer close(l.done)
		l.f, l.head, l.headTree, _, l.err = lookUp(ctx, r, dir, "")
		l.cfg = <-config
	}()
	return l
}

// answers waits for the answer and reports whether it is the one for the
// worktree whose top level is root: asked there, or asked below it and
// naming it as the top level.
func (l *Look) answers(root string) bool {
	<-l.done
	if l.dir == root {
		return true
	}
	if l.err != nil || len(l.f) < 2 {
		return false
	}
	top, err := filepath.EvalSymlinks(l.f[1])
	return err == nil && top == root
}

// privConfig pins everything that would make a capture convert content,
// miss a change or lose an exec bit.
func (e *Engine) privConfig() []string {
	c := []string{
		"-c", "core.autocrlf=false",
		"-c", "core.safecrlf=false",
		"-c", "core.eol=lf",
		"-c", "core.fileMode=true",
		"-c", "core.symlinks=true",
		"-c", "core.ignoreCase=false",
		// A split index rewrites only the entries that changed (a few KB)
		// instead of the whole index on every update; git cleans up the
		// previous shared part as soon as it writes a new one (nothing but
		// this one index lives in the private GIT_DIR).
		"-c", "core.splitIndex=true",
		"-c", "splitIndex.maxPercentChange=20",
		"-c", "splitIndex.sharedIndexExpire=now",
		"-c", "core.untrackedCache=false",
		"-c", "core.checkStat=default",
		"-c", "core.trustctime=true",
		"-c", "core.logAllRefUpdates=false",
		"-c", "status.showUntrackedFiles=all",
		"-c", "index.skipHash=false",
		// A checkpoint is journaled as durable right after its capture,
		// so the objects it names must reach the disk first. Batch mode
		// flushes them with one sync per command (git 2.37+; older git
		// ignores the keys).
		"-c", "core.fsync=loose-object,pack,pack-metadata,reference",
		"-c", "core.fsyncMethod=batch",
	}
	if e.exclFile != "" {
		c = append(c, "-c", "core.excludesFile="+e.exclFile)
	}
	if sharedRepository(e.sharedRepo) && e.sharedRepo != sharedUnknown {
		// The private GIT_DIR's config is not the repository's: the
		// objects git writes get the repository's permissions only so.
		c = append(c, "-c", "core.sharedRepository="+e.sharedRepo)
	}
	return c
}

func (e *Engine) runPriv(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	if e.onPriv != nil {
		e.onPriv(args)
	}
	return e.priv.RunInput(ctx, stdin, append(e.privConfig(), args...)...)
}

const privAttributes = "* -text -eol -filter -ident -working-tree-encoding\n"

func (e *Engine) initPrivateDir(head string) error {
	if err := os.MkdirAll(e.stateDir, 0o700); err != nil {
		return fmt.Errorf("snapshot: create state dir: %w", err)
	}
	if err := os.Chmod(e.stateDir, 0o700); err != nil {
		return fmt.Errorf("snapshot: state dir permissions: %w", err)
	}
	for _, d := range []string{"info", "refs", "objects"} {
		if err := os.MkdirAll(filepath.Join(e.privDir, d), 0o700); err != nil {
			return fmt.Errorf("snapshot: create private git dir: %w", err)
		}
	}
	cfg := "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tlogallrefupdates = false\n"
	if e.objFormat != "" && e.objFormat != "sha1" {
		cfg = "[core]\n\trepositoryformatversion = 1\n\tbare = false\n\tlogallrefupdates = false\n[extensions]\n\tobjectformat = " + e.objFormat + "\n"
	}
	files := map[string]string{
		"config":          cfg,
		"HEAD":            head + "\n",
		"info/attributes": privAttributes,
		"info/exclude":    e.excludeText(),
	}
	for name, content := range files {
		if err := writeIfChanged(filepath.Join(e.privDir, name), []byte(content)); err != nil {
			return err
		}
	}
	return nil
}

// lookUp asks git what Open needs of the worktree: whether it is inside a
// work tree, its top level, its git dir, the common git dir, the index
// and objects paths and the object format (f, in that order), and the
// HEAD commit with its tree (what a first capture of a clean worktree
// records). A working tree with a commit, every session's case, takes
// one process; anything else fails it and the steps after it say what is
// wrong (head is then "": headCommit asks, after Open's other checks). The "--" keeps a file named like the revision from making it
// ambiguous.
func lookUp(ctx context.Context, repo *git.Runner, worktree, prev string) (f []string, head, headTree, prevTree string, err error) {
	// Ten lines, an eleventh for prev, then the "--".
	args, n := []string{"rev-parse", "--is-bare-repository", "--is-inside-work-tree", "--show-toplevel", "--absolute-git-dir", "--git-common-dir", "--git-path", "index", "--git-path", "objects", "--show-object-format", "HEAD^{commit}", "HEAD^{tree}"}, 10
	if prev != "" {
		// What the tree an earlier engine left peels to (previousHead);
		// a pruned one fails the whole call, and previousHead asks alone.
		args, n = append(args, prev+"^{tree}"), 11
	}
	if out, err := repo.Run(ctx, append(args, "--")...); err == nil {
		l := strings.Split(git.Trim(out), "\n")
		if len(l) == n+1 && l[0] == "false" && l[1] == "true" && l[n] == "--" && git.IsOID(l[8]) && git.IsOID(l[9]) {
			if prev != "" {
				prevTree = l[10]
			}
			return l[1:8], l[8], l[9], prevTree, nil
		}
	}
	out, err := repo.Run(ctx, "rev-parse", "--is-bare-repository")
	if err != nil {
		return nil, "", "", "", &CaptureError{Reason: "not a git repository", Err: fmt.Errorf("%w: %s: %v", ErrNotRepo, worktree, err)}
	}
	if git.Trim(out) == "true" {
		return nil, "", "", "", &CaptureError{Reason: "bare repository", Err: fmt.Errorf("%w: %s", ErrBare, worktree)}
	}
	out, err = repo.Run(ctx, "rev-parse", "--is-inside-work-tree", "--show-toplevel", "--absolute-git-dir", "--git-common-dir", "--git-path", "index", "--git-path", "objects", "--show-object-format")
	if err != nil {
		return nil, "", "", "", &CaptureError{Reason: "not a git work tree", Err: fmt.Errorf("%w: %s: %v", ErrNotRepo, worktree, err)}
	}
	f = strings.Split(git.Trim(out), "\n")
	if len(f) != 7 || f[0] != "true" {
		return nil, "", "", "", &CaptureError{Reason: "not a git work tree", Err: fmt.Errorf("%w: %s", ErrNotRepo, worktree)}
	}
	return f, "", "", "", nil
}

// headCommit is the worktree's HEAD commit, for a lookUp that did not
// find it.
func (e *Engine) headCommit(ctx context.Context) (string, error) {
	out, err := e.repo.Run(ctx, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		return "", &CaptureError{Reason: "repository has no commits yet", Err: ErrNoCommits}
	}
	return git.Trim(out), nil
}

// privateHead is what an earlier Engine left in the private HEAD of the
// state dir: an object id, or "" when there is none.
func privateHead(stateDir string) string {
	b, err := os.ReadFile(filepath.Join(stateDir, "git", "HEAD"))
	if err != nil {
		return ""
	}
	if old := strings.TrimSpace(string(b)); git.IsOID(old) {
		return old
	}
	return ""
}

// previousHead returns what the private HEAD should hold at Open: the tree
// an earlier Engine captured last and left there (old; the private index
// still matches it) when it is still in the repository, with isTree true;
// otherwise commit, the worktree's HEAD commit. peeled is what old^{tree}
// resolved to when lookUp asked ("" when it did not).
func (e *Engine) previousHead(ctx context.Context, commit, old, peeled string) (head string, isTree bool) {
	if old == "" || old == commit {
		return commit, false
	}
	if peeled == "" {
		out, err := e.repo.Run(ctx, "rev-parse", "--verify", "--quiet", old+"^{tree}")
		if err != nil {
			return commit, false
		}
		peeled = git.Trim(out)
	}
	// A tree peels to itself; a commit or a missing object does not.
	if peeled != old {
		return commit, false
	}
	return old, true
}

func (e *Engine) excludeText() string {
	var b strings.Builder
	b.WriteString(e.excludes)
	if e.excludes != "" && !strings.HasSuffix(e.excludes, "\n") {
		b.WriteByte('\n')
	}
	b.WriteString("# yolop: write blocklist and restore temporaries, never captured\n")
	for _, n := range Blocklist {
		b.WriteString(n + "\n")
	}
	b.WriteString(tmpPrefix + "*\n")
	return b.String()
}

// writeIfChanged writes a scratch file of the private git dir (attributes,
// excludes, HEAD) unless it already holds content. These files are
// regenerated from the engine's own state before every use, so they need
// neither rename nor fsync: a crash mid-write leaves content that differs
// and is rewritten next time. Durable files go through
// fsutil.WriteFileAtomic.
func writeIfChanged(path string, content []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, content) {
		return nil
	}
	if err := os.WriteFile(path, content, 0o600); err != nil {
		return fmt.Errorf("snapshot: write %s: %w", path, err)
	}
	return nil
}

// Root returns the worktree top level the engine operates on.
func (e *Engine) Root() string { return e.root }

// GitDir is the worktree's own git directory (absolute; for a folder
// outside git, the session's private repository).
func (e *Engine) GitDir() string { return e.gitDir }

// Dirs are the directories the engine's git processes are pinned to
// (Options.GitDir), zero when it was opened without them.
func (e *Engine) Dirs() git.Dirs { return e.dirs }

// Guard runs the checks every call of the engine starts with (the seal of
// the worktree's git configuration, the .git link), for a caller about to
// run git on the worktree itself.
func (e *Engine) Guard() error { return e.guardLink() }

// ErrNotOnDisk is under the error of a capture or anchor refused because
// Options.BeforeRef failed: its ref would name a session a crash could
// lose. A turn must not run on such a capture (it could never be undone).
var ErrNotOnDisk = fault.Plain("snapshot: the session is not safely on disk")

// refsMayName waits for Options.BeforeRef, once; its error stays.
func (e *Engine) refsMayName() error {
	e.beforeRefOnce.Do(func() {
		if e.beforeRef != nil {
			if err := e.beforeRef(); err != nil {
				e.beforeRefErr = fmt.Errorf("%w: %w", ErrNotOnDisk, err)
			}
		}
	})
	return e.beforeRefErr
}

// RefName returns the full ref name of the snapshot called name.
func (e *Engine) RefName(name string) string { return RefPrefix + e.sessionID + "/" + name }

// Capture records the worktree's current state as a tree and, when name is
// not empty, points refs/yolop/checkpoints/<session>/<name> at it. Any
// failure is a *CaptureError; no partial tree is ever returned.
func (e *Engine) Capture(ctx context.Context, name string) (Snapshot, error) {
	if name != "" && !validName(name) {
		return Snapshot{}, fmt.Errorf("%w: snapshot name %q", ErrBadName, name)
	}
	e.lockNow()
	defer e.mu.Unlock()
	if err := e.guardLink(); err != nil {
		return Snapshot{}, err
	}
	tree, err := e.capture(ctx, mustWalk(ctx))
	if err != nil {
		return Snapshot{}, err
	}
	s := Snapshot{Tree: tree, LeftOut: e.lastLeftOut}
	if name != "" {
		ref := e.RefName(name)
		// The permissions a tree cannot hold are kept in a blob beside
		// the snapshot ref, written in the same ref transaction.
		modes, err := e.capturedModes(ctx, e.lastWalk.modes)
		if err != nil {
			return Snapshot{}, err
		}
		if err := e.refsMayName(); err != nil {
			return Snapshot{}, &CaptureError{Reason: "the session is not safely on disk", Err: err}
		}
		// The permission record first: a crash between the two leaves
		// no snapshot ref without its record.
		updates := []refUpdate{{ref: e.modesRef(name)}, {ref: ref, oid: tree}}
		if len(modes) > 0 {
			out, err := e.repo.RunInput(ctx, encodeModes(tree, modes), "hash-object", "-w", "--no-filters", "--stdin")
			if err != nil {
				return Snapshot{}, e.captureErr(ctx, "cannot write the permission record", err)
			}
			updates[0].oid = git.Trim(out)
		}
		if err := e.updateRefs(ctx, updates); err != nil {
			return Snapshot{}, e.captureErr(ctx, "cannot write the snapshot ref", err)
		}
		s.Ref = ref
	}
	return s, nil
}

// Anchor keeps tree, which must already be in the repository's object
// store (another snapshot of the same repository, e.g. a forked session's),
// under the snapshot name.
func (e *Engine) Anchor(ctx context.Context, name, tree string) (Snapshot, error) {
	if !validName(name) {
		return Snapshot{}, fmt.Errorf("%w: snapshot name %q", ErrBadName, name)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	out, err := e.repo.Run(ctx, "cat-file", "-t", tree)
	if err != nil || git.Trim(out) != "tree" {
		return Snapshot{}, fmt.Errorf("snapshot: %s is not a tree of this repository", tree)
	}
	if err := e.refsMayName(); err != nil {
		return Snapshot{}, fmt.Errorf("snapshot: %w", err)
	}
	ref := e.RefName(name)
	if _, err := e.repo.Run(ctx, "-c", "core.logAllRefUpdates=false", "-c", "core.fsync=reference", "update-ref", "--no-deref", ref, tree); err != nil {
		return Snapshot{}, fmt.Errorf("snapshot: write %s: %w", ref, err)
	}
	return Snapshot{Tree: tree, Ref: ref}, nil
}

// Verify captures the worktree (without a ref) and reports ErrMismatch with
// the differing paths when it is not tree.
func (e *Engine) Verify(ctx context.Context, tree string) error {
	e.lockNow()
	defer e.mu.Unlock()
	if err := e.guardLink(); err != nil {
		return err
	}
	return e.verify(ctx, tree)
}

func (e *Engine) verify(ctx context.Context, tree string) error {
	// Writes through mmap raise no inotify event: a verification walks.
	got, err := e.capture(ctx, true)
	if err != nil {
		return err
	}
	if got == tree {
		return nil
	}
	ch, derr := e.diff(ctx, tree, got)
	if derr != nil {
		return fmt.Errorf("%w: worktree is %s, want %s", ErrMismatch, got, tree)
	}
	return mismatch(got, tree, ch)
}

// captureErr classifies a git failure during capture.
func (e *Engine) captureErr(ctx context.Context, what string, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &CaptureError{Reason: fmt.Sprintf("capture took longer than its %s budget", e.budget), Err: ErrBudget}
	}
	if ctx.Err() != nil {
		return &CaptureError{Reason: "capture was cancelled", Err: ctx.Err()}
	}
	if noSpace(err) || e.diskFull() {
		return &CaptureError{Reason: "no space left on device", Err: fmt.Errorf("%w: %v", ErrNoSpace, err)}
	}
	if git.IsLockError(err) {
		return &CaptureError{Reason: "repository is locked by another git process; retry when it finishes", Err: fmt.Errorf("%w: %v", ErrLocked, err)}
	}
	var ge *git.Error
	if errors.As(err, &ge) {
		s := ge.Stderr
		if strings.Contains(s, "Permission denied") || strings.Contains(s, "unable to index file") || strings.Contains(s, "failed to insert into database") {
			return &CaptureError{Reason: "a file cannot be read: " + firstLine(s), Err: fmt.Errorf("%w: %v", ErrUnreadable, err)}
		}
		if strings.Contains(s, "is a directory - add ") {
			// A file became a directory between the look and the
			// record ("add files inside instead", or "add individual
			// files instead" for a path git reaches another way): the
			// capture raced a change and is tried again.
			what += ": " + firstLine(s)
			return &CaptureError{Reason: what, Err: fmt.Errorf("%w: %v", errChangedUnderCapture, err)}
		}
		if l := firstLine(s); l != "" {
			// Say what git said: the reason is all a listing keeps.
			what += ": " + l
		}
	}
	return &CaptureError{Reason: what, Err: err}
}

// noSpace reports whether err comes from a full file system (ENOSPC, or
// git saying so on stderr) or an exhausted quota.
func noSpace(err error) bool {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	var ge *git.Error
	if errors.As(err, &ge) {
		s := strings.ToLower(ge.Stderr)
		return strings.Contains(s, "no space left on device") || strings.Contains(s, "disk quota exceeded") ||
			strings.Contains(s, "out of diskspace")
	}
	return false
}

// diskFull reports whether the file system holding the private state or
// the repository's objects has no space left: git does not always name the
// cause ("unable to write new index file").
func (e *Engine) diskFull() bool {
	for _, d := range []string{e.stateDir, e.objects} {
		if d != "" && freeBytes(d) == 0 {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimPrefix(strings.TrimPrefix(s, "error: "), "fatal: ")
}

// ResolveRef returns the tree that the snapshot called name points at.
func (e *Engine) ResolveRef(ctx context.Context, name string) (string, error) {
	if !validName(name) {
		return "", fmt.Errorf("%w: snapshot name %q", ErrBadName, name)
	}
	if err := e.guardLink(); err != nil {
		return "", err
	}
	out, err := e.repo.Run(ctx, "rev-parse", "--verify", "--quiet", e.RefName(name)+"^{tree}")
	if err != nil {
		var ge *git.Error
		if errors.As(err, &ge) && ge.ExitCode == 1 {
			return "", fmt.Errorf("%w: %s", ErrNoRef, e.RefName(name))
		}
		return "", fmt.Errorf("snapshot: resolve %s: %w", e.RefName(name), err)
	}
	return git.Trim(out), nil
}

// DeleteRef removes the snapshot ref called name; a missing ref is not an error.
func (e *Engine) DeleteRef(ctx context.Context, name string) error {
	if !validName(name) {
		return fmt.Errorf("%w: snapshot name %q", ErrBadName, name)
	}
	if err := e.guardLink(); err != nil {
		return err
	}
	in := "delete " + e.RefName(name) + "\ndelete " + e.modesRef(name) + "\n"
	if _, err := e.repo.RunInput(ctx, []byte(in), "update-ref", "--stdin"); err != nil {
		return fmt.Errorf("snapshot: delete %s: %w", e.RefName(name), err)
	}
	return nil
}

// SessionRefs returns the full names of this session's snapshot refs,
// sorted.
func (e *Engine) SessionRefs(ctx context.Context) ([]string, error) {
	if e.folder {
		return ListRefs(ctx, e.commonDir, e.sessionID)
	}
	return ListRefs(ctx, e.root, e.sessionID)
}

// ListRefs returns the full names of sessionID's snapshot refs in repoDir,
// sorted.
func ListRefs(ctx context.Context, repoDir, sessionID string) ([]string, error) {
	if !validName(sessionID) {
		return nil, fmt.Errorf("%w: session id %q", ErrBadName, sessionID)
	}
	out, err := git.New(repoDir).Run(ctx, "for-each-ref", "--format=%(refname)", RefPrefix+sessionID+"/")
	if err != nil {
		return nil, fmt.Errorf("snapshot: list refs of session %s: %w", sessionID, err)
	}
	var refs []string
	for _, l := range strings.Split(git.Trim(out), "\n") {
		if l != "" {
			refs = append(refs, l)
		}
	}
	return refs, nil
}

// DeleteSessionRefs removes refs/yolop/checkpoints/<sessionID>/* in one
// transaction and returns how many were removed. Other refs are untouched.
func DeleteSessionRefs(ctx context.Context, repoDir, sessionID string) (int, error) {
	refs, err := ListRefs(ctx, repoDir, sessionID)
	if err != nil {
		return 0, err
	}
	// The permission records kept beside the snapshots go with them.
	out, err := git.New(repoDir).Run(ctx, "for-each-ref", "--format=%(refname)", ModesRefPrefix+sessionID+"/")
	if err != nil {
		return 0, fmt.Errorf("snapshot: list permission records of session %s: %w", sessionID, err)
	}
	var in strings.Builder
	for _, r := range refs {
		in.WriteString("delete " + r + "\n")
	}
	for _, r := range strings.Split(git.Trim(out), "\n") {
		if r != "" {
			in.WriteString("delete " + r + "\n")
		}
	}
	if in.Len() == 0 {
		return 0, nil
	}
	if _, err := git.New(repoDir).RunInput(ctx, []byte(in.String()), "update-ref", "--stdin"); err != nil {
		return 0, fmt.Errorf("snapshot: delete refs of session %s: %w", sessionID, err)
	}
	return len(refs), nil
}
