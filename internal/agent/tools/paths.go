package tools

import (
	"errors"
	"fmt"
	"github.com/yolop-dev/yolop/internal/blocklist"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Blocklist names the directories that checkpoints never capture and that the
// file tools never write into, at any depth: the snapshot engine's list.
var Blocklist = blocklist.Dirs

// Blocked reports whether any component of the slash- or OS-separated
// relative path rel is a blocklisted directory name, and returns that
// component. The last component counts too: writing a file named "build"
// would create what the snapshot engine treats as a blocklisted entry.
func Blocked(rel string) (string, bool) {
	for _, part := range splitPath(filepath.ToSlash(rel)) {
		if blocklist.Contains(part) {
			return part, true
		}
	}
	return "", false
}

// maxSymlinkHops bounds symlink resolution, like the kernel's ELOOP limit.
const maxSymlinkHops = 40

// pathError is a path the model asked for that cannot be used. Its message is
// shown to the model as an error result.
type pathError struct{ msg string }

func (e *pathError) Error() string { return e.msg }

func pathErrorf(format string, args ...any) error {
	return &pathError{msg: fmt.Sprintf(format, args...)}
}

// resolved is a path inside the root.
type resolved struct {
	// Abs is the real absolute path: no existing component of it is a
	// symlink, except the last one when it was resolved without following.
	Abs string
	// Rel is Abs relative to the root, slash-separated, "." for the root.
	Rel string
	// Asked is the cleaned path as the model gave it, slash-separated, for
	// messages.
	Asked string
}

// splitPath splits a slash-separated relative path into its non-empty,
// non-"." components.
func splitPath(p string) []string {
	var out []string
	for _, part := range strings.Split(p, "/") {
		if part != "" && part != "." {
			out = append(out, part)
		}
	}
	return out
}

// relInRoot turns an absolute path into a root-relative one, or reports that
// it lies outside the root. Both the resolved root and the root as configured
// are accepted, so paths spelled through a symlinked parent of the root (for
// example /tmp on systems where it is a link) still work.
func (s *Set) relInRoot(abs string) (string, bool) {
	abs = filepath.Clean(abs)
	for _, root := range []string{s.root, s.rootAsGiven} {
		if root == "" {
			continue
		}
		rel, err := filepath.Rel(root, abs)
		if err != nil {
			continue
		}
		if rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))) {
			return filepath.ToSlash(rel), true
		}
	}
	return "", false
}

// resolve confines the model-supplied path p to the root. With followLast the
// final component is resolved through symlinks too (reads, writes through a
// link); without it the final component is left as is (delete removes the
// link itself). Components that do not exist yet are allowed: they cannot be
// symlinks.
func (s *Set) resolve(p string, followLast bool) (resolved, error) {
	if strings.ContainsRune(p, 0) {
		return resolved{}, pathErrorf("path %q contains a NUL byte", p)
	}
	if strings.TrimSpace(p) == "" {
		return resolved{}, pathErrorf("path is empty; give a path relative to the project root, e.g. \"src/main.go\"")
	}
	var rel string
	if filepath.IsAbs(p) {
		r, ok := s.relInRoot(p)
		if !ok {
			return resolved{}, pathErrorf("path %s is outside the project root %s; use a path inside the root", p, s.root)
		}
		rel = r
	} else {
		rel = filepath.ToSlash(filepath.Clean(p))
	}
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return resolved{}, pathErrorf("path %s escapes the project root; use a path inside the root", p)
	}
	asked := rel
	parts := splitPath(rel)
	cur := s.root
	hops := 0
	for i := 0; i < len(parts); i++ {
		next := filepath.Join(cur, parts[i])
		last := i == len(parts)-1
		if last && !followLast {
			cur = next
			break
		}
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			cur = filepath.Join(append([]string{next}, parts[i+1:]...)...)
			break
		}
		if err != nil {
			// ENOTDIR and permission problems: the model can fix the path.
			return resolved{}, pathErrorf("cannot access %s: %v", asked, unwrapPathErr(err))
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		hops++
		if hops > maxSymlinkHops {
			return resolved{}, pathErrorf("path %s has too many levels of symbolic links", asked)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return resolved{}, pathErrorf("cannot read symlink %s: %v", s.display(next), unwrapPathErr(err))
		}
		var dest string
		if filepath.IsAbs(target) {
			dest = filepath.Clean(target)
		} else {
			// cur has no symlinks in it, so resolving ".." lexically
			// from it matches what the kernel does.
			dest = filepath.Join(cur, target)
		}
		destRel, ok := s.relInRoot(dest)
		if !ok {
			return resolved{}, pathErrorf("path %s goes through symlink %s, which points outside the project root (to %s); refused", asked, s.display(next), target)
		}
		// Restart from the root with the link replaced by its target.
		parts = append(splitPath(destRel), parts[i+1:]...)
		cur = s.root
		i = -1
	}
	relOut, ok := s.relInRoot(cur)
	if !ok {
		// Unreachable by construction; refuse rather than trust it.
		return resolved{}, pathErrorf("path %s escapes the project root; refused", asked)
	}
	return resolved{Abs: cur, Rel: relOut, Asked: asked}, nil
}

