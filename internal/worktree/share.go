package worktree

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"

	"github.com/yolop-dev/yolop/internal/git"
)

// Shared directories ([worktree] share) are relocatable dependency and
// build directories (node_modules, target, …) copied from the user's
// checkout into a new session worktree, so that its first build or test
// does not start from nothing. A copy is a reflink where the filesystem
// can share extents (FICLONE), else a plain copy; never a hard link, so a
// write in the worktree never reaches the checkout. A spare prepared in
// the background gets its copies then (recorded in its parking record);
// the session that claims a spare parked from another session gets fresh
// copies in place of what that session left, so nothing of one session
// crosses into the next.

// CheckShare validates the [worktree] share entries: each is a path
// relative to the checkout's top, inside it, and not git's own.
func CheckShare(entries []string) error {
	seen := map[string]bool{}
	for _, e := range entries {
		clean := path.Clean(filepath.ToSlash(e))
		switch {
		case e == "" || strings.TrimSpace(e) != e:
			return fmt.Errorf("[worktree] share: %q is not a directory name; write paths relative to the checkout's top, like \"node_modules\"", e)
		case path.IsAbs(clean) || filepath.IsAbs(e):
			return fmt.Errorf("[worktree] share: %q is absolute; write it relative to the checkout's top, like \"node_modules\" or \"web/node_modules\"", e)
		case clean == "." || clean == ".." || strings.HasPrefix(clean, "../"):
			return fmt.Errorf("[worktree] share: %q is not inside the checkout; name a directory under its top, like \"node_modules\"", e)
		case clean == ".git" || strings.HasPrefix(clean, ".git/") || strings.Contains(clean, "/.git/") || strings.HasSuffix(clean, "/.git"):
			return fmt.Errorf("[worktree] share: %q is git's own directory; it cannot be shared", e)
		}
		if seen[clean] {
			return fmt.Errorf("[worktree] share: %q is listed twice", e)
		}
		seen[clean] = true
	}
	for a := range seen {
		for b := range seen {
			if a != b && strings.HasPrefix(b, a+"/") {
				return fmt.Errorf("[worktree] share: %q is inside %q, which is shared already; list only %q", b, a, a)
			}
		}
	}
	return nil
}

// shareEntry is one entry in its cleaned, slash-separated form.
func shareEntry(e string) string { return path.Clean(filepath.ToSlash(e)) }

// isShared reports whether p (a slash path relative to the worktree's top,
// as git status prints it) is a shared directory or inside one.
func isShared(p string, share []string) bool {
	p = strings.TrimSuffix(p, "/")
	for _, e := range share {
		e = shareEntry(e)
		if p == e || strings.HasPrefix(p, e+"/") {
			return true
		}
	}
	return false
}

// ShareResult is what copying the shared directories did.
type ShareResult struct {
	// Copied lists the entries copied, Files and Bytes their size.
	Copied []string
	// Stamps holds each copied entry's shareStamp in the checkout, taken
	// before the copy.
	Stamps map[string]string
	Files  int
	Bytes  int64
	// Reflinked counts the files whose extents were shared, not copied.
	Reflinked int
	Elapsed   time.Duration
	// Notes tell the user about entries left out (and why) or that could
	// not be copied.
	Notes []string
}

