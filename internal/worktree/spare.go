package worktree

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
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
	"time"

	"golang.org/x/sys/unix"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/fsutil"
	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/snapshot"
)

// Names inside <data-dir>/worktrees/<repo-id>/ that are not session
// worktrees. Session ids never start with a dot, so none of them can be
// mistaken for a session's worktree.
const (
	sparePrefix   = ".spare-"   // a parked, clean worktree ready to be claimed
	stalePrefix   = ".stale-"   // a spare that was not as parking left it
	tmpPrefix     = ".tmp-"     // a worktree being prepared or parked
	pendingPrefix = ".pending-" // .pending-<session-id>.lock: a session being started
	newPrefix     = ".new-"     // a lock file being created (see createLocked)
	lockSuffix    = ".lock"
	repoLockName  = ".lock" // serializes claims and parking in one repository
)

// hit calls m.Failpoint at a named step.
func (m *Manager) hit(name string) {
	if m.Failpoint != nil {
		m.Failpoint(name)
	}
}

// SpareFailpoints name the steps of claiming, parking and preparing a
// spare, in the order a start reaches them.
var SpareFailpoints = []string{
	"spare.claim_after_move",
	"spare.claim_after_reset",
	"spare.park_after_move",
	"spare.park_after_reset",
	"spare.park_after_rename",
	"spare.prepare_after_add",
	"spare.prepare_after_rename",
}

// KeepDependencies and KeepNothing say what a parked worktree keeps of the
// files git does not track (Manager.SpareKeeps).
const (
	KeepDependencies = "dependencies"
	KeepNothing      = "nothing"
)

// DefaultSpares is the number of spares kept per repository by default.
const DefaultSpares = 1

// ErrSpareLimit: a preparation found the repository already has its spares.
var ErrSpareLimit = fault.Plain("worktree: the repository has all its spare worktrees")

// Started is the worktree a new session got from Start. Until Done is called
// the session is marked as being started, so that a process that finds the
// mark left by a killed one can clean up (or adopt) the worktree.
type Started struct {
	Info
	// Recycled: the worktree was a parked spare, moved to the user's HEAD.
	Recycled bool
	// KnownClean: a status on the worktree's index found nothing during
	// the claim, and since then only git's two-tree checkout and ref
	// updates ran in it; its first capture may skip its own status
	// (snapshot.Options.KnownClean) if nothing else runs there first.
	KnownClean bool
	// Walk is the snapshot walk made when the claimed spare was parked or
	// prepared (nil when none was kept), for snapshot.Options.KnownWalk.
	Walk *snapshot.Walk
	// Watch is the file watcher armed over the claimed spare before its
	// proof (Manager.Watch), for snapshot.Options.Prewatch; nil when none.
	// Whoever holds it last closes it (Close after the engine took it
	// does nothing).
	Watch *snapshot.Prewatch
	// Notes tell the user about spares that could not be used and leftovers
	// of interrupted starts that were cleaned up.
	Notes []string
	// Shared is what copying the shared directories ([worktree] share)
	// into the worktree did.
	Shared ShareResult
	// fresh lists the shared directories the claimed spare got when it
	// was prepared, from the checkout, which no session has used.
	fresh   map[string]string
	pending *os.File
	path    string
}

// Done drops the mark of a session being started: call it once the session
// directory that references the worktree exists (or after undoing Start).
func (s *Started) Done() {
	if s == nil || s.pending == nil {
		return
	}
	_ = os.Remove(s.path)
	_ = s.pending.Close()
	s.pending = nil
}

// pendingRecord is the content of a .pending-<session-id>.lock file: what
// a cleanup needs to undo a start whose process died.
type pendingRecord struct {
	Branch string `json:"branch,omitempty"`
	Base   string `json:"base,omitempty"`
}

func (s *Started) record(r pendingRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := s.pending.Truncate(0); err != nil {
		return err
	}
	if _, err := s.pending.WriteAt(b, 0); err != nil {
		return err
	}
	return s.pending.Sync()
}

// Start gives a new session its worktree at PathFor(repo, sessionID) on a
// new branch: a parked spare when one is ready (Recycled), moved to
// repo.Head with git's two-tree merge so that only the files that differ
// are written, else a fresh worktree from Create. Leftovers of interrupted
// starts, parks and preparations in the repository are cleaned up first.
// The caller calls Done once the session directory exists.
func (m *Manager) Start(ctx context.Context, repo *Repo, sessionID, title string) (*Started, error) {
	return m.start(ctx, repo, sessionID, title, false)
}

// StartDetached is Start for a session that is open but has no prompt yet
// (the TUI): the worktree is claimed or checked out at once with HEAD
// detached at repo.Head and no branch; Started.MakeBranch makes the session's
// branch at the first prompt, Abandon gives the worktree back when the
// session is closed unused.
func (m *Manager) StartDetached(ctx context.Context, repo *Repo, sessionID string) (*Started, error) {
	return m.start(ctx, repo, sessionID, "", true)
}

func (m *Manager) start(ctx context.Context, repo *Repo, sessionID, title string, detached bool) (*Started, error) {
	if repo == nil || repo.CommonDir == "" || repo.Root == "" || repo.Head == "" {
		return nil, errors.New("worktree: Start needs a repository from Detect")
	}
	path, err := m.PathFor(repo, sessionID)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if err := mkdirPrivate(dir); err != nil {
		return nil, err
	}
	st := &Started{path: filepath.Join(dir, pendingPrefix+sessionID+lockSuffix)}
	if _, err := os.Lstat(st.path); err == nil {
		return nil, fmt.Errorf("worktree: session %s is being started by another process", sessionID)
	}
	f, err := createLocked(st.path)
	if err != nil {
		return nil, err
	}
	st.pending = f
	st.Notes = append(m.sweep(ctx, dir), dropDeadAdmins(repo.CommonDir)...)
	if m.spareLimit() > 0 {
		if pf := readPrepareFailure(dir); pf != nil {
			st.Notes = append(st.Notes, pf.Note())
		}
	}
	if m.spareLimit() > 0 && !repo.Bare {
		claim := func() (bool, error) {
			info, ok, notes, err := m.claim(ctx, repo, dir, path, sessionID, title, st, detached)
			st.Notes = append(st.Notes, notes...)
			if err != nil || !ok {
				return false, err
			}
			st.Info, st.Recycled = info, true
			return true, nil
		}
		ok, err := claim()
		if err == nil && !ok {
			// A spare being prepared is worth waiting for: checking out
			// a second tree beside it would slow both down.
			var waited bool
			var note string
			waited, note, err = m.awaitPreparation(ctx, dir)
			if note != "" {
				st.Notes = append(st.Notes, note)
			}
			if waited && err == nil {
				if ok, err = claim(); err == nil && !ok {
					// It died or failed: what it left goes first.
					st.Notes = append(st.Notes, m.sweep(ctx, dir)...)
				}
			}
		}
		if err != nil {
			st.Done()
			return nil, err
		}
		if ok {
			if err := m.share(ctx, repo, st); err != nil {
				m.Abandon(context.WithoutCancel(ctx), st)
				return nil, err
			}
			return st, nil
		}
	}
	var info Info
	if detached {
		info, err = m.createDetached(ctx, repo, path)
	} else {
		info, err = m.create(ctx, repo, sessionID, title, func(branch string) error {
			return st.record(pendingRecord{Branch: branch, Base: repo.Head})
		})
	}
	if err == nil {
		err = sealInfo(&info)
	}
	if err != nil {
		st.Done()
		return nil, err
	}
	st.Info = info
	if err := m.share(ctx, repo, st); err != nil {
		m.Abandon(context.WithoutCancel(ctx), st)
		return nil, err
	}
	return st, nil
}

