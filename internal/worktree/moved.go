package worktree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/git"
)

// ErrRepoGone: a session's repository is no longer where the session
// recorded it (moved or deleted).
var ErrRepoGone = fault.Plain("worktree: repository gone")

// Moved is a yolop worktree whose repository was moved: the repository's
// own records (<common-dir>/worktrees/<name>/gitdir) still name the
// worktree, which did not move, while the worktree's .git file named the
// repository's old place.
type Moved struct {
	// Path is the worktree's top level.
	Path string
	// OldCommonDir is the common git directory the worktree's .git file
	// named before it was repaired.
	OldCommonDir string
	// Repaired says this call rewrote the worktree's .git file (false when
	// an earlier call did and the session records still name the old
	// place).
	Repaired bool
}

// FindMoved looks in repo's worktree records for worktrees under
// dataDir/worktrees whose .git file still leads to the repository's old
// place, and points those links at repo (nothing else is written). It
// also returns the worktrees whose links are already right, with
// OldCommonDir empty, so a caller can bring its own records up to date
// after an interrupted adoption. The cost is a directory read and three
// small file reads per worktree of the repository; no git process runs.
func FindMoved(repo *Repo, dataDir string) ([]Moved, error) {
	root, err := filepath.Abs(filepath.Join(dataDir, "worktrees"))
	if err != nil {
		return nil, err
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	records := filepath.Join(repo.CommonDir, "worktrees")
	ents, err := os.ReadDir(records)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("worktree: read the worktree records of %s: %w", repo.CommonDir, err)
	}
	var out []Moved
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(records, e.Name(), "gitdir"))
		if err != nil {
			continue // not a complete record; git's own prune deals with it
		}
		link := strings.TrimRight(string(b), "\r\n")
		if !filepath.IsAbs(link) || filepath.Base(link) != ".git" {
			continue
		}
		wt := filepath.Dir(link)
		if rel, err := filepath.Rel(root, wt); err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue // not one of yolop's worktrees
		}
		gf, err := os.ReadFile(link)
		if err != nil {
			continue // a missing worktree is Ensure's business
		}
		admin, ok := git.ParseGitFile(gf, wt)
		if !ok {
			continue
		}
		if _, err := os.Stat(admin); err == nil {
			out = append(out, Moved{Path: wt})
			continue
		}
		rep, err := git.CheckWorktreeLink(wt, repo.CommonDir)
		if err != nil {
			return out, fmt.Errorf("worktree: repair the link of %s after its repository moved: %w", wt, err)
		}
		out = append(out, Moved{Path: wt, OldCommonDir: filepath.Dir(filepath.Dir(admin)), Repaired: rep.Repaired})
	}
	return out, nil
}

// TopOf returns the top level of the main checkout whose common git
// directory is commonDir (its parent when it is named .git), or "" for
// a repository whose git directory lives elsewhere.
func TopOf(commonDir string) string {
	if filepath.Base(commonDir) == ".git" {
		return filepath.Dir(commonDir)
	}
	return ""
}