// Note is one line for the user saying what was copied ("" when nothing).
func (r ShareResult) Note() string {
	if len(r.Copied) == 0 {
		return ""
	}
	how := "copied"
	if r.Reflinked > 0 && r.Reflinked == r.Files {
		how = "reflinked"
	} else if r.Reflinked > 0 {
		how = fmt.Sprintf("copied (%d of %d files reflinked)", r.Reflinked, r.Files)
	}
	return fmt.Sprintf("shared from the checkout into the session worktree ([worktree] share): %s, %s %s in %s",
		strings.Join(r.Copied, ", "), humanBytes(r.Bytes), how, r.Elapsed.Round(10*time.Millisecond))
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// copyShared copies each entry of share that exists in the checkout at
// from into the worktree at to (its administrative directory admin, of
// the repository commonDir), replacing what the worktree holds there
// unless fresh holds the entry's stamp as the checkout's copy has it now
// (copied when the spare was prepared, and not changed since). An
// entry that is not ignored by git in the worktree is left out: it would
// be captured by every checkpoint. A virtualenv is refused: its scripts
// name the checkout's interpreter. Problems are notes, never fatal: the
// session works without the copy. An error is returned only when ctx
// ends.
func copyShared(ctx context.Context, share []string, from, to, admin, commonDir string, fresh map[string]string) (ShareResult, error) {
	var res ShareResult
	if len(share) == 0 {
		return res, nil
	}
	start := time.Now()
	var present []string
	for _, e := range share {
		e = shareEntry(e)
		src := filepath.Join(from, filepath.FromSlash(e))
		st, err := os.Lstat(src)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("[worktree] share: %s in the checkout cannot be read (%v); the session worktree goes without it", e, err))
			continue
		}
		if !st.IsDir() {
			res.Notes = append(res.Notes, fmt.Sprintf("[worktree] share: %s in the checkout is not a directory; only directories are shared", e))
			continue
		}
		if why := notRelocatable(src); why != "" {
			res.Notes = append(res.Notes, fmt.Sprintf("[worktree] share: %s is %s, which does not work when copied (its scripts name the checkout's interpreter); make it in each worktree with [worktree] setup instead, e.g. setup = \"python3 -m venv %s && %s/bin/pip install -r requirements.txt\"", e, why, e, e))
			continue
		}
		if link := symlinkAbove(to, e); link != "" {
			// A claimed spare holds what an earlier session's agent left:
			// replacing the entry through a symlink would delete and
			// write wherever it points.
			res.Notes = append(res.Notes, fmt.Sprintf("[worktree] share: %s in the session worktree is a symlink, so %s was not copied there", link, e))
			continue
		}
		present = append(present, e)
	}
	if len(present) == 0 {
		return res, nil
	}
	if admin == "" {
		a, err := git.AdminDirOf(to, commonDir)
		if err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("[worktree] share: %v; nothing was copied", err))
			return res, nil
		}
		admin = a
	}
	ignored, tracked, err := ignoredIn(ctx, to, admin, commonDir, present)
	if err != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("[worktree] share: could not ask git which of %s it ignores (%v); nothing was copied", strings.Join(present, ", "), err))
		return res, nil
	}
	for _, e := range present {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if tracked[e] {
			res.Notes = append(res.Notes, fmt.Sprintf("[worktree] share: %s holds files git tracks, which the session worktree has from the commit; only a directory git ignores whole is shared", e))
			continue
		}
		if !ignored[e] {
			res.Notes = append(res.Notes, fmt.Sprintf("[worktree] share: %s is not ignored by git here, so a copy would be part of every checkpoint and of the session's diff; add it to .gitignore (or .git/info/exclude) to share it", e))
			continue
		}
		src := filepath.Join(from, filepath.FromSlash(e))
		stamp := shareStamp(src)
		if f, ok := fresh[e]; ok && f == stamp && stamp != "" {
			continue
		}
		dst := filepath.Join(to, filepath.FromSlash(e))
		if err := os.RemoveAll(dst); err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("[worktree] share: could not remove the earlier %s from the worktree (%v); it was not copied", e, err))
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("[worktree] share: %s: %v; it was not copied", e, err))
			continue
		}
		c := copier{ctx: ctx}
		if err := c.tree(src, dst); err != nil {
			rmErr := os.RemoveAll(dst)
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			note := fmt.Sprintf("[worktree] share: copying %s failed (%v); the session worktree goes without it", e, err)
			if rmErr != nil {
				note += fmt.Sprintf(", and what was copied could not be removed (%v)", rmErr)
			}
			res.Notes = append(res.Notes, note)
			continue
		}
		res.Copied = append(res.Copied, e)
		if res.Stamps == nil {
			res.Stamps = map[string]string{}
		}
		res.Stamps[e] = stamp
		res.Files += c.files
		res.Bytes += c.bytes
		res.Reflinked += c.reflinked
		res.Notes = append(res.Notes, c.notes...)
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// symlinkAbove returns the first directory of entry (a slash path under
// top) that is a symlink in top, "" when none is; a missing one ends the
// check (MkdirAll makes it a directory).
func symlinkAbove(top, entry string) string {
	parts := strings.Split(entry, "/")
	for i := 1; i < len(parts); i++ {
		rel := strings.Join(parts[:i], "/")
		st, err := os.Lstat(filepath.Join(top, filepath.FromSlash(rel)))
		if err != nil {
			return ""
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			return rel
		}
	}
	return ""
}

// shareStamp sums up what dir and its direct entries are (names, kinds,
// sizes, modification times), so that a prepared spare's copy is used only
// while the checkout's directory has not visibly changed: installers
// rewrite a top-level lock or metadata file (node_modules/.package-lock.json,
// .yarn-integrity, target/.rustc_info.json) at every install. "" when it
// cannot be read.
func shareStamp(dir string) string {
	st, err := os.Lstat(dir)
	if err != nil {
		return ""
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "%d\n", st.ModTime().UnixNano())
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			return ""
		}
		fmt.Fprintf(h, "%s\x00%o\x00%d\x00%d\n", e.Name(), info.Mode(), info.Size(), info.ModTime().UnixNano())
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// notRelocatable says what kind of environment dir is when copying it
// breaks it ("" when it is none): a Python virtualenv or a conda one.
func notRelocatable(dir string) string {
	if _, err := os.Lstat(filepath.Join(dir, "pyvenv.cfg")); err == nil {
		return "a Python virtualenv"
	}
	if _, err := os.Lstat(filepath.Join(dir, "conda-meta")); err == nil {
		return "a conda environment"
	}
	return ""
}

