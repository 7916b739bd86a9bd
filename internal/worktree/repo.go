package worktree

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/git"
)

// Sentinel errors. Detect and the Manager methods wrap them with the path and
// the repository involved; test with errors.Is.
var (
	// ErrNotRepo: the directory is not inside a Git working tree.
	ErrNotRepo = fault.Plain("worktree: not inside a git repository")
	// ErrBare: the repository is bare, so there is no checkout to branch from.
	ErrBare = fault.Plain("worktree: bare repository")
	// ErrNoCommits: the repository has no commit for a worktree to start from.
	ErrNoCommits = fault.Plain("worktree: repository has no commits")
	// ErrBranchGone: a session's worktree and its branch are both gone.
	ErrBranchGone = fault.Plain("worktree: session branch is gone")
	// ErrDirty: the worktree has uncommitted changes; see *DirtyError.
	ErrDirty = fault.Plain("worktree: uncommitted changes")
	// ErrNotOwned: a path is not a session worktree under the data directory.
	ErrNotOwned = fault.Plain("worktree: not a session worktree")
)

// detailError is a sentinel with a message that names the specifics.
type detailError struct {
	sentinel error
	msg      string
}

func (e *detailError) Error() string { return e.msg }
func (e *detailError) Unwrap() error { return e.sentinel }

func errorf(sentinel error, format string, args ...any) error {
	return &detailError{sentinel: sentinel, msg: "worktree: " + fmt.Sprintf(format, args...)}
}

// Repo is the user's repository as seen from the directory yolop started in.
type Repo struct {
	// Root is the top level of the user's checkout (a linked worktree's own
	// top level when the user works in one).
	Root string
	// CommonDir is the absolute, symlink-free path of the repository's
	// common git directory (shared by all its worktrees).
	CommonDir string
	// Head is the commit HEAD points at.
	Head string
	// Bare is always false in a Repo returned by Detect (a bare repository
	// is reported as ErrBare); it is kept so callers can describe one.
	Bare bool
}

// Detect finds the repository containing dir. It fails with ErrNotRepo when
// dir is not inside a working tree, ErrBare for a bare repository and
// ErrNoCommits when the repository has no commit yet.
func Detect(ctx context.Context, dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("worktree: resolve %s: %w", dir, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("worktree: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("worktree: %s is not a directory", abs)
	}
	r := git.New(abs)
	// The common case, a working tree with a commit, in one process (every
	// yolop command asks); anything else, a bare repository, a git
	// directory, an unborn HEAD, fails this and is told apart by the steps
	// below. The "--" keeps a file named like the revision from making it
	// ambiguous.
	if out, err := r.Run(ctx, "rev-parse", "--is-bare-repository", "--is-inside-git-dir", "--git-common-dir", "--show-toplevel", "HEAD^{commit}", "--"); err == nil {
		if l := strings.Split(git.Trim(out), "\n"); len(l) == 6 && l[0] == "false" && l[1] == "false" && l[3] != "" && l[5] == "--" && git.IsOID(l[4]) {
			common, err := canonical(abs, l[2])
			if err != nil {
				return nil, fmt.Errorf("worktree: resolve git directory of %s: %w", abs, err)
			}
			return &Repo{Root: l[3], CommonDir: common, Head: l[4]}, nil
		}
	}
	out, err := r.Run(ctx, "rev-parse", "--is-bare-repository", "--is-inside-git-dir", "--git-common-dir")
	if err != nil {
		var ge *git.Error
		if errors.As(err, &ge) && strings.Contains(ge.Stderr, "not a git repository") {
			return nil, errorf(ErrNotRepo, "%s is not inside a git repository; run yolop in a repository or turn worktrees off", abs)
		}
		return nil, fmt.Errorf("worktree: inspect %s: %w", abs, err)
	}
	lines := strings.Split(git.Trim(out), "\n")
	if len(lines) != 3 {
		return nil, fmt.Errorf("worktree: inspect %s: unexpected rev-parse output %q", abs, out)
	}
	common, err := canonical(abs, lines[2])
	if err != nil {
		return nil, fmt.Errorf("worktree: resolve git directory of %s: %w", abs, err)
	}
	if lines[0] == "true" {
		return nil, errorf(ErrBare, "%s is a bare repository with no working tree; run yolop in a checkout of it", common)
	}
	if lines[1] == "true" {
		return nil, errorf(ErrNotRepo, "%s is inside the git directory %s, not in a working tree; run yolop in the checkout", abs, common)
	}
	root, err := r.Run(ctx, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("worktree: find the top level of %s: %w", abs, err)
	}
	return detectHead(ctx, r, &Repo{Root: git.Trim(root), CommonDir: common})
}

// detectHead fills in repo's HEAD commit.
func detectHead(ctx context.Context, r *git.Runner, repo *Repo) (*Repo, error) {
	head, err := r.Run(ctx, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		var ge *git.Error
		if errors.As(err, &ge) && ge.ExitCode == 1 {
			return nil, errorf(ErrNoCommits, "the repository at %s has no commits yet; make a first commit so a session can start a worktree from it", repo.Root)
		}
		return nil, fmt.Errorf("worktree: resolve HEAD in %s: %w", repo.Root, err)
	}
	repo.Head = git.Trim(head)
	return repo, nil
}

// canonical makes p (relative to base when not absolute) absolute, clean and
// free of symlinks, so the same repository always yields the same string.
func canonical(base, p string) (string, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	return filepath.EvalSymlinks(filepath.Clean(p))
}

// RepoID returns a stable, filesystem-safe name for the repository whose
// common git directory is commonDir: <name>-<first 8 hex digits of the
// SHA-256 of the absolute path>. <name> is the repository's directory name
// (the parent of a ".git" directory, "x" for "x.git"), lowercased and limited
// to [a-z0-9._-]. Pass the canonical path Detect returns: the id is computed
// from the string alone and does not resolve symlinks.
func RepoID(commonDir string) string {
	p := commonDir
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	p = filepath.Clean(p)
	sum := sha256.Sum256([]byte(p))
	name := filepath.Base(p)
	if name == ".git" {
		name = filepath.Base(filepath.Dir(p))
	}
	name = strings.TrimSuffix(name, ".git")
	name = sanitize(name, "._", 32)
	if name == "" {
		name = "repo"
	}
	return name + "-" + hex.EncodeToString(sum[:])[:8]
}

// sanitize lowercases s, keeps [a-z0-9], the runes in keep and '-', turns
// every other run of runes into a single '-', trims '-' and '.' at both ends
// and cuts the result to max bytes.
func sanitize(s, keep string, max int) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c < 0x80 && strings.ContainsRune(keep, c):
			b.WriteRune(c)
			dash = false
		default:
			if !dash {
				b.WriteByte('-')
				dash = true
			}
		}
	}
	out := strings.Trim(b.String(), "-.")
	if len(out) > max {
		out = strings.TrimRight(out[:max], "-.")
	}
	return out
}

// GoneReason is the part of an ErrRepoGone or ErrBranchGone error that
// says what happened to the session's repository, worktree or checkout,
// without the prefixes of the layers that returned it.
func GoneReason(err error) string {
	msg := err.Error()
	for _, start := range []string{"the repository ", "the session worktree ", "the checkout "} {
		if i := strings.Index(msg, start); i >= 0 {
			return msg[i:]
		}
	}
	return msg
}
