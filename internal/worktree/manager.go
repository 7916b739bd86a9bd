package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/snapshot"
)

// BranchPrefix starts the name of every session branch.
const BranchPrefix = "yolop/"

// RefPrefix is where a session's checkpoint refs live:
// RefPrefix + <session-id> + "/" + <checkpoint-id>.
const RefPrefix = "refs/yolop/checkpoints/"

// ModesRefPrefix is where the permission records kept beside a session's
// checkpoint refs live (same layout); they go when the checkpoints go.
const ModesRefPrefix = "refs/yolop/modes/"

// Info describes one session's worktree; it is what a session records (in its
// workspace.json) to find the worktree again.
type Info struct {
	Path      string // the worktree's top level
	Branch    string // the session branch's short name, yolop/<slug>-<short-id>
	Base      string // the commit the branch started from
	RepoRoot  string // the user's checkout the session was started from
	CommonDir string // the repository's common git directory
	// GitDir is the worktree's administrative directory in the repository
	// and Seal what its config.worktree and info/sparse-checkout held, as
	// Start found them (a session records both; see git.Dirs, git.Seal).
	GitDir string
	Seal   *git.Seal
	// LinkRepaired is set by Ensure when the worktree's .git file had been
	// changed and was pointed back at the repository.
	LinkRepaired bool
	// Recreated is set by Ensure when the worktree directory was gone and
	// was added again on its branch: it holds the branch's committed
	// files, none of the uncommitted ones it had.
	Recreated bool
	// BranchRecreated is set with Recreated when the branch was gone too
	// and was made again at Base: the commits it had are not on it.
	BranchRecreated bool
}

// Manager creates and tends session worktrees under DataDir/worktrees.
type Manager struct {
	// DataDir is yolop's data directory.
	DataDir string
	// Spares is how many parked spare worktrees a repository keeps for
	// new sessions ([worktree] spares). Zero turns recycling off: freed
	// worktrees are removed and Start always makes a fresh worktree.
	Spares int
	// SpareKeeps says what a parked worktree keeps of the files git does
	// not track: KeepDependencies (the default, "") keeps the
	// write-blocklisted dependency and build directories as a warm cache,
	// KeepNothing makes it fully clean.
	SpareKeeps string
	// Share lists the directories copied from the checkout into each new
	// session worktree ([worktree] share; see CheckShare).
	Share []string
	// Failpoint, when set, is called at each step of claiming, parking
	// and preparing a spare (SpareFailpoints); crash tests make it kill
	// the process.
	Failpoint func(name string)
	// Notify, when set, is told what a start waits for as it begins to
	// wait (a spare being prepared in the background), for the host to
	// show.
	Notify func(msg string)
	// StallLimit and WaitLimit bound a start's wait for a preparation in
	// flight: no progress for StallLimit, or WaitLimit in all, and it
	// checks out its own worktree (zero: 15 s and 10 minutes). PollEvery
	// is how often a preparation looks whether a turn runs (zero: 100 ms).
	StallLimit, WaitLimit, PollEvery time.Duration
	// Watch, when set, arms a file watcher (snapshot.NewPrewatch) over a
	// claimed spare before its status proves it clean, for the session's
	// engine (Started.Watch): the capture after the first, derived one
	// then looks at what changed instead of walking. Its Budget is
	// WatchOptions.Budget's.
	Watch *snapshot.WatchOptions
}

// validSessionID keeps session ids usable as one path component and one
// ref name component: a session id (1-128 of [A-Za-z0-9_-]) that starts
// with a letter or digit, so that no branch or path made of it reads as
// an option.
func validSessionID(id string) bool {
	return session.CheckID(id) == nil && id[0] != '_' && id[0] != '-'
}

func checkSessionID(id string) error {
	if !validSessionID(id) {
		return fmt.Errorf("worktree: invalid session id %q: want letters, digits, '_' or '-', starting with a letter or digit", id)
	}
	return nil
}