// display names an absolute path inside the root relative to it.
func (s *Set) display(abs string) string {
	if rel, ok := s.relInRoot(abs); ok {
		return rel
	}
	return abs
}

// forRead resolves a path for reading: symlinks followed, .git refused.
func (s *Set) forRead(p string) (resolved, error) {
	// Said before resolving: in a worktree .git is a file, and the
	// resolution would fail with "not a directory".
	if inGitDir(filepath.ToSlash(p)) {
		return resolved{}, pathErrorf("path %s is inside a .git directory, which the tools do not read; use bash with git commands instead", p)
	}
	r, err := s.resolve(p, true)
	if err != nil {
		return r, err
	}
	if inGitDir(r.Asked) || inGitDir(r.Rel) {
		return r, pathErrorf("path %s is inside a .git directory, which the tools do not read; use bash with git commands instead", r.Asked)
	}
	return r, nil
}

// forWrite resolves a path for writing and refuses blocklisted directories,
// both as asked and as resolved through symlinks.
func (s *Set) forWrite(p string, followLast bool) (resolved, error) {
	// The path as asked is checked before resolving it: in a worktree
	// .git is a file, and resolving .git/config fails with "not a
	// directory", which says nothing of why the write is refused.
	if !filepath.IsAbs(p) {
		if dir, ok := Blocked(filepath.ToSlash(filepath.Clean(p))); ok {
			return resolved{}, blockedWrite(filepath.ToSlash(filepath.Clean(p)), dir)
		}
	}
	r, err := s.resolve(p, followLast)
	if err != nil {
		return r, err
	}
	if r.Rel == "." {
		return r, pathErrorf("path %s is the project root itself; name a file inside it", r.Asked)
	}
	for _, rel := range []string{r.Asked, r.Rel} {
		if dir, ok := Blocked(rel); ok {
			return r, blockedWrite(r.Asked, dir)
		}
	}
	return r, nil
}

// openForRead checks p for reading (forRead) and opens it (Set.open).
func (s *Set) openForRead(p string) (*target, error) {
	return s.open(func() (resolved, error) { return s.forRead(p) }, true, false)
}

// openForWrite checks p for writing (forWrite) and opens it (Set.open);
// create makes the missing parent directories.
func (s *Set) openForWrite(p string, followLast, create bool) (*target, error) {
	return s.open(func() (resolved, error) { return s.forWrite(p, followLast) }, followLast, create)
}

func blockedWrite(asked, dir string) error {
	return pathErrorf("writes to %s are refused: %q is a write-blocklisted directory (%s); checkpoints do not capture it, so the change could not be rewound. Use bash if the user asked for it", asked, dir, strings.Join(Blocklist, ", "))
}

func inGitDir(rel string) bool {
	for _, part := range splitPath(rel) {
		if part == ".git" {
			return true
		}
	}
	return false
}

// unwrapPathErr drops the *fs.PathError wrapper, whose absolute path would
// only repeat what the message already says.
func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
