package catalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/failpoint"
	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/search"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/snapshot"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// WorktreeRow is a worktree (a session's or a spare, see Entry.Kind) and
// whether a saved session uses it.
type WorktreeRow struct {
	worktree.Entry
	InUse bool
}

// ListWorktrees lists the session worktrees under the data directory.
func ListWorktrees(ctx context.Context, dataDir string) ([]WorktreeRow, error) {
	refd, err := referenced(dataDir)
	if err != nil {
		return nil, err
	}
	m, err := manager(dataDir)
	if err != nil {
		return nil, err
	}
	entries, err := m.List(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]WorktreeRow, 0, len(entries))
	for _, e := range entries {
		rows = append(rows, WorktreeRow{Entry: e, InUse: refd(e.SessionID)})
	}
	// Sessions whose worktree directory was deleted: they have no
	// directory to list, but a resume adds it again.
	list, err := session.List(dataDir)
	if err != nil {
		return nil, err
	}
	for _, sm := range list {
		ws := sm.Workspace
		if ws.Worktree == nil || ws.Worktree.Path == "" {
			continue
		}
		if _, err := os.Lstat(ws.Worktree.Path); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		rows = append(rows, WorktreeRow{InUse: true, Entry: worktree.Entry{
			Path: ws.Worktree.Path, RepoID: filepath.Base(filepath.Dir(ws.Worktree.Path)), SessionID: sm.ID,
			Branch: ws.Worktree.Branch, CommonDir: ws.CommonDir, Missing: true, Problem: missingWorktreeFate(ctx, ws),
		}})
	}
	return rows, nil
}

// PruneWorktrees frees worktrees no saved session references (parked as
// spares up to [worktree] spares, else removed) and deletes their
// checkpoint refs; branches are kept. spares also removes the spares, and
// removes freed worktrees instead of parking them.
func PruneWorktrees(ctx context.Context, dataDir string, dryRun, force, spares bool) (worktree.PruneReport, error) {
	refd, err := referenced(dataDir)
	if err != nil {
		return worktree.PruneReport{}, err
	}
	m, err := manager(dataDir)
	if err != nil {
		return worktree.PruneReport{}, err
	}
	rep, err := m.Prune(ctx, worktree.PruneOptions{DryRun: dryRun, Force: force, Spares: spares, Referenced: refd})
	if err != nil {
		return rep, err
	}
	err = pruneInPlace(ctx, dataDir, dryRun, &rep)
	return rep, err
}

// pruneInPlace deletes the snapshot refs of in-place sessions whose
// checkout is gone, or that were not used for [workspace] keep_days: their
// conversations stay, their checkpoints become conversation only. A
// session in use (its lock held) is left alone.
func pruneInPlace(ctx context.Context, dataDir string, dryRun bool, rep *worktree.PruneReport) error {
	keep, err := config.KeepDays()
	if err != nil {
		return err
	}
	list, err := search.Catalog(dataDir)
	if err != nil {
		return err
	}
	for _, e := range list {
		w := e.Summary.Workspace
		if w.Kind != session.KindInPlace || w.CommonDir == "" {
			continue
		}
		if info, err := os.Stat(w.CommonDir); err != nil || !info.IsDir() {
			continue // the repository is gone, and its refs with it
		}
		_, topErr := os.Stat(w.RepoRoot)
		last := e.LastUsed
		if last.IsZero() {
			last = w.Updated
		}
		if topErr == nil && time.Since(last) < time.Duration(keep)*24*time.Hour {
			continue
		}
		refs, err := snapshot.ListRefs(ctx, w.CommonDir, e.Summary.ID)
		if err != nil {
			rep.Errors = append(rep.Errors, fmt.Sprintf("in-place session %s: %v", e.Summary.ID, err))
			continue
		}
		if len(refs) == 0 {
			continue
		}
		if !dryRun {
			s, err := session.Open(dataDir, e.Summary.ID)
			if err != nil {
				rep.Errors = append(rep.Errors, fmt.Sprintf("in-place session %s: %v", e.Summary.ID, err))
				continue
			}
			_, derr := snapshot.DeleteSessionRefs(ctx, w.CommonDir, e.Summary.ID)
			if err := errors.Join(derr, s.Close()); err != nil {
				rep.Errors = append(rep.Errors, fmt.Sprintf("in-place session %s: %v", e.Summary.ID, err))
				continue
			}
		}
		if rep.RefsDeleted == nil {
			rep.RefsDeleted = map[string][]string{}
		}
		rep.RefsDeleted[e.Summary.ID] = refs
	}
	return nil
}

// referenced reports whether a saved session refers to a worktree. A
// session list that cannot be read is an error: guessing "unreferenced"
// would let prune delete worktrees in use.
func referenced(dataDir string) (func(string) bool, error) {
	list, err := session.List(dataDir)
	if err != nil {
		return nil, fmt.Errorf("list sessions (to know which worktrees are in use): %w", err)
	}
	ids := map[string]bool{}
	for _, sm := range list {
		ids[sm.ID] = true
	}
	return func(id string) bool {
		if ids[id] {
			return true
		}
		// A session created since the list was read (a start racing the
		// prune) is in use too: look again now.
		_, err := os.Lstat(filepath.Join(session.SessionsDir(dataDir), id))
		return err == nil || !errors.Is(err, fs.ErrNotExist)
	}, nil
}

// manager is the worktree manager of dataDir with the spare settings read
// now, for the housekeeping commands.
func manager(dataDir string) (*worktree.Manager, error) {
	sp, err := config.ResolveSpares()
	if err != nil {
		return nil, err
	}
	return &worktree.Manager{DataDir: dataDir, Spares: sp.Limit, SpareKeeps: sp.Keeps, Share: sp.Share, Failpoint: failpoint.Hit}, nil
}

// PrepareSpare prepares a spare worktree for the repository containing dir
// (what the detached helper runs), parked at the commit at (HEAD when
// empty). It returns the spare's path, or "" when the repository already
// has its spares.
func PrepareSpare(ctx context.Context, dataDir, dir, at string) (string, error) {
	m, err := manager(dataDir)
	if err != nil {
		return "", err
	}
	repo, err := worktree.Detect(ctx, dir)
	if err != nil {
		return "", err
	}
	commit := ""
	if at != "" {
		out, err := git.New(repo.Root).Run(ctx, "rev-parse", "--verify", "--quiet", at+"^{commit}")
		if err != nil {
			return "", fmt.Errorf("--at %s: not a commit in %s", at, repo.Root)
		}
		commit = git.Trim(out)
	}
	path, err := m.PrepareSpare(ctx, repo, commit)
	if errors.Is(err, worktree.ErrSpareLimit) {
		return "", nil
	}
	return path, err
}

// PrepareFailures lists the repositories whose last background spare
// preparation failed (`worktree list` shows them).
func PrepareFailures(dataDir string) ([]worktree.PrepareFailure, error) {
	return (&worktree.Manager{DataDir: dataDir}).PrepareFailures()
}

// RecordPrepareFailure notes that the background preparation for the
// checkout at repoRoot could not be started, so that the next session
// start and `worktree list` say so.
func RecordPrepareFailure(dataDir, repoRoot string, err error) {
	repo, derr := worktree.Detect(context.Background(), repoRoot)
	if derr != nil {
		return
	}
	(&worktree.Manager{DataDir: dataDir}).RecordPrepareFailure(repo, fmt.Errorf("start the preparation: %w", err))
}