// share copies the shared directories from the checkout into the new
// session's worktree (those a claimed spare got fresh when it was
// prepared are kept) and adds what it did to the start's notes.
func (m *Manager) share(ctx context.Context, repo *Repo, st *Started) error {
	res, err := copyShared(ctx, m.Share, repo.Root, st.Path, st.GitDir, repo.CommonDir, st.fresh)
	st.Shared = res
	if n := res.Note(); n != "" {
		st.Notes = append(st.Notes, n)
	}
	st.Notes = append(st.Notes, res.Notes...)
	return err
}

// sealInfo records in info the administrative directory of its fresh
// worktree, from the repository's records, and the seal of its git
// configuration.
func sealInfo(info *Info) error {
	if info.GitDir == "" {
		admin, err := git.AdminDirOf(info.Path, info.CommonDir)
		if err != nil {
			return fmt.Errorf("worktree: %w", err)
		}
		info.GitDir = admin
	}
	seal, err := git.ReadSeal(info.GitDir)
	if err != nil {
		return fmt.Errorf("worktree: record the git configuration of %s: %w", info.Path, err)
	}
	info.Seal = &seal
	return nil
}

// spareLimit is the number of spares kept per repository.
func (m *Manager) spareLimit() int {
	if m.Spares < 0 {
		return 0
	}
	return m.Spares
}

// repoDir is <data-dir>/worktrees/<repo-id> of the repository at commonDir.
func (m *Manager) repoDir(commonDir string) (string, error) {
	root, err := m.root()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, RepoID(commonDir)), nil
}

// lockFile opens (creating it when create) and flocks path without
// blocking. ok is false when another open file holds the lock; a missing
// file without create is (nil, false, nil) too.
func lockFile(path string, create bool) (*os.File, bool, error) {
	flag := os.O_RDWR | syscall.O_NOFOLLOW | syscall.O_CLOEXEC
	if create {
		flag |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flag, 0o600)
	if errors.Is(err, fs.ErrNotExist) && !create {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("worktree: open lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("worktree: lock %s: %w", path, err)
	}
	// The file may have been removed by its owner between open and flock;
	// a lock on a removed file protects nothing.
	var a, b unix.Stat_t
	if unix.Fstat(int(f.Fd()), &a) != nil || unix.Stat(path, &b) != nil || a.Ino != b.Ino || a.Dev != b.Dev {
		f.Close()
		return nil, false, nil
	}
	return f, true, nil
}

// createLocked creates the lock file path already locked: it is made and
// flocked under a temporary name (.new-<hex>) and renamed into place, so a
// process that finds a lock file unlocked knows its maker is gone, never
// that it has not locked it yet. An existing file at path is replaced only
// by a caller that knows no one else can own it.
func createLocked(path string) (*os.File, error) {
	// Between creating the temporary file and locking it, another
	// process's sweep may take it for a dead maker's and remove it: the
	// rename then finds nothing, and a new temporary file is made.
	for attempt := 0; ; attempt++ {
		f, err := createLockedOnce(path)
		if err != nil && errors.Is(err, fs.ErrNotExist) && attempt < 5 {
			continue
		}
		return f, err
	}
}

func createLockedOnce(path string) (*os.File, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	tmp := filepath.Join(filepath.Dir(path), newPrefix+hex.EncodeToString(b[:]))
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("worktree: create lock %s: %w", tmp, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("worktree: lock %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		f.Close()
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("worktree: create lock %s: %w", path, err)
	}
	return f, nil
}

// repoLock takes the repository's spare lock, waiting while another process
// holds it (holds are short: a few renames and reads). The lock file is
// never deleted.
func repoLock(ctx context.Context, dir string) (func(), error) {
	return waitLock(ctx, filepath.Join(dir, repoLockName), unix.LOCK_EX, 30*time.Second,
		"another yolop process is stuck claiming or parking a worktree")
}

// waitLock opens (creating) the lock file at path and flocks it how
// (unix.LOCK_EX or LOCK_SH), waiting while it is held the other way, for
// at most limit; stuck says what a longer hold means. The returned func
// releases it.
func waitLock(ctx context.Context, path string, how int, limit time.Duration, stuck string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("worktree: open lock %s: %w", path, err)
	}
	delay := 2 * time.Millisecond
	deadline := time.Now().Add(limit)
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("worktree: lock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("worktree: %s stayed locked for %s; %s", path, limit, stuck)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		if delay < 50*time.Millisecond {
			delay *= 2
		}
	}
}

var spareName = regexp.MustCompile(`^\.spare-([0-9]+)$`)

// spares returns the ready spares in dir, lowest number first.
func spares(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("worktree: read %s: %w", dir, err)
	}
	type sp struct {
		n    int
		name string
	}
	var out []sp
	for _, e := range ents {
		if mm := spareName.FindStringSubmatch(e.Name()); mm != nil && e.IsDir() {
			n, _ := strconv.Atoi(mm[1])
			out = append(out, sp{n, e.Name()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].n < out[j].n })
	names := make([]string, len(out))
	for i, s := range out {
		names[i] = filepath.Join(dir, s.name)
	}
	return names, nil
}

// freeName returns dir/<prefix><n> for the lowest n >= 1 not in use.
func freeName(dir, prefix string) string {
	for n := 1; ; n++ {
		p := filepath.Join(dir, prefix+strconv.Itoa(n))
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			return p
		}
	}
}

// liveTmps counts the worktrees being prepared or parked in dir by live
// processes.
func liveTmps(dir string) int {
	ents, _ := os.ReadDir(dir)
	n := 0
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, tmpPrefix) || !strings.HasSuffix(name, lockSuffix) {
			continue
		}
		f, ok, err := lockFile(filepath.Join(dir, name), false)
		if err == nil && ok {
			f.Close()
			continue
		}
		if err == nil {
			n++
		}
	}
	return n
}

// tmpWorktree is a worktree directory being prepared or parked, marked by
// a lock its process holds while it lives.
type tmpWorktree struct {
	path string
	lock *os.File
}

func newTmp(dir string) (*tmpWorktree, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, tmpPrefix+hex.EncodeToString(b[:]))
	f, err := createLocked(path + lockSuffix)
	if err != nil {
		return nil, err
	}
	return &tmpWorktree{path: path, lock: f}, nil
}

func (t *tmpWorktree) release() {
	_ = os.Remove(t.path + lockSuffix)
	_ = t.lock.Close()
}

