package tools

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/yolop-dev/yolop/internal/fault"
	"golang.org/x/sys/unix"
)

// Race safety. resolve checks a path by name, which a concurrent command
// can change a moment later (swap a directory for a symlink). So a tool
// then opens the directory holding the path's last component beneath the
// root, following no symlink at all (every symlink on the path was
// already replaced by its target by resolve), and works on that one
// component through the directory's descriptor: openat, fstatat,
// unlinkat, renameat. Whatever is swapped in afterwards, the operation
// stays in the directory that was opened, and that directory is inside
// the root. When the open meets a symlink, the tree changed since the
// check: the path is checked and opened again, a few times.
//
// The root itself is opened by its path on every call: its parent
// directories lie outside anything a sandboxed command may write.

// errChanged: the open met a symlink or a "..": the tree changed since the
// path was checked.
var errChanged = fault.Plain("tools: the path changed while it was resolved")

// beneath opens directories beneath the root.
type beneath struct {
	root string
	// openat2 opens path beneath dirfd with RESOLVE_BENEATH,
	// RESOLVE_NO_MAGICLINKS and RESOLVE_NO_SYMLINKS; nil off Linux.
	openat2 func(dirfd int, path string) (int, error)
	// noOpenat2 is set once the kernel answered ENOSYS: from then on every
	// open walks the path one O_NOFOLLOW component at a time.
	noOpenat2 atomic.Bool
	// walks counts the opens that took the walk (for tests).
	walks atomic.Int64
}

func newBeneath(root string) *beneath { return &beneath{root: root, openat2: sysOpenat2} }

const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// openDir opens the directory rel (slash-separated, relative to the root;
// "" or "." is the root) for reading, never leaving the root. A missing
// directory is fs.ErrNotExist, or, with create, made (0755) with its
// missing parents.
func (b *beneath) openDir(rel string, create bool) (*os.File, error) {
	rootFD, err := retryEINTR(func() (int, error) { return unix.Open(b.root, dirFlags, 0) })
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: b.root, Err: err}
	}
	parts := splitPath(rel)
	if len(parts) == 0 {
		return os.NewFile(uintptr(rootFD), b.root), nil
	}
	defer unix.Close(rootFD)
	for _, p := range parts {
		if p == ".." {
			return nil, errChanged
		}
	}
	shown := filepath.Join(b.root, filepath.FromSlash(strings.Join(parts, "/")))
	if b.openat2 != nil && !b.noOpenat2.Load() {
		fd, err := retryEINTR(func() (int, error) { return b.openat2(rootFD, strings.Join(parts, "/")) })
		switch {
		case err == nil:
			return os.NewFile(uintptr(fd), shown), nil
		case errors.Is(err, unix.ENOSYS):
			// A kernel before 5.6: walk, now and from now on.
			b.noOpenat2.Store(true)
		case errors.Is(err, unix.EPERM):
			// A seccomp filter that does not know openat2 (older
			// container runtimes) answers EPERM: walk this time.
		case errors.Is(err, unix.ENOENT) && create:
			// The walk makes the missing directories.
		case errors.Is(err, unix.ENOTDIR):
			// A file on the way, or a symlink at the end (O_DIRECTORY
			// is checked first): the walk tells which.
		case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV), errors.Is(err, unix.EAGAIN):
			// A symlink (magic or not) or a way out where the check saw
			// none, or a rename racing the lookup.
			return nil, errChanged
		default:
			return nil, &fs.PathError{Op: "open", Path: shown, Err: err}
		}
	}
	b.walks.Add(1)
	return b.walk(rootFD, parts, create, shown)
}

// walk opens parts one component at a time below rootFD, each with
// O_NOFOLLOW, so no symlink is followed and nothing outside is reached.
func (b *beneath) walk(rootFD int, parts []string, create bool, shown string) (*os.File, error) {
	cur := rootFD
	closeCur := func() {
		if cur != rootFD {
			unix.Close(cur)
		}
	}
	for i, p := range parts {
		flags := dirFlags
		if i < len(parts)-1 {
			flags = walkFlags // intermediate: search permission is enough
		}
		fd, err := retryEINTR(func() (int, error) { return unix.Openat(cur, p, flags, 0) })
		if errors.Is(err, unix.ENOENT) && create {
			if err := unix.Mkdirat(cur, p, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				closeCur()
				return nil, &fs.PathError{Op: "mkdir", Path: shown, Err: err}
			}
			fd, err = retryEINTR(func() (int, error) { return unix.Openat(cur, p, flags, 0) })
		}
		if err != nil {
			if errors.Is(err, unix.ENOTDIR) {
				var st unix.Stat_t
				if unix.Fstatat(cur, p, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
					err = unix.ELOOP
				}
			}
			closeCur()
			if errors.Is(err, unix.ELOOP) {
				return nil, errChanged
			}
			return nil, &fs.PathError{Op: "open", Path: shown, Err: err}
		}
		closeCur()
		cur = fd
	}
	return os.NewFile(uintptr(cur), shown), nil
}