// root returns the absolute <data-dir>/worktrees.
func (m *Manager) root() (string, error) {
	if m.DataDir == "" {
		return "", errors.New("worktree: Manager.DataDir is empty; set the data directory")
	}
	abs, err := filepath.Abs(m.DataDir)
	if err != nil {
		return "", fmt.Errorf("worktree: resolve data directory %s: %w", m.DataDir, err)
	}
	return filepath.Join(abs, "worktrees"), nil
}

// PathFor returns where the worktree of sessionID in repo lives.
func (m *Manager) PathFor(repo *Repo, sessionID string) (string, error) {
	if err := checkSessionID(sessionID); err != nil {
		return "", err
	}
	root, err := m.root()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, RepoID(repo.CommonDir), sessionID), nil
}

// BranchName returns yolop/<slug>-<short-id>: the slug is title lowercased to
// [a-z0-9-] and at most 24 bytes ("session" when nothing is left), the short
// id is the last 6 characters of the session id.
func BranchName(title, sessionID string) string {
	slug := sanitize(title, "", 24)
	if slug == "" {
		slug = "session"
	}
	short := sessionID
	if len(short) > 6 {
		short = short[len(short)-6:]
	}
	return BranchPrefix + slug + "-" + sanitize(short, "", 6)
}

// Create adds the worktree of a new session: a new branch named by
// BranchName, starting at repo.Head, checked out at
// <data-dir>/worktrees/<repo-id>/<session-id>. The directories created on the
// way are owner-only. No hook runs. If a branch of that name already exists
// (another session with the same title and id suffix), "-2", "-3", ... is
// appended. On failure nothing is left behind: no directory, no branch.
func (m *Manager) Create(ctx context.Context, repo *Repo, sessionID, title string) (Info, error) {
	return m.create(ctx, repo, sessionID, title, nil)
}

