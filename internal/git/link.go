package git

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/fsutil"
)

// ErrLinkBroken is wrapped when a linked worktree's `.git` file cannot be
// put back from the repository's own records.
var ErrLinkBroken = fault.Plain("git: worktree link broken")

// ErrNoWorktreeRecord is wrapped (with ErrLinkBroken) when the repository
// holds no record of the worktree, so the link cannot be rebuilt from it:
// the directory may not be a worktree of that repository at all.
var ErrNoWorktreeRecord = fault.Plain("git: repository has no record of the worktree")

// LinkRepair says what CheckWorktreeLink found and did.
type LinkRepair struct {
	Repaired bool   // the .git file was rewritten
	Was      string // what it held before ("" when it was missing)
	AdminDir string // <common-dir>/worktrees/<name>, the worktree's git dir
}

// CheckWorktreeLink makes sure the `.git` file of the linked worktree at
// worktree leads to its administrative directory in the repository whose
// common git directory is commonDir, and repairs it when anything in the
// worktree (a shell command, say) rewrote, removed or redirected it. The
// right administrative directory is the entry <commonDir>/worktrees/<name>
// whose `gitdir` file names worktree/.git: the repository's own record, not
// anything inside the worktree. The check costs three small file reads when
// the link is intact.
//
// It repairs only a `.git` that is a regular file or missing; a `.git`
// directory or symlink put there is somebody's data and is left alone. Then,
// or when the repository holds no entry for this worktree, it returns an
// error wrapping ErrLinkBroken that says what is wrong and how to fix it
// without losing anything. No file other than worktree/.git is ever written.
func CheckWorktreeLink(worktree, commonDir string) (LinkRepair, error) {
	link := filepath.Join(worktree, ".git")
	st, err := os.Lstat(link)
	var was string
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return LinkRepair{}, fmt.Errorf("%w: inspect %s: %v", ErrLinkBroken, link, err)
	case st.IsDir():
		return LinkRepair{}, fmt.Errorf("%w: %s is now a directory (a repository was created in the worktree's top level); yolop leaves it alone: rename it (mv %s %s.moved) and open the session again, nothing in the worktree is lost", ErrLinkBroken, link, link, link)
	case !st.Mode().IsRegular():
		return LinkRepair{}, fmt.Errorf("%w: %s is now a %s; yolop leaves it alone: rename it (mv %s %s.moved) and open the session again, nothing in the worktree is lost", ErrLinkBroken, link, kind(st.Mode()), link, link)
	default:
		b, err := os.ReadFile(link)
		if err != nil {
			return LinkRepair{}, fmt.Errorf("%w: read %s: %v", ErrLinkBroken, link, err)
		}
		was = string(b)
		if admin, ok := parseGitFile(b, worktree); ok && adminOf(admin, worktree, commonDir) {
			return LinkRepair{AdminDir: admin}, nil
		}
	}
	admin, err := findAdminDir(worktree, commonDir)
	if err != nil {
		return LinkRepair{}, err
	}
	if err := replaceFile(link, []byte("gitdir: "+admin+"\n")); err != nil {
		return LinkRepair{}, fmt.Errorf("%w: rewrite %s: %v", ErrLinkBroken, link, err)
	}
	return LinkRepair{Repaired: true, Was: strings.TrimSpace(was), AdminDir: admin}, nil
}

func kind(m fs.FileMode) string {
	if m&fs.ModeSymlink != 0 {
		return "symlink"
	}
	return "special file"
}

// ParseGitFile reads a linked worktree's .git file, "gitdir: <path>"
// (relative paths are relative to the worktree), and returns the path.
func ParseGitFile(b []byte, worktree string) (string, bool) { return parseGitFile(b, worktree) }

// parseGitFile reads "gitdir: <path>" (relative paths are relative to the
// worktree).
func parseGitFile(b []byte, worktree string) (string, bool) {
	s, ok := strings.CutPrefix(strings.TrimRight(string(b), "\r\n"), "gitdir: ")
	if !ok || s == "" || strings.ContainsAny(s, "\n\x00") {
		return "", false
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(worktree, s)
	}
	return filepath.Clean(s), true
}

// adminOf reports whether admin is an administrative directory of
// commonDir's repository whose gitdir file names worktree/.git.
func adminOf(admin, worktree, commonDir string) bool {
	if !fsutil.SamePath(filepath.Dir(admin), filepath.Join(commonDir, "worktrees")) {
		return false
	}
	b, err := os.ReadFile(filepath.Join(admin, "gitdir"))
	if err != nil {
		return false
	}
	back, ok := parseGitFileLine(b, admin)
	return ok && fsutil.SamePath(back, filepath.Join(worktree, ".git"))
}

// parseGitFileLine reads the single path line of an admin entry's gitdir
// file (relative paths are relative to the admin directory).
func parseGitFileLine(b []byte, base string) (string, bool) {
	s := strings.TrimRight(string(b), "\r\n")
	if s == "" || strings.ContainsAny(s, "\n\x00") {
		return "", false
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(base, s)
	}
	return filepath.Clean(s), true
}

// findAdminDir looks up the repository's entry for worktree.
func findAdminDir(worktree, commonDir string) (string, error) {
	dir := filepath.Join(commonDir, "worktrees")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("%w: %w: the repository %s has no worktree records (%v); the session's files are intact in %s, but its git link cannot be restored; run `git worktree repair %s` in the repository, then open the session again", ErrLinkBroken, ErrNoWorktreeRecord, commonDir, err, worktree, worktree)
	}
	for _, e := range ents {
		admin := filepath.Join(dir, e.Name())
		if e.IsDir() && adminOf(admin, worktree, commonDir) {
			return admin, nil
		}
	}
	return "", fmt.Errorf("%w: %w: the repository %s no longer records the worktree %s (was `git worktree prune` run?); its files are intact, but its git link cannot be restored from yolop's records; run `git worktree repair %s` in the repository, then open the session again", ErrLinkBroken, ErrNoWorktreeRecord, commonDir, worktree, worktree)
}

// replaceFile writes path atomically (temp file in the same directory,
// rename), replacing whatever regular file was there.
func replaceFile(path string, content []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".git-link-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