// adminDir returns git's administrative directory of the linked worktree at
// path (from its .git file) and the repository's common directory.
func adminDir(path string) (admin, common string, err error) {
	common, err = linkedRepo(path)
	if err != nil {
		return "", "", err
	}
	b, err := os.ReadFile(filepath.Join(path, ".git"))
	if err != nil {
		return "", "", err
	}
	admin = strings.TrimPrefix(strings.TrimRight(string(b), "\r\n"), "gitdir: ")
	if !filepath.IsAbs(admin) {
		admin = filepath.Join(path, admin)
	}
	return admin, common, nil
}

// repairLink makes git's record of the worktree at path point at it again
// after the directory was renamed by a process that died before it could
// tell git.
func repairLink(ctx context.Context, admin, common, path string) error {
	want := filepath.Join(path, ".git")
	b, err := os.ReadFile(filepath.Join(admin, "gitdir"))
	if err == nil && strings.TrimRight(string(b), "\r\n") == want {
		return nil
	}
	if _, err := git.New(common).Run(ctx, "worktree", "repair", path); err != nil {
		return fmt.Errorf("worktree: repair git's record of %s: %w", path, err)
	}
	return nil
}

// move renames the worktree from to to and tells git. It runs in the
// repository, never inside the worktree being moved. The callers pick a
// destination that does not exist; -f (once) lets git reuse a destination
// it still records although the directory is gone (a spare deleted by
// hand), while a locked worktree is still refused.
func move(ctx context.Context, common, from, to string) error {
	if _, err := git.New(common).Run(ctx, "worktree", "move", "-f", from, to); err != nil {
		return fmt.Errorf("worktree: move %s to %s: %w", from, to, err)
	}
	return nil
}

// opInProgress names a git operation left in progress in a worktree's
// administrative directory, "" when there is none.
func opInProgress(admin string) string {
	for _, f := range []string{"MERGE_HEAD", "rebase-merge", "rebase-apply", "CHERRY_PICK_HEAD", "REVERT_HEAD", "BISECT_LOG", "sequencer"} {
		if _, err := os.Lstat(filepath.Join(admin, f)); err == nil {
			return f
		}
	}
	return ""
}

// claim takes the lowest ready spare of dir for the session: moves it to
// path under the repository lock, checks it is exactly as parking left it,
// and checks out a new session branch at repo.Head. ok is false when there
// was no usable spare; notes say what happened to unusable ones.
func (m *Manager) claim(ctx context.Context, repo *Repo, dir, path, sessionID, title string, st *Started, detached bool) (Info, bool, []string, error) {
	unlock, err := repoLock(ctx, dir)
	if err != nil {
		return Info{}, false, nil, err
	}
	var notes []string
	var claimed string
	list, err := spares(dir)
	if err != nil {
		unlock()
		return Info{}, false, nil, err
	}
	var rec parkRecord
	for _, sp := range list {
		r, err := readRecord(sp)
		if err != nil {
			notes = append(notes, m.setAside(ctx, dir, sp, err.Error()))
			continue
		}
		admin, common := r.GitDir, repo.CommonDir
		if !fsutil.SamePath(filepath.Dir(admin), filepath.Join(common, "worktrees")) {
			notes = append(notes, m.setAside(ctx, dir, sp, "its git record "+admin+" is not one of the repository "+common))
			continue
		}
		if c, err := linkedRepo(sp); err == nil && c != common {
			notes = append(notes, m.setAside(ctx, dir, sp, "it belongs to the repository "+c))
			continue
		}
		if err := repairLink(ctx, admin, common, sp); err != nil {
			notes = append(notes, m.setAside(ctx, dir, sp, err.Error()))
			continue
		}
		if _, err := os.Lstat(filepath.Join(admin, "locked")); err == nil {
			notes = append(notes, m.setAside(ctx, dir, sp, "it is locked (git worktree lock)"))
			continue
		}
		if err := move(ctx, common, sp, path); err != nil {
			notes = append(notes, m.setAside(ctx, dir, sp, err.Error()))
			continue
		}
		// The record was read; a new spare of that name gets its own.
		_ = os.Remove(sp + recordSuffix)
		claimed, rec = sp, r
		break
	}
	unlock()
	if claimed == "" {
		return Info{}, false, notes, nil
	}
	m.hit("spare.claim_after_move")
	// A watcher is armed over the spare for the proof's capture to hand
	// the turn's end, instead of a walk: before the proof's status looks
	// (armed), which then waits for it.
	var watch *snapshot.Prewatch
	armed := make(chan struct{})
	// A spare whose preparation hurried (a start was waiting for it) has
	// no walk for the first capture, which would then walk after the
	// proof: the walk runs beside the proof's status instead. Its record
	// holds for every file whose inode it saw unchanged (KnownWalk). With
	// a watcher, that walk arms it (NewPrewatchByWalk: the status waits
	// only for the top directory's watch, and what changed since is
	// recorded as changed), and the watcher vouches for what changed
	// after the walk looked (Watched).
	var walk *snapshot.Walk
	walked := make(chan struct{})
	hurried := !detached && (rec.Walk == nil || rec.Walk.At.IsZero())
	switch {
	case hurried && m.Watch != nil:
		go func() {
			defer close(walked)
			// Without a watcher the captures walk, which is always
			// correct.
			pw, w := snapshot.NewPrewatchByWalk(path, m.Watch.Budget, func() { close(armed) })
			watch, walk = pw, &w
		}()
	case hurried:
		close(armed)
		go func() {
			defer close(walked)
			w := snapshot.WalkTree(path)
			walk = &w
		}()
	case m.Watch != nil:
		close(walked)
		go func() {
			defer close(armed)
			// Without one the captures walk, which is always correct.
			watch, _ = snapshot.NewPrewatch(path, m.Watch.Budget)
		}()
	default:
		close(walked)
		close(armed)
	}
	why := spareProblem(ctx, path, repo.CommonDir, rec, m.SpareKeeps == KeepNothing, m.Share, armed)
	<-walked
	if why != "" {
		watch.Close()
		return Info{}, false, append(notes, m.setAside(ctx, dir, path, why)), nil
	}
	if walk != nil {
		rec.Walk = walk
	}
	kept := false
	defer func() {
		if !kept {
			watch.Close()
		}
	}()
	d := dirsOf(path, rec.GitDir, repo.CommonDir)
	from := rec.Head
	info := Info{Path: path, Base: repo.Head, RepoRoot: repo.Root, CommonDir: repo.CommonDir, GitDir: rec.GitDir}
	seal := rec.Seal
	info.Seal = &seal
	if detached {
		if err := switchTo(ctx, d, from, repo.Head, ""); err != nil {
			notes = append(notes, fmt.Sprintf("could not move the spare worktree to %s (%v); it was removed and a fresh worktree is made instead", git.ShortOID(repo.Head), err))
			return Info{}, false, notes, m.discardClaim(ctx, repo, path, "", nil)
		}
		m.hit("spare.claim_after_reset")
		if rec.From == "" {
			st.fresh = rec.Shared
		}
		kept, st.Watch = true, watch
		return info, true, notes, nil
	}
	branch, err := pickBranch(ctx, d.Runner(), title, sessionID)
	if err != nil {
		return Info{}, false, notes, m.discardClaim(ctx, repo, path, "", err)
	}
	if err := st.record(pendingRecord{Branch: branch, Base: repo.Head}); err != nil {
		return Info{}, false, notes, m.discardClaim(ctx, repo, path, "", fmt.Errorf("worktree: record the start of session %s: %w", sessionID, err))
	}
	if err := switchTo(ctx, d, from, repo.Head, branch); err != nil {
		// A failed switch may have written part of the tree; the
		// worktree was clean and holds nothing of the user's.
		notes = append(notes, fmt.Sprintf("could not move the spare worktree to %s (%v); it was removed and a fresh worktree is made instead", git.ShortOID(repo.Head), err))
		return Info{}, false, notes, m.discardClaim(ctx, repo, path, branch, nil)
	}
	m.hit("spare.claim_after_reset")
	st.KnownClean = true
	if rec.From == "" {
		st.fresh = rec.Shared
	}
	if rec.Walk != nil && !rec.Walk.At.IsZero() {
		st.Walk = rec.Walk
	}
	kept, st.Watch = true, watch
	info.Branch = branch
	return info, true, notes, nil
}

