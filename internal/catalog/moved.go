package catalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/yolop-dev/yolop/internal/fsutil"
	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// AdoptMoved brings sessions whose repository was moved up to date with
// repo, the repository at its new place: yolop's worktrees stay in the data
// directory, so after `mv project elsewhere` git's records in the moved
// repository still name them while their .git files and the sessions'
// workspace.json name the old place. The links are repaired from the
// repository's own records, and each such session (only, when not "")
// whose recorded repository no longer exists is pointed at repo. A session
// whose recorded repository still exists is never changed, nor one another
// process holds. The notes say what was done.
func AdoptMoved(ctx context.Context, dataDir string, repo *worktree.Repo, only string) ([]string, error) {
	moved, err := worktree.FindMoved(repo, dataDir)
	if err != nil {
		return nil, err
	}
	notes, err := adoptMovedInPlace(ctx, dataDir, repo, only)
	if err != nil {
		return notes, err
	}
	for _, m := range moved {
		id := filepath.Base(m.Path)
		if session.CheckID(id) != nil || (only != "" && id != only) {
			continue // a spare, or not the session asked for
		}
		note, err := adoptSession(dataDir, id, m.Path, repo)
		if err != nil {
			return notes, err
		}
		if note != "" {
			notes = append(notes, note)
		}
	}
	return notes, nil
}

// FollowMoved is AdoptMoved for session id when yolop runs in dir, the
// place its repository may have moved to; nothing when dir is in no
// repository.
func FollowMoved(ctx context.Context, dataDir, dir, id string) ([]string, error) {
	repo, err := worktree.Detect(ctx, dir)
	if err != nil {
		return nil, nil
	}
	return AdoptMoved(ctx, dataDir, repo, id)
}

func adoptSession(dataDir, id, path string, repo *worktree.Repo) (string, error) {
	sess, err := session.Open(dataDir, id)
	var le *session.LockedError
	if errors.Is(err, session.ErrNotFound) || errors.As(err, &le) {
		return "", nil // not a session of this data dir, or in use elsewhere
	}
	if err != nil {
		return "", err
	}
	defer sess.Close()
	ws := sess.Workspace()
	if ws.Kind != session.KindWorktree || ws.Worktree == nil || ws.CommonDir == repo.CommonDir || !fsutil.SameDir(ws.Worktree.Path, path) {
		return "", nil
	}
	if _, err := os.Stat(ws.CommonDir); err == nil {
		return "", nil // its repository is still where it was
	}
	oldTop, newTop := worktree.TopOf(ws.CommonDir), worktree.TopOf(repo.CommonDir)
	from, to := ws.RepoRoot, ""
	// The worktree's admin dir, which every git process of the session is
	// pinned to, moved with the repository's common dir.
	ws.Worktree.GitDir = remap(ws.Worktree.GitDir, ws.CommonDir, repo.CommonDir)
	ws.CommonDir = repo.CommonDir
	ws.RepoRoot = remap(ws.RepoRoot, oldTop, newTop)
	ws.ActiveRoot = remap(ws.ActiveRoot, oldTop, newTop)
	to = ws.RepoRoot
	if err := sess.SaveWorkspace(ws); err != nil {
		return "", fmt.Errorf("session %s: record the repository's new place: %w", id, err)
	}
	return fmt.Sprintf("The repository of session %s moved from %s to %s; the session now uses it there (its worktree's git link was repaired, nothing else changed).", id, from, to), nil
}

// adoptMovedInPlace does for in-place sessions what AdoptMoved does for
// worktree sessions: the repository's own checkpoint refs
// (refs/yolop/checkpoints/<session>/) name the sessions that worked in one
// of its checkouts, and each such session (only, when not "") whose
// recorded repository no longer exists is pointed at repo's new place.
func adoptMovedInPlace(ctx context.Context, dataDir string, repo *worktree.Repo, only string) ([]string, error) {
	out, err := git.New(repo.Root).Run(ctx, "for-each-ref", "--format=%(refname)", "refs/yolop/checkpoints/")
	if err != nil {
		return nil, fmt.Errorf("list the checkpoint refs of %s: %w", repo.Root, err)
	}
	seen := map[string]bool{}
	var notes []string
	for _, ref := range strings.Split(git.Trim(out), "\n") {
		id, _, ok := strings.Cut(strings.TrimPrefix(ref, "refs/yolop/checkpoints/"), "/")
		if !ok || seen[id] || session.CheckID(id) != nil || (only != "" && id != only) {
			continue
		}
		seen[id] = true
		if !maybeMovedInPlace(dataDir, id, repo) {
			continue
		}
		note, err := adoptInPlace(dataDir, id, repo)
		if err != nil {
			return notes, err
		}
		if note != "" {
			notes = append(notes, note)
		}
	}
	return notes, nil
}