// ignoredIn asks git which of entries it ignores in the worktree at top,
// and which hold tracked files.
func ignoredIn(ctx context.Context, top, admin, commonDir string, entries []string) (ignored, tracked map[string]bool, err error) {
	in := strings.Join(entries, "/\x00") + "/\x00"
	r := dirsOf(top, admin, commonDir).Runner()
	out, err := r.RunInput(ctx, []byte(in), "check-ignore", "--stdin", "-z")
	// check-ignore exits 1 when none of them is ignored.
	var ge *git.Error
	if err != nil && !(errors.As(err, &ge) && ge.ExitCode == 1) {
		return nil, nil, err
	}
	ignored, tracked = map[string]bool{}, map[string]bool{}
	for _, p := range git.SplitZ(out) {
		ignored[strings.TrimSuffix(p, "/")] = true
	}
	// An ignored directory may still hold tracked files (added before the
	// rule, or with add -f): replacing it would delete them.
	for _, e := range entries {
		files, err := r.Run(ctx, "ls-files", "-z", "--", e)
		if err != nil {
			return nil, nil, err
		}
		if len(files) > 0 {
			tracked[e] = true
		}
	}
	return ignored, tracked, nil
}

// shareWorkers is how many files a copy writes at once.
const shareWorkers = 4

// copier copies a directory tree: directories, regular files (reflinked
// when the filesystem can, else their bytes), symlinks as symlinks, with
// permissions and modification times; other kinds of file are left out
// with a note.
type copier struct {
	ctx       context.Context
	files     int
	reflinked int
	bytes     int64
	notes     []string
}

func (c *copier) tree(src, dst string) error {
	// A directory's time is set once its entries are written, deepest
	// first.
	type dirTime struct {
		path string
		mode fs.FileMode
		t    time.Time
	}
	var dirs []dirTime
	// Files are copied by a few workers while the walk goes on: each copy
	// is a handful of system calls that mostly wait (for the disk, or for
	// the filesystem's extent locks). A directory is made by the walk
	// before any file in it is handed out.
	type job struct {
		src, dst string
		info     fs.FileInfo
	}
	jobs := make(chan job, 256)
	g, ctx := errgroup.WithContext(c.ctx)
	workers := make([]copier, shareWorkers)
	for i := range workers {
		w := &workers[i]
		w.ctx = ctx
		g.Go(func() error {
			for j := range jobs {
				if err := w.file(j.src, j.dst, j.info); err != nil {
					return err
				}
			}
			return nil
		})
	}
	walkErr := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch mode := info.Mode(); {
		case mode.IsDir():
			if err := os.Mkdir(out, mode.Perm()|0o700); err != nil {
				return err
			}
			dirs = append(dirs, dirTime{out, mode.Perm(), info.ModTime()})
			return nil
		case mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, out); err != nil {
				return err
			}
			t := unix.NsecToTimeval(info.ModTime().UnixNano())
			// A symlink's own time is cosmetic; not every system can set it.
			_ = unix.Lutimes(out, []unix.Timeval{t, t})
			return nil
		case mode.IsRegular():
			select {
			case jobs <- job{p, out, info}:
			case <-ctx.Done():
				return ctx.Err()
			}
		default:
			if len(c.notes) < 5 {
				c.notes = append(c.notes, fmt.Sprintf("[worktree] share: %s is not a regular file, directory or symlink; it was left out", p))
			}
		}
		return nil
	})
	close(jobs)
	err := g.Wait()
	for _, w := range workers {
		c.files += w.files
		c.reflinked += w.reflinked
		c.bytes += w.bytes
	}
	// The walk stops with the group's context when a worker failed: the
	// worker's error is then the cause.
	if walkErr != nil && (err == nil || !errors.Is(walkErr, context.Canceled)) {
		err = walkErr
	}
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		d := dirs[i]
		if d.mode|0o700 != d.mode {
			// It was made writable to be filled.
			if err := os.Chmod(d.path, d.mode); err != nil {
				return err
			}
		}
		if err := os.Chtimes(d.path, d.t, d.t); err != nil {
			return err
		}
	}
	return nil
}

// file copies one regular file: a reflink (FICLONE) first, its bytes when
// the filesystem cannot share extents. Never a hard link.
func (c *copier) file(src, dst string, info fs.FileInfo) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm()|0o200)
	if err != nil {
		return err
	}
	if err := reflink(out, in); err == nil {
		c.reflinked++
	} else if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Chmod(info.Mode().Perm()); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if err := os.Chtimes(dst, info.ModTime(), info.ModTime()); err != nil {
		return err
	}
	c.files++
	c.bytes += info.Size()
	return nil
}