// detachedHead returns the commit a detached worktree's HEAD points at
// (admin is its administrative directory).
func detachedHead(admin string) (string, error) {
	b, err := os.ReadFile(filepath.Join(admin, "HEAD"))
	if err != nil {
		return "", fmt.Errorf("its HEAD cannot be read: %w", err)
	}
	head := strings.TrimSpace(string(b))
	if !git.IsOID(head) {
		return "", fmt.Errorf("a branch is checked out in it (%s)", head)
	}
	return head, nil
}

// switchTo moves the clean worktree at path from commit from to commit to
// and points its HEAD at the new branch (created at to) or, when branch is
// "", detaches it at to. Moving is git's two-tree merge (`read-tree -m -u`),
// which writes only the paths that differ and, unlike `checkout`, does not
// lstat every file of the tree; at the same commit nothing but HEAD and the
// branch is written.
func switchTo(ctx context.Context, d git.Dirs, from, to, branch string) error {
	r := d.Runner()
	if from != to {
		if _, err := r.Run(ctx, "read-tree", "-m", "-u", from, to); err != nil {
			return err
		}
	}
	if branch == "" {
		_, err := r.Run(ctx, "update-ref", "--no-deref", "-m", "yolop: session worktree", "HEAD", to)
		return err
	}
	// Create only: the branch must not exist (pickBranch checked; a
	// concurrent start taking the same name makes this fail, not share it).
	if _, err := r.Run(ctx, "update-ref", "-m", "yolop: session branch", "refs/heads/"+branch, to, ""); err != nil {
		return err
	}
	_, err := r.Run(ctx, "symbolic-ref", "-m", "yolop: session branch", "HEAD", "refs/heads/"+branch)
	return err
}

// createDetached checks out a fresh worktree at path with HEAD detached at
// repo.Head.
func (m *Manager) createDetached(ctx context.Context, repo *Repo, path string) (Info, error) {
	if _, err := os.Lstat(path); err == nil {
		return Info{}, fmt.Errorf("worktree: %s already exists; resume the session instead of creating it again", path)
	}
	undo := func() { _ = removeWorktreeDir(context.WithoutCancel(ctx), path) }
	if err := addWorktree(ctx, repo.CommonDir, undo, "--quiet", "--detach", path, repo.Head); err != nil {
		undo()
		return Info{}, fmt.Errorf("worktree: add the session worktree at %s: %w", path, err)
	}
	return Info{Path: path, Base: repo.Head, RepoRoot: repo.Root, CommonDir: repo.CommonDir}, nil
}

// MakeBranch gives a worktree from StartDetached the session branch
// yolop/<slug>-<id> named from title, at commit (the user's HEAD now): git's
// two-tree checkout writes nothing when HEAD has not moved since the
// session opened, and only the differences when it has.
func (s *Started) MakeBranch(ctx context.Context, title, sessionID, commit string) error {
	if s.Info.Branch != "" {
		return nil
	}
	d := git.Dirs{GitDir: s.Info.GitDir, CommonDir: s.Info.CommonDir, WorkTree: s.Path}
	r := git.New(s.Path)
	if d.Set() {
		r = d.Runner()
	}
	branch, err := pickBranch(ctx, r, title, sessionID)
	if err != nil {
		return err
	}
	if s.pending != nil {
		if err := s.record(pendingRecord{Branch: branch, Base: commit}); err != nil {
			return fmt.Errorf("worktree: record the start of session %s: %w", sessionID, err)
		}
	}
	from, err := detachedHead(s.Info.GitDir)
	if err != nil {
		return fmt.Errorf("worktree: make the session branch in %s: %w", s.Path, err)
	}
	if err := git.CheckSeal(s.Info.GitDir, sealOrEmpty(s.Info.Seal)); err != nil {
		return fmt.Errorf("worktree: make the session branch in %s: %w", s.Path, err)
	}
	if err := switchTo(ctx, d, from, commit, branch); err != nil {
		return fmt.Errorf("worktree: make the session branch %s in %s: %w", branch, s.Path, err)
	}
	s.Info.Branch, s.Info.Base = branch, commit
	return nil
}

// Abandon gives back the worktree of a session that was opened and closed
// without a prompt: it is parked as a spare (or removed when the repository
// has its spares), unless something changed it, in which case it stays for
// `worktree prune` to report. The branch made for it, if any, is deleted
// while it still points where it was made.
func (m *Manager) Abandon(ctx context.Context, s *Started) {
	if s == nil {
		return
	}
	defer s.Done()
	s.Watch.Close()
	dir := filepath.Dir(s.Path)
	e := inspect(ctx, s.Path, filepath.Base(dir), filepath.Base(s.Path))
	if e.Missing || e.Dirty {
		return
	}
	if _, _, err := m.free(ctx, e, false, true); err != nil {
		return
	}
	if s.Info.Branch != "" && s.Info.Base != "" {
		r := git.New(s.CommonDir)
		if ok, err := refExists(ctx, r, "refs/heads/"+s.Info.Branch); err == nil && ok {
			_, _ = r.Run(ctx, "update-ref", "-d", "refs/heads/"+s.Info.Branch, s.Info.Base)
		}
	}
}

// discardClaim removes a claimed spare that could not become the session's
// worktree (and the branch made for it, while it still points at its
// start), then returns err.
func (m *Manager) discardClaim(ctx context.Context, repo *Repo, path, branch string, err error) error {
	ctx = context.WithoutCancel(ctx)
	r := git.New(repo.CommonDir)
	if _, rerr := r.Run(ctx, "worktree", "remove", "--force", path); rerr != nil {
		_ = os.RemoveAll(path)
		_ = pruneWorktrees(ctx, repo.CommonDir)
	}
	if branch != "" {
		if ok, rerr := refExists(ctx, r, "refs/heads/"+branch); rerr == nil && ok {
			_, _ = r.Run(ctx, "update-ref", "-d", "refs/heads/"+branch, repo.Head)
		}
	}
	return err
}