// maybeMovedInPlace reads, without opening it, whether session id may be
// an in-place session whose checkout moved into repo: only those are
// opened (and locked), so that continuing a session does not lock every
// other session of the repository in turn (another process opening one
// of them meanwhile would find it in use), nor read them all. A session
// it cannot read is opened, and adoptInPlace decides.
func maybeMovedInPlace(dataDir, id string, repo *worktree.Repo) bool {
	ws, err := session.PeekWorkspace(dataDir, id)
	if errors.Is(err, session.ErrNotFound) {
		return false
	}
	if err != nil {
		return true
	}
	if ws.Kind != session.KindInPlace || ws.CommonDir == "" || ws.CommonDir == repo.CommonDir {
		return false
	}
	if _, err := os.Stat(ws.CommonDir); err == nil {
		return false
	}
	return true
}

func adoptInPlace(dataDir, id string, repo *worktree.Repo) (string, error) {
	sess, err := session.Open(dataDir, id)
	var le *session.LockedError
	if errors.Is(err, session.ErrNotFound) || errors.As(err, &le) {
		return "", nil // not a session of this data dir, or in use elsewhere
	}
	if err != nil {
		return "", err
	}
	defer sess.Close()
	ws := sess.Workspace()
	if ws.Kind != session.KindInPlace || ws.CommonDir == "" || ws.CommonDir == repo.CommonDir {
		return "", nil
	}
	if _, err := os.Stat(ws.CommonDir); err == nil {
		return "", nil // its repository is still where it was
	}
	if _, err := os.Stat(ws.RepoRoot); err == nil {
		return "", nil
	}
	oldTop, newTop := worktree.TopOf(ws.CommonDir), worktree.TopOf(repo.CommonDir)
	from := ws.RepoRoot
	root := remap(ws.RepoRoot, oldTop, newTop)
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return "", nil // its checkout is not at the matching place
	}
	ws.CommonDir = repo.CommonDir
	ws.RepoRoot = root
	ws.ActiveRoot = remap(ws.ActiveRoot, oldTop, newTop)
	if err := sess.SaveWorkspace(ws); err != nil {
		return "", fmt.Errorf("session %s: record the checkout's new place: %w", id, err)
	}
	return fmt.Sprintf("The checkout of session %s moved from %s to %s; the session now works there (its snapshots are in that repository; nothing else changed).", id, from, root), nil
}

// remap moves p from under oldTop to under newTop; p is returned unchanged
// when it is not under oldTop or either top is unknown.
func remap(p, oldTop, newTop string) string {
	if p == "" || oldTop == "" || newTop == "" {
		return p
	}
	if p == oldTop {
		return newTop
	}
	if rest, ok := strings.CutPrefix(p, oldTop+string(filepath.Separator)); ok {
		return filepath.Join(newTop, rest)
	}
	return p
}

// missingWorktreeFate says, for a session whose worktree directory is
// gone, what resuming it will do: the same words for `sessions show`,
// `checkpoints` and the resume's own refusal. It asks git only whether
// the branch and the base commit still exist.
func missingWorktreeFate(ctx context.Context, ws session.Workspace) string {
	wt := ws.Worktree
	if st, err := os.Stat(ws.CommonDir); ws.CommonDir == "" || err != nil || !st.IsDir() {
		return fmt.Sprintf("its worktree %s is missing and so is its repository %s: if the repository moved, run yolop from its new place (the session follows it); if it was deleted, the session's snapshots went with it, and only its conversation can be listed and replayed", wt.Path, ws.RepoRoot)
	}
	r := git.New(ws.CommonDir)
	if _, err := r.Run(ctx, "show-ref", "--verify", "--quiet", "refs/heads/"+wt.Branch); err == nil {
		return fmt.Sprintf("its worktree %s is missing; resuming the session adds it again on branch %s with the files of its newest snapshot", wt.Path, wt.Branch)
	}
	if wt.Base != "" {
		if _, err := r.Run(ctx, "cat-file", "-e", wt.Base+"^{commit}"); err == nil {
			return fmt.Sprintf("its worktree %s and its branch %s are missing; resuming the session makes the branch again at the commit its work started from (%s) and adds the worktree with the files of its newest snapshot (what the branch had committed comes back as uncommitted changes)", wt.Path, wt.Branch, git.ShortOID(wt.Base))
		}
	}
	return fmt.Sprintf("its worktree %s, its branch %s and the commit its work started from are gone: the session can be listed and replayed, but turns and restores are refused", wt.Path, wt.Branch)
}
