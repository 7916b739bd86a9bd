package tools

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// haveOpenat2 reports whether this kernel has openat2.
func haveOpenat2(t *testing.T) bool {
	fd, err := sysOpenat2(unix.AT_FDCWD, ".")
	if err == nil {
		unix.Close(fd)
	}
	return !errors.Is(err, unix.ENOSYS)
}

// TestBeneathOpenDir: the low layer opens only symlink-free paths beneath
// the root: a symlink (inside the root or not), "..", and /proc's magic
// links are refused as "changed", so the caller checks the path again.
func TestBeneathOpenDir(t *testing.T) {
	t.Parallel()
	resolverModes(t, func(t *testing.T, force func(*beneath)) {
		root := t.TempDir()
		outside := t.TempDir()
		putFile(t, root, "a/b/f.txt", "x")
		putFile(t, root, "file", "x")
		symlink(t, "a", filepath.Join(root, "la"))
		symlink(t, outside, filepath.Join(root, "out"))
		symlink(t, "..", filepath.Join(root, "a/up"))
		b := newBeneath(root)
		force(b)
		for _, rel := range []string{"", ".", "a", "a/b"} {
			d, err := b.openDir(rel, false)
			if err != nil {
				t.Fatalf("%q: %v", rel, err)
			}
			if want := filepath.Join(root, rel); !sameFile(t, d, want) {
				t.Fatalf("%q opened something else than %s", rel, want)
			}
			d.Close()
		}
		for _, rel := range []string{"la", "la/b", "out", "a/up", "a/up/a", "..", "a/../..", "a/b/../../.."} {
			if d, err := b.openDir(rel, false); !errors.Is(err, errChanged) {
				if d != nil {
					d.Close()
				}
				t.Errorf("%q: %v, want the refusal", rel, err)
			}
		}
		if _, err := b.openDir("nope/x", false); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("missing: %v", err)
		}
		if _, err := b.openDir("file/x", false); !errors.Is(err, unix.ENOTDIR) {
			t.Errorf("through a file: %v", err)
		}
		d, err := b.openDir("a/new/deeper", true)
		if err != nil {
			t.Fatal(err)
		}
		d.Close()
		if fi, err := os.Stat(filepath.Join(root, "a/new/deeper")); err != nil || !fi.IsDir() {
			t.Fatalf("create: %v", err)
		}
		// A symlink on the way is never followed to create anything.
		if _, err := b.openDir("out/made", true); !errors.Is(err, errChanged) {
			t.Errorf("create through a link: %v", err)
		}
		if _, err := os.Stat(filepath.Join(outside, "made")); !os.IsNotExist(err) {
			t.Fatalf("a directory was made outside the root: %v", err)
		}
		// /proc/self/cwd and /proc/self/fd/N are magic links: refused even
		// with /proc itself as the root.
		proc, err := filepath.EvalSymlinks("/proc/self")
		if err != nil {
			t.Fatal(err)
		}
		p := newBeneath(proc)
		force(p)
		f, err := os.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, rel := range []string{"cwd", "root", "fd/" + strconv.Itoa(int(f.Fd()))} {
			if d, err := p.openDir(rel, false); !errors.Is(err, errChanged) {
				if d != nil {
					d.Close()
				}
				t.Errorf("/proc/self/%s: %v, want the refusal", rel, err)
			}
		}
	})
}

// TestOpenat2Fallback: an ENOSYS from openat2 is heard once; every later
// open walks without asking the kernel again. With the kernel's openat2,
// nothing walks.
func TestOpenat2Fallback(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	putFile(t, root, "a/b/f.txt", "x")
	var calls atomic.Int32
	b := newBeneath(root)
	b.openat2 = func(int, string) (int, error) { calls.Add(1); return -1, unix.ENOSYS }
	for range 3 {
		d, err := b.openDir("a/b", false)
		if err != nil {
			t.Fatal(err)
		}
		d.Close()
	}
	if calls.Load() != 1 || b.walks.Load() != 3 {
		t.Fatalf("openat2 asked %d times, %d walks; want 1 and 3", calls.Load(), b.walks.Load())
	}
	if !haveOpenat2(t) {
		t.Skip("this kernel has no openat2")
	}
	k := newBeneath(root)
	for range 3 {
		d, err := k.openDir("a/b", false)
		if err != nil {
			t.Fatal(err)
		}
		d.Close()
	}
	if k.walks.Load() != 0 {
		t.Fatalf("%d opens walked with openat2 available", k.walks.Load())
	}
}

func sameFile(t *testing.T, f *os.File, path string) bool {
	t.Helper()
	a, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return os.SameFile(a, b)
}

func exchange(t *testing.T, a, b string) {
	t.Helper()
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
		t.Fatal(err)
	}
}

// swapSet is a tool set on a root holding d/ (the worktree's directory,
// with f.txt) and l, a symlink to a directory outside holding the user's
// f.txt. With swap, every file tool's afterResolve exchanges d and l: the
// path was checked while d was the directory, and is used after d became
// the link.
func swapSet(t *testing.T, force func(*beneath)) (s *Set, root, outside string) {
	t.Helper()
	s, root = newSet(t)
	force(s.dirs)
	outside = t.TempDir()
	putFile(t, outside, "f.txt", "the user's secret\n")
	putFile(t, root, "d/f.txt", "the agent's needle\n")
	symlink(t, outside, filepath.Join(root, "l"))
	s.afterResolve = func(tool, rel string) {
		exchange(t, filepath.Join(root, "d"), filepath.Join(root, "l"))
	}
	return s, root, outside
}