// create is Create; before, when set, learns the branch name before the
// branch is made (Start records it so that a killed start can be undone).
func (m *Manager) create(ctx context.Context, repo *Repo, sessionID, title string, before func(branch string) error) (Info, error) {
	if repo == nil || repo.CommonDir == "" || repo.Root == "" || repo.Head == "" {
		return Info{}, errors.New("worktree: Create needs a repository from Detect")
	}
	if repo.Bare {
		return Info{}, errorf(ErrBare, "%s is a bare repository; sessions need a checkout to start from", repo.CommonDir)
	}
	path, err := m.PathFor(repo, sessionID)
	if err != nil {
		return Info{}, err
	}
	if _, err := os.Lstat(path); err == nil {
		return Info{}, fmt.Errorf("worktree: %s already exists; resume the session instead of creating it again", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Info{}, fmt.Errorf("worktree: %w", err)
	}
	if err := mkdirPrivate(filepath.Dir(path)); err != nil {
		return Info{}, err
	}
	r := git.New(repo.Root)
	branch, err := pickBranch(ctx, r, title, sessionID)
	if err != nil {
		return Info{}, err
	}
	if before != nil {
		if err := before(branch); err != nil {
			return Info{}, fmt.Errorf("worktree: record the start of session %s: %w", sessionID, err)
		}
	}
	undo := func() { m.undoCreate(git.New(repo.CommonDir), path, branch, repo.Head) }
	if err := addWorktree(ctx, repo.CommonDir, undo, "--quiet", "-b", branch, path, repo.Head); err != nil {
		undo()
		return Info{}, fmt.Errorf("worktree: add the session worktree at %s: %w", path, err)
	}
	return Info{Path: path, Branch: branch, Base: repo.Head, RepoRoot: repo.Root, CommonDir: repo.CommonDir}, nil
}

// pickBranch returns BranchName(title, sessionID), with "-2", "-3", ...
// appended when a branch of that name exists (another session with the same
// title and id suffix).
func pickBranch(ctx context.Context, r *git.Runner, title, sessionID string) (string, error) {
	// A branch named exactly "yolop" makes every yolop/... branch impossible
	// (a ref name cannot be both a file and a directory); say so plainly.
	if blocked, err := refExists(ctx, r, "refs/heads/"+strings.TrimSuffix(BranchPrefix, "/")); err != nil {
		return "", fmt.Errorf("worktree: check branches in %s: %w", r.Dir, err)
	} else if blocked {
		return "", fmt.Errorf("worktree: the branch %q in %s blocks session branches named %s...; rename it (git branch -m %s <new-name>)",
			strings.TrimSuffix(BranchPrefix, "/"), r.Dir, BranchPrefix, strings.TrimSuffix(BranchPrefix, "/"))
	}
	base := BranchName(title, sessionID)
	branch := base
	for n := 2; ; n++ {
		exists, err := refExists(ctx, r, "refs/heads/"+branch)
		if err != nil {
			return "", fmt.Errorf("worktree: check branch %s: %w", branch, err)
		}
		if !exists {
			return branch, nil
		}
		if n > 100 {
			return "", fmt.Errorf("worktree: branches %s through %s-99 all exist; delete some old session branches", base, base)
		}
		branch = base + "-" + strconv.Itoa(n)
	}
}

// undoCreate removes what a failed `git worktree add -b` may have left (r
// runs in the common directory): git creates the branch before checking
// out, and keeps it when the checkout fails. It runs on a fresh context so
// a cancelled Create still cleans up.
func (m *Manager) undoCreate(r *git.Runner, path, branch, head string) {
	ctx := context.Background()
	_ = os.RemoveAll(path)
	_ = pruneWorktrees(ctx, r.Dir)
	// The branch did not exist before this call (Create checked); delete it
	// only while it still points where git created it. Checking first keeps
	// a failed delete of a ref that was never made from retrying as a lock.
	if ok, err := refExists(ctx, r, "refs/heads/"+branch); err == nil && ok {
		_, _ = r.Run(ctx, "update-ref", "-d", "refs/heads/"+branch, head)
	}
}

// Ensure makes info's worktree usable again when a session resumes. An
// existing directory must be a worktree of info.CommonDir and is used as it
// is. A directory that was deleted is re-added on info.Branch after git's
// stale record of it is pruned; when the branch is gone too, it is made
// again at info.Base (BranchRecreated). Ensure fails with ErrBranchGone only
// when that commit is gone as well.
func (m *Manager) Ensure(ctx context.Context, info Info) (Info, error) {
	if info.Path == "" || info.CommonDir == "" || info.Branch == "" {
		return Info{}, fmt.Errorf("worktree: incomplete worktree record (path %q, repository %q, branch %q)", info.Path, info.CommonDir, info.Branch)
	}
	if st, err := os.Stat(info.CommonDir); err != nil || !st.IsDir() {
		where := info.RepoRoot
		if where == "" {
			where = info.CommonDir
		}
		return Info{}, errorf(ErrRepoGone, "the repository %s of this session is no longer there. If you moved it, run yolop from its new place (cd NEW-PLACE && yolop --session %s, or -c): the session follows it. If it was deleted, the session's snapshots went with it; its files are still in %s", where, filepath.Base(info.Path), info.Path)
	}
	if err := replaced(info); err != nil {
		return Info{}, err
	}
	if _, err := os.Lstat(info.Path); err == nil {
		// A command in the worktree may have rewritten its .git file; put
		// the link back from the repository's record before asking git.
		rep, err := git.CheckWorktreeLink(info.Path, info.CommonDir)
		if err != nil && !errors.Is(err, git.ErrNoWorktreeRecord) {
			return Info{}, fmt.Errorf("worktree: %w", err)
		}
		// Without a record in the repository there is nothing to repair
		// from; git itself decides whether the directory is ours.
		if err := checkWorktreeOf(ctx, info.Path, info.CommonDir, info.Branch); err != nil {
			return Info{}, err
		}
		info.LinkRepaired = rep.Repaired
		return info, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Info{}, fmt.Errorf("worktree: %w", err)
	}
	if st, err := os.Stat(info.CommonDir); err != nil || !st.IsDir() {
		return Info{}, fmt.Errorf("worktree: the repository %s of session worktree %s is gone; the session can continue without a worktree only", info.CommonDir, info.Path)
	}
	// Run in the common directory: the user's checkout (RepoRoot) may itself
	// be a linked worktree that no longer exists.
	r := git.New(info.CommonDir)
	exists, err := refExists(ctx, r, "refs/heads/"+info.Branch)
	if err != nil {
		return Info{}, fmt.Errorf("worktree: check branch %s: %w", info.Branch, err)
	}
	if !exists {
		// Deleted after merging, typically. The session's snapshots still
		// hold its files: the branch is made again at the commit the
		// session's work started from, and the caller puts the files back.
		if info.Base == "" {
			return Info{}, errorf(ErrBranchGone, "the session worktree %s was deleted and its branch %s no longer exists in %s, and the session records no base commit to make the branch again from", info.Path, info.Branch, info.CommonDir)
		}
		if _, err := r.Run(ctx, "cat-file", "-e", info.Base+"^{commit}"); err != nil {
			return Info{}, errorf(ErrBranchGone, "the session worktree %s was deleted, its branch %s no longer exists in %s, and the commit %s its work started from is gone too (garbage-collected), so there is nothing to add the worktree again on", info.Path, info.Branch, info.CommonDir, info.Base)
		}
	}
	// git still records the deleted directory and refuses to add it again
	// (and considers the branch checked out there) until the record goes.
	if err := pruneWorktrees(ctx, info.CommonDir); err != nil {
		return Info{}, fmt.Errorf("worktree: prune stale worktree records in %s: %w", info.CommonDir, err)
	}
	if err := mkdirPrivate(filepath.Dir(info.Path)); err != nil {
		return Info{}, err
	}
	args := []string{"--quiet", info.Path, info.Branch}
	if !exists {
		args = []string{"--quiet", "-b", info.Branch, info.Path, info.Base}
	}
	undo := func() {
		_ = os.RemoveAll(info.Path)
		_ = pruneWorktrees(context.Background(), info.CommonDir)
		if !exists {
			m.undoCreate(r, info.Path, info.Branch, info.Base)
		}
	}
	if err := addWorktree(ctx, info.CommonDir, undo, args...); err != nil {
		undo()
		return Info{}, fmt.Errorf("worktree: re-add session worktree %s on branch %s: %w", info.Path, info.Branch, err)
	}
	info.Recreated, info.BranchRecreated = true, !exists
	return info, nil
}

// checkWorktreeOf verifies that dir is the top level of a worktree whose
// repository is commonDir. The refusal never advises removing dir: it may
// be a directory yolop does not own, or the session's own worktree whose
// .git link was rewritten, holding work that is in no snapshot.
// CheckLink is the part of Ensure that runs no git process, for a
// session that may not need git at all (one opened to list its
// checkpoints): when the worktree directory exists, its .git link is
// checked and put back from the repository's record if a command rewrote
// it (info.LinkRepaired), and present is true; Verify then completes what
// Ensure checks. When the directory is missing, present is false and
// nothing is done: Ensure re-creates it.
func (m *Manager) CheckLink(info Info) (_ Info, present bool, _ error) {
	if info.Path == "" || info.CommonDir == "" || info.Branch == "" {
		return Info{}, false, fmt.Errorf("worktree: incomplete worktree record (path %q, repository %q, branch %q)", info.Path, info.CommonDir, info.Branch)
	}
	if st, err := os.Stat(info.CommonDir); err != nil || !st.IsDir() {
		// Ensure says what happened (ErrRepoGone) and how to follow a
		// moved repository.
		if _, err := m.Ensure(context.Background(), info); err != nil {
			return Info{}, true, err
		}
	}
	if _, err := os.Lstat(info.Path); errors.Is(err, fs.ErrNotExist) {
		return info, false, nil
	} else if err != nil {
		return Info{}, false, fmt.Errorf("worktree: %w", err)
	}
	if err := replaced(info); err != nil {
		return Info{}, true, err
	}
	rep, err := git.CheckWorktreeLink(info.Path, info.CommonDir)
	if err != nil && !errors.Is(err, git.ErrNoWorktreeRecord) {
		return Info{}, true, fmt.Errorf("worktree: %w", err)
	}
	info.LinkRepaired = rep.Repaired
	return info, true, nil
}

// replaced refuses a worktree path that is no longer a directory: following
// a symlink (or using a file) put in its place would make some other
// directory the session's, where commands would run and restores delete
// files.
func replaced(info Info) error {
	st, err := os.Lstat(info.Path)
	if err != nil || st.IsDir() {
		return nil
	}
	what := "a " + st.Mode().Type().String() + " file"
	if st.Mode()&os.ModeSymlink != 0 {
		what = "a symlink"
		if dest, err := os.Readlink(info.Path); err == nil {
			what += " to " + dest
		}
	} else if st.Mode().IsRegular() {
		what = "a file"
	}
	return fmt.Errorf("worktree: the session's worktree %s is now %s, not the directory yolop made; yolop does not use it and changed nothing. Move it away, then resume: the worktree is added again on branch %s with the files the last turn left", info.Path, what, info.Branch)
}

// Verify asks git whether the existing directory info.Path is the top
// level of a worktree of info.CommonDir (the rest of Ensure after
// CheckLink).
func (m *Manager) Verify(ctx context.Context, info Info) error {
	return checkWorktreeOf(ctx, info.Path, info.CommonDir, info.Branch)
}

func checkWorktreeOf(ctx context.Context, dir, commonDir, branch string) error {
	out, err := git.New(dir).Run(ctx, "rev-parse", "--show-toplevel", "--git-common-dir")
	notOurs := fmt.Errorf("worktree: %s exists but is not a worktree of %s; yolop left it untouched (it may hold unsaved work: do not delete it before looking). The session's committed work is on branch %s of that repository; rename the directory, then resume again, or continue in a new session", dir, commonDir, branch)
	if err != nil {
		return fmt.Errorf("%w (%v)", notOurs, err)
	}
	top, common, ok := strings.Cut(git.Trim(out), "\n")
	if !ok {
		return notOurs
	}
	gotCommon, err1 := canonical(dir, common)
	wantCommon, err2 := canonical(dir, commonDir)
	gotTop, err3 := canonical(dir, top)
	wantTop, err4 := canonical(dir, dir)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return fmt.Errorf("%w (%v)", notOurs, err)
	}
	if gotCommon != wantCommon || gotTop != wantTop {
		return notOurs
	}
	return nil
}