// spareProblem says why the worktree at path is not as parking left it
// (rec is its parking record; "" when it is): a foreign or broken link,
// anything but git's own files in its administrative directory (a lock,
// an operation in progress, config.worktree, sparse-checkout patterns,
// hooks), a HEAD other than the recorded commit, an index entry flagged
// skip-worktree or assume-unchanged, checkpoint refs of the session it was
// parked from, or any uncommitted change: tracked, untracked, or ignored
// outside the kept dependency directories. Apart from the one status every
// claim runs, it reads files only.
//
// The status begins only once armed is closed (a watcher armed over the
// worktree first sees every change the status could miss); the index's
// flags are read beside it.
func spareProblem(ctx context.Context, path, commonDir string, rec parkRecord, keepNothing bool, share []string, armed <-chan struct{}) string {
	// Waited for on every return: the watcher is the caller's to close.
	defer func() { <-armed }()
	admin := rec.GitDir
	b, err := os.ReadFile(filepath.Join(admin, "gitdir"))
	if err != nil {
		return "its git record " + admin + " cannot be read: " + err.Error()
	}
	if back, ok := parseGitdirLine(b, admin); !ok || !fsutil.SamePath(back, filepath.Join(path, ".git")) {
		return "its git record " + admin + " names another directory"
	}
	if b, err := os.ReadFile(filepath.Join(path, ".git")); err != nil || strings.TrimRight(string(b), "\r\n") != "gitdir: "+admin {
		return "its .git link was changed"
	}
	if _, err := os.Lstat(filepath.Join(admin, "locked")); err == nil {
		return "it is locked (git worktree lock)"
	}
	if op := opInProgress(admin); op != "" {
		return "a git operation is in progress in it (" + op + ")"
	}
	if _, err := os.Lstat(filepath.Join(admin, "index.lock")); err == nil {
		// A git process may be writing the index.
		return "its index is locked (index.lock)"
	}
	if f, err := foreignAdminFile(admin); err != nil {
		return "its git directory cannot be read: " + err.Error()
	} else if f != "" {
		return fmt.Sprintf("its git directory %s holds %s, which parking does not leave there", admin, f)
	}
	if head, err := os.ReadFile(filepath.Join(admin, "HEAD")); err != nil {
		return "its HEAD cannot be read: " + err.Error()
	} else if h := strings.TrimSpace(string(head)); h != rec.Head {
		if !git.IsOID(h) {
			return "a branch is checked out in it (" + h + ")"
		}
		return "its HEAD is not the commit it was parked at"
	}
	if err := git.CheckSeal(admin, rec.Seal); err != nil {
		return err.Error()
	}
	// The flags are read while the status runs (git replaces the index
	// whole, and a refresh changes no flag); they are judged first.
	type flags struct {
		paths []string
		err   error
	}
	flagDone := make(chan flags, 1)
	go func() {
		f, err := flaggedEntries(admin)
		flagDone <- flags{f, err}
	}()
	flagProblem := sync.OnceValue(func() string {
		f := <-flagDone
		if f.err != nil {
			return "its index cannot be read: " + f.err.Error()
		}
		if len(f.paths) > 0 {
			return fmt.Sprintf("%d index entries are flagged skip-worktree or assume-unchanged (e.g. %s), so git would not see their files' edits", len(f.paths), f.paths[0])
		}
		return ""
	})
	problem := func(why string) string { return cmp.Or(flagProblem(), why) }
	if old := rec.From; old != "" {
		refs, err := sessionRefs(ctx, commonDir, old)
		if err != nil {
			return problem("its earlier session's refs cannot be listed: " + err.Error())
		}
		if len(refs) > 0 {
			return problem(fmt.Sprintf("%d checkpoint refs of its earlier session %s are left", len(refs), old))
		}
	}
	// A plain status: it also refreshes (and writes) the index, so entries
	// left racily clean by parking are hashed once here, not at every
	// capture of the session. Ignored entries are listed without
	// descending into ignored directories (--ignored=matching).
	<-armed
	out, err := dirsOf(path, admin, commonDir).Runner().Run(ctx, "status", "--porcelain", "-z", "--untracked-files=all", "--ignored=matching")
	if why := flagProblem(); why != "" {
		return why
	}
	if err != nil {
		return "its status cannot be read: " + err.Error()
	}
	var changed []string
	for _, p := range git.SplitZ(out) {
		if len(p) < 4 {
			continue
		}
		if (p[:2] == "!!" || p[:2] == "??") && keptCache(p[3:], keepNothing) {
			continue
		}
		if p[:2] == "!!" && isShared(p[3:], share) {
			continue
		}
		changed = append(changed, p)
	}
	if len(changed) > 0 {
		return fmt.Sprintf("it has changes made outside yolop (%d paths, e.g. %s)", len(changed), strings.TrimSpace(changed[0][2:]))
	}
	return ""
}

func sealOrEmpty(s *git.Seal) git.Seal {
	if s == nil {
		return git.Seal{}
	}
	return *s
}

// parseGitdirLine reads the single path line of an admin entry's gitdir
// file (relative paths are relative to the admin directory).
func parseGitdirLine(b []byte, base string) (string, bool) {
	s := strings.TrimRight(string(b), "\r\n")
	if s == "" || strings.ContainsAny(s, "\n\x00") {
		return "", false
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(base, s)
	}
	return filepath.Clean(s), true
}

// setAside renames a spare that cannot be used to .stale-<n>, where it is
// listed and `worktree prune --spares` removes it, and returns a note.
func (m *Manager) setAside(ctx context.Context, dir, path, why string) string {
	to := freeName(dir, stalePrefix)
	var err error
	common, lerr := linkedRepo(path)
	if lerr == nil {
		err = move(ctx, common, path, to)
	}
	if lerr != nil || err != nil {
		// git refuses to move a locked worktree (or one it no longer
		// knows); a plain rename keeps it out of the way, and git's
		// record, if any, is pointed at the new place.
		if err = os.Rename(path, to); err == nil && lerr == nil {
			_, _ = git.New(common).Run(ctx, "worktree", "repair", to)
		}
	}
	_ = os.Remove(path + recordSuffix)
	if err != nil {
		return fmt.Sprintf("spare worktree %s was not used (%s) and could not be set aside: %v", path, why, err)
	}
	return fmt.Sprintf("spare worktree %s was not used (%s); it was moved to %s, `yolop worktree prune --spares` removes it", path, why, to)
}

