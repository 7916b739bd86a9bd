package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/yolop-dev/yolop/internal/git"
)

// Entry is one directory found under <data-dir>/worktrees/<repo-id>/.
type Entry struct {
	Path      string
	RepoID    string // the <repo-id> directory it sits in
	SessionID string // its directory name
	Branch    string // checked-out branch, "" when detached or Missing
	CommonDir string // its repository, "" when the link cannot be read
	// Dirty: uncommitted changes (tracked, or untracked and not ignored),
	// or a status that could not be read (see Problem).
	Dirty bool
	// Missing: the worktree's link to its repository is broken (no `.git`
	// file, or the repository or git's record of the worktree is gone), so
	// its state cannot be checked.
	Missing bool
	// DirtyPaths are the changed paths as `git status` names them (an
	// untracked directory appears once, with a trailing slash).
	DirtyPaths []string
	// Problem says why Missing is set or why the status could not be read.
	Problem string
	// Spare: a parked worktree of no session (.spare-<n>), ready for the
	// next session of its repository.
	Spare bool
	// Stale: a spare that was found changed, foreign or broken when a
	// session tried to claim it (.stale-<n>); it is never used again.
	Stale bool
	// Partial: a worktree being prepared or parked (.tmp-<hex>); Live says
	// whether the process doing it is still running (when not, the next
	// start or prune removes it).
	Partial bool
	Live    bool
}

// Kind names what the directory is: "session", "spare", "stale spare" or
// "partial".
func (e Entry) Kind() string {
	switch {
	case e.Spare:
		return "spare"
	case e.Stale:
		return "stale spare"
	case e.Partial:
		return "partial"
	}
	return "session"
}

// List scans <data-dir>/worktrees/*/* and reports every worktree directory,
// sorted by repository id and session id. A worktree whose repository cannot
// be reached is reported with Missing set, not as an error; an error means the
// data directory itself could not be read.
func (m *Manager) List(ctx context.Context) ([]Entry, error) {
	dirs, err := m.repoDirs()
	if err != nil {
		return nil, err
	}
	var entries []Entry
	for _, dir := range dirs {
		sessions, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("worktree: read %s: %w", dir, err)
		}
		for _, sd := range sessions {
			if !sd.IsDir() || strings.HasPrefix(sd.Name(), trashPrefix) {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			e := inspect(ctx, filepath.Join(dir, sd.Name()), filepath.Base(dir), sd.Name())
			name := sd.Name()
			e.Spare = spareName.MatchString(name)
			e.Stale = strings.HasPrefix(name, stalePrefix)
			if strings.HasPrefix(name, tmpPrefix) {
				e.Partial = true
				f, ok, err := lockFile(e.Path+lockSuffix, false)
				if err == nil && ok {
					f.Close()
				}
				e.Live = err == nil && !ok && fileExists(e.Path+lockSuffix)
			}
			entries = append(entries, e)
		}
	}
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].RepoID != entries[j].RepoID {
			return entries[i].RepoID < entries[j].RepoID
		}
		return entries[i].SessionID < entries[j].SessionID
	})
	return entries, nil
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// inspect builds the Entry of one worktree directory.
func inspect(ctx context.Context, path, repoID, sessionID string) Entry {
	e := Entry{Path: path, RepoID: repoID, SessionID: sessionID}
	common, err := linkedRepo(path)
	if err != nil {
		e.Missing = true
		e.Problem = err.Error()
		return e
	}
	e.CommonDir = common
	st, err := status(ctx, path)
	if err != nil {
		// Unknown state counts as dirty: removal must never guess "clean".
		e.Dirty = true
		e.Problem = fmt.Sprintf("cannot read the status of %s: %v", path, err)
		return e
	}
	e.Branch = st.branch
	e.DirtyPaths = st.paths
	e.Dirty = len(st.paths) > 0
	return e
}

// linkedRepo follows a linked worktree's `.git` file to git's record of the
// worktree and from there to the repository's common directory, with file
// reads only. It fails when any link is broken.
func linkedRepo(path string) (string, error) {
	dotgit := filepath.Join(path, ".git")
	fi, err := os.Lstat(dotgit)
	if err != nil {
		return "", fmt.Errorf("%s has no .git file linking it to its repository", path)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a linked worktree (its .git is not a file)", path)
	}
	b, err := os.ReadFile(dotgit)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", dotgit, err)
	}
	gitdir, ok := strings.CutPrefix(strings.TrimRight(string(b), "\r\n"), "gitdir: ")
	if !ok || gitdir == "" {
		return "", fmt.Errorf("%s does not name a git directory", dotgit)
	}
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(path, gitdir)
	}
	c, err := os.ReadFile(filepath.Join(gitdir, "commondir"))
	if err != nil {
		return "", fmt.Errorf("git's record of worktree %s (%s) is gone: the repository was moved, deleted or pruned (if it moved, run `git worktree repair %s` in it)", path, gitdir, path)
	}
	common, err := canonical(gitdir, strings.TrimRight(string(c), "\r\n"))
	if err != nil {
		return "", fmt.Errorf("the repository of worktree %s is gone: %w", path, err)
	}
	return common, nil
}

type worktreeStatus struct {
	branch string
	paths  []string
}

// status runs one `git status` in a worktree for its branch and its
// uncommitted paths. Optional locks are off so that a status never competes
// with a session writing its index.
func status(ctx context.Context, path string) (worktreeStatus, error) {
	out, err := git.New(path).Run(ctx, "--no-optional-locks", "status", "--porcelain=v2", "-z", "--branch", "--untracked-files=normal")
	if err != nil {
		return worktreeStatus{}, err
	}
	return parseStatus(out)
}

// parseStatus reads `git status --porcelain=v2 -z --branch`.
func parseStatus(out []byte) (worktreeStatus, error) {
	var st worktreeStatus
	fields := git.SplitZ(out)
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if f == "" {
			return st, errors.New("status: empty record")
		}
		var path string
		switch f[0] {
		case '#':
			if head, ok := strings.CutPrefix(f, "# branch.head "); ok && head != "(detached)" {
				st.branch = head
			}
			continue
		case '1':
			path = nthField(f, 8)
		case '2':
			path = nthField(f, 9)
			i++ // the rename's original path follows in its own field
		case 'u':
			path = nthField(f, 10)
		case '?', '!':
			path = strings.TrimPrefix(f[1:], " ")
		default:
			return st, fmt.Errorf("status: unknown record %q", f)
		}
		if path == "" {
			return st, fmt.Errorf("status: malformed record %q", f)
		}
		st.paths = append(st.paths, path)
	}
	return st, nil
}

// nthField returns what follows the first n space-separated fields of s (the
// path, which may itself contain spaces), or "" when s is too short.
func nthField(s string, n int) string {
	for range n {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			return ""
		}
		s = s[i+1:]
	}
	return s
}

// repoDirs lists the <data-dir>/worktrees/<repo-id> directories, none when
// the data directory has no worktrees yet.
func (m *Manager) repoDirs() ([]string, error) {
	root, err := m.root()
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("worktree: read %s: %w", root, err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, filepath.Join(root, e.Name()))
		}
	}
	return out, nil
}