func retryEINTR(f func() (int, error)) (int, error) {
	for {
		fd, err := f()
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// target is a checked path opened for use: dir holds the last component
// of Rel, name is that component ("" when Rel is the root, which dir then
// is).
type target struct {
	resolved
	dir  *os.File
	name string
}

func (t *target) Close() {
	if t.dir != nil {
		t.dir.Close()
	}
}

// maxChanges bounds how often a path is checked again after the tree
// changed under it.
const maxChanges = 8

// open checks p with check (which resolves it, see resolve) and opens its
// directory beneath the root. When the directory does not exist, the
// target is returned (for messages) with an error matching fs.ErrNotExist.
func (s *Set) open(check func() (resolved, error), followLast, create bool) (*target, error) {
	asked := ""
	for range maxChanges {
		r, err := check()
		if err != nil {
			return nil, err
		}
		asked = r.Asked
		dirRel, name := "", ""
		if r.Rel != "." {
			dirRel, name = filepath.ToSlash(filepath.Dir(filepath.FromSlash(r.Rel))), filepath.Base(filepath.FromSlash(r.Rel))
		}
		d, err := s.dirs.openDir(dirRel, create)
		if errors.Is(err, errChanged) {
			continue
		}
		t := &target{resolved: r, dir: d, name: name}
		if err != nil {
			return t, err
		}
		if followLast && name != "" {
			// resolve replaced a symlink at the end by its target; one
			// there now is new.
			if fi, err := t.lstat(); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				t.Close()
				continue
			}
		}
		return t, nil
	}
	return nil, pathErrorf("path %s changed %d times while it was being resolved (is a command swapping a directory on it with a symlink?); refused, nothing was done", asked, maxChanges)
}

// changedErr is what a tool says when the last component changed between
// the open of its directory and its use.
func changedErr(asked string) Result {
	return errResult("%s changed while it was being used (it became a symlink); refused, nothing was done. Check it with list_directory", asked)
}

// lstat describes the target itself, not following a symlink.
func (t *target) lstat() (fs.FileInfo, error) {
	name := t.name
	if name == "" {
		name = "."
	}
	var st unix.Stat_t
	for {
		err := unix.Fstatat(int(t.dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "lstat", Path: t.Abs, Err: err}
		}
		return &statInfo{name: filepath.Base(t.Abs), st: st}, nil
	}
}

// openFile opens the target with flags, never following a symlink there
// (ELOOP then).
func (t *target) openFile(flags int) (*os.File, error) {
	name := t.name
	if name == "" {
		name = "."
	}
	return openAt(t.dir, name, flags, t.Abs)
}

func openAt(dir *os.File, name string, flags int, shown string) (*os.File, error) {
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(int(dir.Fd()), name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: shown, Err: err}
	}
	return os.NewFile(uintptr(fd), shown), nil
}

// remove deletes the target's entry (a file, a symlink or an empty
// directory), as os.Remove does but through the directory.
func (t *target) remove() error {
	dfd := int(t.dir.Fd())
	err := unix.Unlinkat(dfd, t.name, 0)
	if err == nil {
		return nil
	}
	err1 := unix.Unlinkat(dfd, t.name, unix.AT_REMOVEDIR)
	if err1 == nil {
		return nil
	}
	// Both failed: report the error that says why (unlink of a directory
	// says EISDIR, rmdir of a file ENOTDIR).
	if !errors.Is(err1, unix.ENOTDIR) {
		err = err1
	}
	return &fs.PathError{Op: "remove", Path: t.Abs, Err: err}
}

// readlinkAt reads the symlink name in dir.
func readlinkAt(dir *os.File, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(int(dir.Fd()), name, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// statInfo is an fs.FileInfo made from fstatat.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (i *statInfo) Name() string       { return i.name }
func (i *statInfo) Size() int64        { return i.st.Size }
func (i *statInfo) IsDir() bool        { return i.Mode().IsDir() }
func (i *statInfo) ModTime() time.Time { return time.Unix(i.st.Mtim.Unix()) }
func (i *statInfo) Sys() any           { return &i.st }

func (i *statInfo) Mode() fs.FileMode {
	m := uint32(i.st.Mode)
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}