// sweep cleans up what interrupted processes left in dir: worktrees half
// prepared or half parked (removed), and starts killed before their session
// directory existed (the worktree is parked, or removed, and the branch made
// for it deleted while it still points where it was made). It returns notes
// for the user. Errors only leave things for the next sweep or for prune.
func (m *Manager) sweep(ctx context.Context, dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var notes []string
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, newPrefix):
			// A lock file whose maker died before renaming it into place.
			// A young one may belong to a maker about to lock it.
			if info, err := e.Info(); err != nil || time.Since(info.ModTime()) < time.Minute {
				continue
			}
			if f, ok, err := lockFile(filepath.Join(dir, name), false); err == nil && ok {
				_ = os.Remove(filepath.Join(dir, name))
				f.Close()
			}
		case strings.HasPrefix(name, tmpPrefix) && strings.HasSuffix(name, lockSuffix):
			f, ok, err := lockFile(filepath.Join(dir, name), false)
			if err != nil || !ok {
				continue
			}
			tmp := filepath.Join(dir, strings.TrimSuffix(name, lockSuffix))
			if _, err := os.Lstat(tmp); err == nil {
				if err := removeWorktreeDir(ctx, tmp); err == nil {
					notes = append(notes, "removed the half-made spare worktree "+tmp+" left by an interrupted yolop process")
				}
			}
			_ = os.Remove(filepath.Join(dir, name))
			f.Close()
		case strings.HasPrefix(name, tmpPrefix) && strings.HasSuffix(name, waitSuffix) && !e.IsDir():
			// A reservation whose waiter died; the preparation it
			// reserved is over once its lock file is gone.
			base := strings.TrimSuffix(name, waitSuffix)
			if _, err := os.Lstat(filepath.Join(dir, base+lockSuffix)); errors.Is(err, fs.ErrNotExist) {
				if r := reserve(filepath.Join(dir, name)); r != nil {
					r.release()
				}
			}
		case strings.HasPrefix(name, tmpPrefix) && e.IsDir():
			// Every .tmp- directory is made after its lock; one without a
			// lock file is a leftover whose lock was already cleaned.
			if _, err := os.Lstat(filepath.Join(dir, name+lockSuffix)); errors.Is(err, fs.ErrNotExist) {
				_ = removeWorktreeDir(ctx, filepath.Join(dir, name))
			}
		case strings.HasPrefix(name, trashPrefix) && e.IsDir():
			_ = os.RemoveAll(filepath.Join(dir, name))
		case strings.HasSuffix(name, recordSuffix) && !e.IsDir():
			// A parking record whose spare went (claimed, set aside or
			// removed by an interrupted process).
			if _, err := os.Lstat(filepath.Join(dir, strings.TrimSuffix(name, recordSuffix))); errors.Is(err, fs.ErrNotExist) {
				_ = os.Remove(filepath.Join(dir, name))
			}
		case strings.HasPrefix(name, pendingPrefix) && strings.HasSuffix(name, lockSuffix):
			sid := strings.TrimSuffix(strings.TrimPrefix(name, pendingPrefix), lockSuffix)
			if checkSessionID(sid) != nil {
				continue
			}
			f, ok, err := lockFile(filepath.Join(dir, name), false)
			if err != nil || !ok {
				continue
			}
			if note := m.adoptOrphan(ctx, dir, sid, f); note != "" {
				notes = append(notes, note)
			}
			_ = os.Remove(filepath.Join(dir, name))
			f.Close()
		}
	}
	return notes
}

// dropDeadAdmins removes the administrative entries of the repository
// whose common directory is common (<common>/worktrees/<name>) that a
// preparation killed during its `git worktree add` left: git writes the
// entry first, locked ("initializing") until the add is done, and one
// left half-written makes every later add in the repository fail ("failed
// to read worktrees/<name>/commondir"), while `git worktree prune` keeps
// it for its lock. An entry is such a leftover when it names a
// preparation's worktree (.tmp-<12 hex> in a data directory's
// worktrees/<repository>/) that does not exist, it is locked by git's
// add or not at all (a `git worktree lock` keeps it, as it keeps it from
// prune), and no live preparation holds that worktree's lock, which a
// preparation takes before its add and keeps until it is over. It
// returns notes for the entries removed.
func dropDeadAdmins(common string) []string {
	return dropAdmins(common, func(wt string) bool {
		lock := wt + lockSuffix
		if _, err := os.Lstat(lock); errors.Is(err, fs.ErrNotExist) {
			return true
		} else if err != nil {
			return false
		}
		f, free, err := lockFile(lock, false)
		if err != nil || !free {
			return false // a preparation is at it
		}
		f.Close()
		return true
	})
}

// isTmpName reports whether name is that of a worktree being prepared
// (newTmp): .tmp- and 12 lowercase hex digits.
func isTmpName(name string) bool {
	h, ok := strings.CutPrefix(name, tmpPrefix)
	if !ok || len(h) != 12 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil && strings.ToLower(h) == h
}

// dropAdmins removes the administrative entries of the repository whose
// common directory is common that name a preparation's worktree
// (.tmp-<hex>) that does not exist and that drop approves, and returns
// notes for them.
func dropAdmins(common string, drop func(worktree string) bool) []string {
	root := filepath.Join(common, "worktrees")
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	var notes []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		admin := filepath.Join(root, e.Name())
		b, err := os.ReadFile(filepath.Join(admin, "gitdir"))
		if err != nil {
			continue
		}
		p, ok := parseGitdirLine(b, admin)
		if !ok || filepath.Base(p) != ".git" {
			continue
		}
		wt := filepath.Dir(p)
		if !isTmpName(filepath.Base(wt)) || filepath.Base(filepath.Dir(filepath.Dir(wt))) != "worktrees" {
			continue // not a preparation's: <data>/worktrees/<repo>/.tmp-<hex>
		}
		if _, err := os.Lstat(wt); !errors.Is(err, fs.ErrNotExist) {
			continue // there (the sweep removes it whole) or unknown
		}
		// git's own lock while it adds, or none: a lock anyone else put
		// there (git worktree lock) keeps the record, as prune does.
		if b, err := os.ReadFile(filepath.Join(admin, "locked")); err == nil && strings.TrimSpace(string(b)) != "initializing" {
			continue
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if !drop(wt) {
			continue
		}
		if err := os.RemoveAll(admin); err == nil {
			notes = append(notes, "removed the git record "+admin+" of a spare worktree whose preparation was interrupted (it made every new worktree of the repository fail)")
		}
	}
	return notes
}