// refExists reports whether the full ref name exists.
func refExists(ctx context.Context, r *git.Runner, ref string) (bool, error) {
	_, err := r.Run(ctx, "rev-parse", "--verify", "--quiet", ref)
	if err == nil {
		return true, nil
	}
	var ge *git.Error
	if errors.As(err, &ge) && ge.ExitCode == 1 {
		return false, nil
	}
	return false, err
}

// mkdirPrivate creates dir and its missing parents as owner-only.
func mkdirPrivate(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("worktree: create %s: %w", dir, err)
	}
	return nil
}

// addWorktree runs `git worktree add` with args. When git trips over
// another worktree being added at the same moment (git.IsWorktreeRace: four
// sessions starting at once, or the user's own git), undo puts back what the
// failed attempt left (git makes a -b branch before it dies) and the add is
// tried again, a few times with a growing pause. It holds commonDir's
// worktrees lock shared while git runs (see lockWorktrees).
// parallelCheckout makes git write a whole tree with a worker process per
// core (checkout.workers, git 2.32; older versions ignore it): at 100,000
// files the checkout is bound by the kernel's file creation, which one
// process leaves half idle on two cores (about twice as fast measured;
// docs/benchmarks.md). `worktree add` passes it to the `reset --hard` it
// runs.
const parallelCheckout = "checkout.workers=0"

func addWorktree(ctx context.Context, commonDir string, undo func(), args ...string) error {
	r := git.New(commonDir)
	delay := 5 * time.Millisecond
	for attempt := 1; ; attempt++ {
		unlock, err := lockWorktrees(ctx, commonDir, false, time.Minute)
		if err != nil {
			return err
		}
		_, err = r.Run(ctx, append([]string{"-c", parallelCheckout, "worktree", "add"}, args...)...)
		unlock()
		if err == nil || !git.IsWorktreeRace(err) || attempt == 8 || ctx.Err() != nil {
			return err
		}
		undo()
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay + time.Duration(rand.Int64N(int64(delay)))):
		}
		delay *= 2
	}
}