// TestFileToolsStayInTheRootUnderSwaps: whatever a command swaps between
// a file tool's check of its path and its use, the tool works on what it
// checked, inside the root, or refuses; the directory outside is neither
// read nor written.
func TestFileToolsStayInTheRootUnderSwaps(t *testing.T) {
	t.Parallel()
	resolverModes(t, func(t *testing.T, force func(*beneath)) {
		for _, tc := range []struct {
			tool string
			args map[string]any
			// check looks at the result and the worktree's directory,
			// which is named l after the exchange.
			check func(t *testing.T, r Result, dir string)
		}{
			{"read_file", map[string]any{"path": "d/f.txt"}, func(t *testing.T, r Result, _ string) {
				if mustOK(t, r).Content != "the agent's needle\n" {
					t.Errorf("read: %q", r.Content)
				}
			}},
			{"write_file", map[string]any{"path": "d/f.txt", "content": "new\n"}, func(t *testing.T, r Result, dir string) {
				mustOK(t, r)
				if got := readFileT(t, dir, "f.txt"); got != "new\n" {
					t.Errorf("the worktree's file: %q", got)
				}
			}},
			{"write_file", map[string]any{"path": "d/sub/new.txt", "content": "new\n"}, func(t *testing.T, r Result, dir string) {
				mustOK(t, r)
				if got := readFileT(t, dir, "sub/new.txt"); got != "new\n" {
					t.Errorf("the worktree's file: %q", got)
				}
			}},
			{"edit_file", map[string]any{"path": "d/f.txt", "old_text": "needle", "new_text": "pin"}, func(t *testing.T, r Result, dir string) {
				mustOK(t, r)
				if got := readFileT(t, dir, "f.txt"); got != "the agent's pin\n" {
					t.Errorf("the worktree's file: %q", got)
				}
			}},
			{"delete_file", map[string]any{"path": "d/f.txt"}, func(t *testing.T, r Result, dir string) {
				mustOK(t, r)
				if _, err := os.Lstat(filepath.Join(dir, "f.txt")); !os.IsNotExist(err) {
					t.Errorf("the worktree's file was not deleted: %v", err)
				}
			}},
			{"list_directory", map[string]any{"path": "d"}, func(t *testing.T, r Result, _ string) {
				if mustOK(t, r).Content != "f.txt\n" {
					t.Errorf("list: %q", r.Content)
				}
			}},
			{"grep", map[string]any{"pattern": "secret|needle", "path": "d"}, func(t *testing.T, r Result, _ string) {
				if c := mustOK(t, r).Content; !strings.Contains(c, "needle") || strings.Contains(c, "secret") {
					t.Errorf("grep: %q", c)
				}
			}},
			{"grep", map[string]any{"pattern": "secret|needle", "path": "d/f.txt"}, func(t *testing.T, r Result, _ string) {
				if c := mustOK(t, r).Content; !strings.Contains(c, "needle") || strings.Contains(c, "secret") {
					t.Errorf("grep: %q", c)
				}
			}},
		} {
			s, root, outside := swapSet(t, force)
			r := call(t, s, tc.tool, tc.args)
			dir := filepath.Join(root, "l")
			if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
				t.Fatalf("%s: the exchange did not happen: %v", tc.tool, err)
			}
			tc.check(t, r, dir)
			es, err := os.ReadDir(outside)
			if err != nil || len(es) != 1 || readFileT(t, outside, "f.txt") != "the user's secret\n" {
				t.Errorf("%s %v: the directory outside changed: %v %v", tc.tool, tc.args, es, err)
			}
		}
	})
}

// TestCheckedAgainAfterASwap: when the swap lands between the check of a
// path and the open of its directory, the path is checked again and the
// link now on it is refused by name; a path swapped on every check is
// refused after a few.
func TestCheckedAgainAfterASwap(t *testing.T) {
	t.Parallel()
	resolverModes(t, func(t *testing.T, force func(*beneath)) {
		s, root, outside := swapSet(t, force)
		s.afterResolve = func(string, string) {}
		d, l := filepath.Join(root, "d"), filepath.Join(root, "l")
		// Swapped once after the check: checked again, d is the link.
		once := false
		_, err := s.open(func() (resolved, error) {
			r, err := s.forWrite("d/f.txt", false)
			if !once {
				once = true
				exchange(t, d, l)
			}
			return r, err
		}, false, false)
		if r, _ := pathResult(err); !strings.Contains(r.Content, "goes through symlink d, which points outside the project root") {
			t.Fatalf("after one swap: %v", err)
		}
		exchange(t, d, l)
		// Swapped after every check and back before the next: d is the
		// directory at every check and the link at every open.
		checks := 0
		_, err = s.open(func() (resolved, error) {
			if checks++; checks > 1 {
				exchange(t, d, l)
			}
			r, err := s.forWrite("d/f.txt", false)
			exchange(t, d, l)
			return r, err
		}, false, false)
		if r, _ := pathResult(err); !strings.Contains(r.Content, "changed 8 times while it was being resolved") {
			t.Fatalf("under constant swaps: %v", err)
		}
		if readFileT(t, outside, "f.txt") != "the user's secret\n" {
			t.Fatal("the file outside changed")
		}
	})
}