// adoptOrphan handles a session start whose process died (its pending lock
// f is now ours). When the session directory exists the start had finished.
// Otherwise no turn ever ran in the worktree: it is parked as a spare (or
// removed when the repository has its spares) and the branch made for it is
// deleted while it still points at the commit it was made at.
func (m *Manager) adoptOrphan(ctx context.Context, dir, sid string, f *os.File) string {
	if m.sessionExists(sid) {
		return ""
	}
	var rec pendingRecord
	if b, err := os.ReadFile(f.Name()); err == nil && len(b) > 0 {
		_ = json.Unmarshal(b, &rec)
	}
	path := filepath.Join(dir, sid)
	note := ""
	common := ""
	if _, err := os.Lstat(path); err == nil {
		common, _ = linkedRepo(path)
		e := inspect(ctx, path, filepath.Base(dir), sid)
		if e.Missing {
			return fmt.Sprintf("the worktree %s of a session whose start was interrupted was left in place (%s); `yolop worktree prune` lists it", path, entryProblem(e))
		}
		// No turn ever ran in it (its session never existed): whatever
		// state the start left, half moved or half copied, is yolop's own.
		_, parked, err := m.free(ctx, e, true, true)
		switch {
		case err != nil:
			return fmt.Sprintf("the worktree %s of a session whose start was interrupted could not be cleaned up: %v", path, err)
		case parked != "":
			note = fmt.Sprintf("the worktree of a session whose start was interrupted was kept as the spare %s", parked)
		default:
			note = fmt.Sprintf("removed the worktree %s of a session whose start was interrupted", path)
		}
	}
	if rec.Branch != "" && rec.Base != "" {
		if common == "" {
			common = m.commonDirOf(dir)
		}
		if common != "" {
			r := git.New(common)
			if ok, err := refExists(ctx, r, "refs/heads/"+rec.Branch); err == nil && ok {
				if _, err := r.Run(ctx, "update-ref", "-d", "refs/heads/"+rec.Branch, rec.Base); err == nil && note != "" {
					note += " (its unused branch " + rec.Branch + " was deleted)"
				}
			}
		}
	}
	return note
}

func entryProblem(e Entry) string {
	if e.Problem != "" {
		return e.Problem
	}
	if len(e.DirtyPaths) > 0 {
		return "uncommitted changes: " + strings.Join(e.DirtyPaths, ", ")
	}
	return "unknown state"
}

// commonDirOf finds the repository of a <repo-id> directory from any
// worktree in it.
func (m *Manager) commonDirOf(dir string) string {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			if c, err := linkedRepo(filepath.Join(dir, e.Name())); err == nil {
				return c
			}
		}
	}
	return ""
}

// sessionExists reports whether session id is complete on disk (or
// cannot be checked, which must not count as "gone"): its directory
// holds workspace.json, which a session has before its first turn.
func (m *Manager) sessionExists(id string) bool {
	root, err := m.root()
	if err != nil {
		return true
	}
	_, err = os.Lstat(filepath.Join(filepath.Dir(root), "sessions", id, session.WorkspaceFile))
	return !errors.Is(err, fs.ErrNotExist)
}

// removeWorktreeDir removes a yolop-owned worktree directory that holds
// nothing of the user's (a half-made spare), and git's record of it.
func removeWorktreeDir(ctx context.Context, path string) error {
	common, err := linkedRepo(path)
	if err == nil {
		if _, err := git.New(common).Run(ctx, "worktree", "remove", "--force", "--force", path); err == nil {
			return nil
		}
	}
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("worktree: remove %s: %w", path, err)
	}
	if common != "" {
		_ = pruneWorktrees(ctx, common)
	}
	return nil
}

// park resets the worktree at path to a known state and makes it the spare
// .spare-<n> of its repository when the repository has fewer spares than
// its limit. It returns "" (and changes nothing) when the repository has
// its spares, the worktree cannot be recycled (a locked worktree, one
// with submodules or an operation in progress), or a process started for
// fromSession still runs; the caller then removes it as before.
// fromSession names the session the worktree belonged to; its checkpoint
// refs must be gone already.
//
// Recycling moves the files into a new directory with a new
// administrative directory (see recycle), so no process of the old
// session can write the spare; the reset rebuilds the index from HEAD and
// removes every untracked and ignored file but the kept dependency
// directories (resetToKnown); the parking record goes beside the spare in
// the data directory.
func (m *Manager) park(ctx context.Context, path, fromSession string) (string, error) {
	dir := filepath.Dir(path)
	common, err := linkedRepo(path)
	if err != nil {
		return "", nil
	}
	admin, err := git.AdminDirOf(path, common)
	if err != nil {
		return "", nil
	}
	if _, err := os.Lstat(filepath.Join(admin, "locked")); err == nil {
		return "", nil
	}
	if op := opInProgress(admin); op != "" {
		return "", nil
	}
	if why := m.busy(fromSession); why != "" {
		return "", nil
	}
	unlock, err := repoLock(ctx, dir)
	if err != nil {
		return "", err
	}
	list, err := spares(dir)
	if err != nil || len(list)+liveTmps(dir) >= m.spareLimit() {
		unlock()
		return "", err
	}
	tmp, err := newTmp(dir)
	if err != nil {
		unlock()
		return "", err
	}
	newAdmin, head, err := recycle(ctx, common, path, admin, tmp.path)
	unlock()
	if err != nil {
		// Part of the files may be in either place; the worktree was
		// being discarded, and both go.
		_ = os.RemoveAll(tmp.path)
		_ = os.RemoveAll(path)
		if newAdmin != "" {
			_ = os.RemoveAll(newAdmin)
		}
		_ = pruneWorktrees(context.WithoutCancel(ctx), common)
		tmp.release()
		return "", nil
	}
	// From here on an interruption leaves a .tmp- worktree that the next
	// start removes; the session's worktree was being discarded anyway.
	m.hit("spare.park_after_move")
	if err := m.settle(ctx, tmp.path, newAdmin, common, head, fromSession, true, nil, true); err != nil {
		_ = removeWorktreeDir(ctx, tmp.path)
		tmp.release()
		return "", fmt.Errorf("worktree: clean %s for reuse: %w", path, err)
	}
	m.hit("spare.park_after_reset")
	return m.promote(ctx, dir, common, tmp)
}

// settle resets a spare being parked (reset) or prepared to its known
// state and writes its parking record beside it, with the snapshot walk
// of its tree when walk.
func (m *Manager) settle(ctx context.Context, path, admin, common, head, fromSession string, reset bool, shared map[string]string, walk bool) error {
	if reset {
		if err := resetToKnown(ctx, path, admin, common, m.SpareKeeps == KeepNothing); err != nil {
			return err
		}
	}
	if head == "" {
		h, err := detachedHead(admin)
		if err != nil {
			return err
		}
		head = h
	}
	seal, err := git.ReadSeal(admin)
	if err != nil {
		return err
	}
	rec := parkRecord{From: fromSession, Head: head, GitDir: admin, Seal: seal, Shared: shared}
	if walk {
		w := snapshot.WalkTree(path)
		rec.Walk = &w
	}
	return writeRecord(path, rec)
}

// promote renames a clean worktree being prepared or parked to the next free
// .spare-<n>, or removes it when the repository got its spares meanwhile.
func (m *Manager) promote(ctx context.Context, dir, common string, tmp *tmpWorktree) (string, error) {
	defer tmp.release()
	unlock, err := repoLock(ctx, dir)
	if err != nil {
		_ = removeWorktreeDir(ctx, tmp.path)
		return "", err
	}
	list, err := spares(dir)
	if err != nil || len(list) >= m.spareLimit() {
		unlock()
		return "", removeWorktreeDir(ctx, tmp.path)
	}
	to := freeName(dir, sparePrefix)
	err = move(ctx, common, tmp.path, to)
	if err == nil {
		if err = moveRecord(tmp.path, to); err != nil {
			unlock()
			_ = removeWorktreeDir(ctx, to)
			return "", err
		}
	}
	unlock()
	if err != nil {
		_ = removeWorktreeDir(ctx, tmp.path)
		_ = os.Remove(tmp.path + recordSuffix)
		return "", err
	}
	m.hit("spare.park_after_rename")
	return to, nil
}

// PrepareSpare makes a spare for the repository in the background's place:
// a new worktree with HEAD detached at commit (repo.Head when empty), its
// index settled so that no entry is racily clean, renamed to .spare-<n> at
// the end. It returns ErrSpareLimit when the repository already has its
// spares (counting those being prepared). Killed at any point it leaves a
// .tmp- worktree that the next start removes, or a finished spare.
// The outcome is recorded for the user (see PrepareFailure).
func (m *Manager) PrepareSpare(ctx context.Context, repo *Repo, commit string) (string, error) {
	if repo == nil || repo.CommonDir == "" || repo.Head == "" {
		return "", errors.New("worktree: PrepareSpare needs a repository from Detect")
	}
	if commit == "" {
		commit = repo.Head
	}
	dir, err := m.repoDir(repo.CommonDir)
	if err != nil {
		return "", err
	}
	if err := mkdirPrivate(dir); err != nil {
		return "", err
	}
	path, err := m.prepareSpare(ctx, repo, dir, commit)
	recordPrepare(dir, repo.Root, err)
	return path, err
}

func (m *Manager) prepareSpare(ctx context.Context, repo *Repo, dir, commit string) (string, error) {
	m.sweep(ctx, dir)
	dropDeadAdmins(repo.CommonDir)
	unlock, err := repoLock(ctx, dir)
	if err != nil {
		return "", err
	}
	list, err := spares(dir)
	if err != nil {
		unlock()
		return "", err
	}
	if len(list)+liveTmps(dir) >= m.spareLimit() {
		unlock()
		return "", ErrSpareLimit
	}
	tmp, err := newTmp(dir)
	unlock()
	if err != nil {
		return "", err
	}
	undo := func() {
		_ = removeWorktreeDir(context.WithoutCancel(ctx), tmp.path)
		// An add cut short leaves git's record of it half-written,
		// which fails every later add in the repository.
		dropAdmins(repo.CommonDir, func(wt string) bool { return fsutil.SamePath(wt, tmp.path) })
	}
	if err := tmp.describe(commit); err != nil {
		tmp.release()
		return "", err
	}
	// The git processes run in a group the poll stops while a turn runs
	// (see turns.go); the undo's own git runs outside it.
	p := startPauser(repo.CommonDir, tmp.path+lockSuffix, m.PollEvery)
	defer p.close()
	gctx := p.context(ctx)
	// The add itself holds the worktrees lock, which a prune waits for:
	// it is not stopped. The checkout, git's `reset --hard` as the add
	// would run it, is.
	if err := addWorktree(gctx, repo.CommonDir, undo, "--quiet", "--no-checkout", "--detach", tmp.path, commit); err != nil {
		undo()
		tmp.release()
		return "", fmt.Errorf("worktree: prepare a spare worktree at %s: %w", tmp.path, err)
	}
	p.arm()
	if _, err := git.New(tmp.path).Run(gctx, "-c", parallelCheckout, "reset", "--hard", "--no-recurse-submodules", "--quiet"); err != nil {
		p.disarm()
		undo()
		tmp.release()
		return "", fmt.Errorf("worktree: check out the spare worktree at %s: %w", tmp.path, err)
	}
	m.hit("spare.prepare_after_add")
	// A start waiting for this spare claims it at once: the claim's own
	// status refreshes the index, and the session's first capture walks
	// the tree at the start's priority rather than this one's.
	hurry := func() bool { return reserved(tmp.path + waitSuffix) }
	err = settleIndex(gctx, tmp.path, hurry)
	p.disarm()
	if err != nil {
		_ = removeWorktreeDir(context.WithoutCancel(ctx), tmp.path)
		tmp.release()
		return "", err
	}
	admin, err := git.AdminDirOf(tmp.path, repo.CommonDir)
	var shared ShareResult
	if err == nil {
		// Copied before the walk is recorded; a failed copy is left to
		// the claim, which copies what the spare lacks and says why.
		shared, err = copyShared(ctx, m.Share, repo.Root, tmp.path, admin, repo.CommonDir, nil)
	}
	if err == nil {
		err = m.settle(ctx, tmp.path, admin, repo.CommonDir, "", "", false, shared.Stamps, !hurry())
	}
	if err != nil {
		_ = removeWorktreeDir(context.WithoutCancel(ctx), tmp.path)
		tmp.release()
		return "", fmt.Errorf("worktree: mark the spare %s: %w", tmp.path, err)
	}
	to, err := m.promote(ctx, dir, repo.CommonDir, tmp)
	if err == nil {
		m.hit("spare.prepare_after_rename")
	}
	return to, err
}

// settleIndex waits until the worktree's index is more than a second older
// than the checkout, then refreshes it: entries written in the same second
// as the index are racily clean and would be re-hashed by every status (and
// by the first capture seeded from it). status refreshes and writes the
// index when it found such entries. It gives up (nil) as soon as hurry
// says a start waits for the worktree.
func settleIndex(ctx context.Context, path string, hurry func() bool) error {
	admin, _, err := adminDir(path)
	if err != nil {
		return err
	}
	if st, err := os.Stat(filepath.Join(admin, "index")); err == nil {
		until := st.ModTime().Add(1100 * time.Millisecond)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for time.Now().Before(until) {
			if hurry() {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
			}
		}
	}
	if hurry() {
		return nil
	}
	if _, err := git.New(path).Run(ctx, "status", "--porcelain", "--untracked-files=all"); err != nil {
		return fmt.Errorf("worktree: settle the index of %s: %w", path, err)
	}
	return nil
}

// ChecksOut reports whether a new session's worktree for the checkout
// holding dir ("" = the current directory) is checked out (so a host can
// say what the wait is for): dir is in a repository, and no spare of it
// is ready to be claimed, which writes only the files that differ and
// takes no noticeable time.
func (m *Manager) ChecksOut(ctx context.Context, dir string) bool {
	if dir == "" {
		dir = "."
	}
	repo, err := Detect(ctx, dir)
	return err == nil && !m.SpareReady(repo)
}

// SpareReady reports whether repo has a parked spare a new session can
// claim now (so its start checks nothing out).
func (m *Manager) SpareReady(repo *Repo) bool {
	if m.spareLimit() == 0 || repo == nil || repo.Bare {
		return false
	}
	dir, err := m.repoDir(repo.CommonDir)
	if err != nil {
		return false
	}
	list, err := spares(dir)
	return err == nil && len(list) > 0
}

// SparesWanted reports whether the repository has fewer spares than its
// limit (counting those being prepared), so that starting a preparation is
// worth it. It only reads directories.
func (m *Manager) SparesWanted(repo *Repo) bool {
	if m.spareLimit() == 0 || repo == nil {
		return false
	}
	dir, err := m.repoDir(repo.CommonDir)
	if err != nil {
		return false
	}
	list, err := spares(dir)
	return err == nil && len(list)+liveTmps(dir) < m.spareLimit()
}
