package snapshot

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// TestCaptureDifferential applies a seeded random sequence of worktree
// operations and, every few operations, requires the long-lived engine's
// capture to equal the capture of a brand-new engine on fresh state. The
// operations favour what makes stat data and the private index lie: edits of
// the same size in the same second, a mtime put back, exec-bit flips,
// symlinks, file<->directory swaps, renames of whole directories, paths
// under blocklisted and ignored directories.
//
// YOLOP_SNAPSHOT_FUZZ_OPS sets the number of operations (default 300) and
// YOLOP_SNAPSHOT_FUZZ_SEED the seed (default: three fixed seeds).
func TestCaptureDifferential(t *testing.T) {
	t.Parallel()
	ops := 300
	if s := os.Getenv("YOLOP_SNAPSHOT_FUZZ_OPS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("YOLOP_SNAPSHOT_FUZZ_OPS=%q: want a positive number", s)
		}
		ops = n
	}
	seeds := []uint64{1, 2, 3}
	if s := os.Getenv("YOLOP_SNAPSHOT_FUZZ_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("YOLOP_SNAPSHOT_FUZZ_SEED=%q: want a number", s)
		}
		seeds = []uint64{n}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			runDifferential(t, seed, ops/len(seeds)+1)
		})
	}
}

func runDifferential(t *testing.T, seed uint64, ops int) {
	rng := rand.New(rand.NewPCG(seed, seed*0x9e3779b97f4a7c15))
	wt := gittest.NewRepo(t)
	sh(t, wt, `mkdir -p src/lib docs ign; printf 'a\n' > src/a.go; printf 'bb\n' > src/lib/b.go
printf 'readme\n' > docs/r.md; printf 'ign/\n*.log\n' > .gitignore; printf 'x\n' > top.txt
git add -A; git commit -qm base`)
	e := openEngine(t, wt)
	f := &fuzzTree{t: t, rng: rng, root: wt}
	var log []string
	prev := ""
	edits, editDiffs := 0, 0
	check := func() {
		t.Helper()
		got := capture(t, e, "").Tree
		want := oracle(t, wt)
		if got != want {
			diff := gittest.Git(t, wt, "diff-tree", "-r", "--no-renames", got, want)
			t.Fatalf("seed %d: after %d ops the engine captured %s, a fresh engine %s:\n%s\nops:\n%s\nworktree:\n%s",
				seed, len(log), got, want, diff, strings.Join(log, "\n"), f.listing())
		}
		// A tree edit's own account of what it changed is what git's
		// diff of the two trees says.
		if e.treeEdits > edits && prev != "" && prev != got {
			if l := e.lastEdit; l.from == prev && l.to == got {
				mine, err := e.Diff(context.Background(), prev, got)
				if err != nil {
					t.Fatal(err)
				}
				e.noEditDiff = true
				gits, err := e.Diff(context.Background(), prev, got)
				e.noEditDiff = false
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(mine, gits) {
					t.Fatalf("seed %d: after %d ops the tree edit lists\n%+v\ngit's diff-tree\n%+v\nops:\n%s", seed, len(log), mine, gits, strings.Join(log, "\n"))
				}
				editDiffs++
			}
		}
		edits, prev = e.treeEdits, got
	}
	check()
	checks := 1
	for len(log) < ops {
		n := 1 + rng.IntN(3)
		for range n {
			log = append(log, f.step())
		}
		check()
		checks++
	}
	// Both capture paths must have been compared with the oracle: the tree
	// edit and the index path it declines to.
	if editDiffs == 0 {
		t.Fatalf("seed %d: no tree edit's changes were compared with git's diff", seed)
	}
	if e.treeEdits == 0 || e.treeEdits == checks {
		t.Fatalf("seed %d: %d of %d captures were tree edits; the test no longer exercises both paths", seed, e.treeEdits, checks)
	}
	t.Logf("seed %d: %d ops, %d captures, %d by tree edit", seed, len(log), checks, e.treeEdits)
}

// fuzzTree draws paths from a small pool of names so that operations
// collide: the same path is a file, then a directory, then a symlink.
type fuzzTree struct {
	t    *testing.T
	rng  *rand.Rand
	root string
}

var (
	fuzzDirs  = []string{"", "src", "src/lib", "src/lib/deep", "docs", "new", "new/sub", "ign", "node_modules/m", "src/build", "x.log"}
	fuzzNames = []string{"a.go", "b.go", "c", "d.txt", "e.log", "sub", "lib", `"c"`, "c\r", "sp ace"}
)

func (f *fuzzTree) path() string {
	d := fuzzDirs[f.rng.IntN(len(fuzzDirs))]
	n := fuzzNames[f.rng.IntN(len(fuzzNames))]
	if d == "" {
		return n
	}
	return d + "/" + n
}

// existing returns a random existing path under root (files, dirs and
// links alike), or "" when there is none.
func (f *fuzzTree) existing(wantDir bool) string {
	var all []string
	_ = filepath.WalkDir(f.root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(f.root, p)
		if rel == "." {
			return nil
		}
		if rel == ".git" {
			return filepath.SkipDir
		}
		if d.IsDir() == wantDir {
			all = append(all, rel)
		}
		return nil
	})
	if len(all) == 0 {
		return ""
	}
	return all[f.rng.IntN(len(all))]
}

func (f *fuzzTree) abs(rel string) string { return filepath.Join(f.root, rel) }

// clear makes room for a new entry at rel: whatever is there goes, and every
// parent becomes a real directory.
func (f *fuzzTree) clear(rel string) {
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		p := f.abs(strings.Join(parts[:i], "/"))
		if st, err := os.Lstat(p); err == nil && !st.IsDir() {
			f.must(os.Remove(p))
		}
	}
	f.must(os.MkdirAll(filepath.Dir(f.abs(rel)), 0o755))
	f.must(os.RemoveAll(f.abs(rel)))
}

func (f *fuzzTree) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *fuzzTree) content() string {
	n := f.rng.IntN(4)
	return strings.Repeat(string(rune('a'+f.rng.IntN(26))), n) + "\n"
}

// step applies one random operation and describes it.
func (f *fuzzTree) step() string {
	switch k := f.rng.IntN(14); k {
	case 0, 1, 2: // create or overwrite a file
		p := f.path()
		c := f.content()
		f.clear(p)
		f.must(os.WriteFile(f.abs(p), []byte(c), 0o644))
		return fmt.Sprintf("write %s %q", p, c)
	case 3, 4: // same size, same second: only the content tells
		p := f.existing(false)
		if p == "" || isLink(f.abs(p)) {
			return "noop"
		}
		b, err := os.ReadFile(f.abs(p))
		f.must(err)
		if len(b) == 0 {
			return "noop"
		}
		b[0] = byte('A' + f.rng.IntN(26))
		st, err := os.Stat(f.abs(p))
		f.must(err)
		// Stat data at one-second resolution cannot see a same-size edit
		// that puts the mtime back unless the mtime is racy (in the second
		// of the index write): git, and so every capture, relies on that.
		keep := f.rng.IntN(2) == 0 && st.ModTime().Unix() >= time.Now().Unix()
		fh, err := os.OpenFile(f.abs(p), os.O_WRONLY, 0)
		f.must(err)
		_, err = fh.WriteAt(b[:1], 0)
		f.must(err)
		f.must(fh.Close())
		if keep {
			f.must(os.Chtimes(f.abs(p), st.ModTime(), st.ModTime()))
		}
		return fmt.Sprintf("poke %s %q (mtime kept: %v)", p, b[:1], keep)
	case 5: // delete a file or link
		p := f.existing(false)
		if p == "" {
			return "noop"
		}
		f.must(os.Remove(f.abs(p)))
		return "rm " + p
	case 6: // delete a directory
		p := f.existing(true)
		if p == "" {
			return "noop"
		}
		f.must(os.RemoveAll(f.abs(p)))
		return "rm -r " + p
	case 7, 8: // rename a file or a directory
		src := f.existing(f.rng.IntN(2) == 0)
		if src == "" {
			return "noop"
		}
		dst := f.path()
		if dst == src || strings.HasPrefix(dst+"/", src+"/") || strings.HasPrefix(src+"/", dst+"/") {
			return "noop"
		}
		f.clear(dst)
		if _, err := os.Lstat(f.abs(src)); err != nil {
			return "noop" // clear removed it (it was a parent of dst)
		}
		f.must(os.Rename(f.abs(src), f.abs(dst)))
		return fmt.Sprintf("mv %s %s", src, dst)
	case 9: // flip exec bits: only the owner's makes a file executable
		p := f.existing(false)
		if p == "" || isLink(f.abs(p)) {
			return "noop"
		}
		st, err := os.Stat(f.abs(p))
		f.must(err)
		bits := []os.FileMode{0o111, 0o100, 0o011}[f.rng.IntN(3)]
		f.must(os.Chmod(f.abs(p), st.Mode().Perm()^bits))
		return fmt.Sprintf("chmod ^%o %s", bits, p)
	case 10: // a symlink, to a file, a directory or nothing
		p := f.path()
		tgt := []string{"a.go", "../src", "missing", "src/lib", "/etc"}[f.rng.IntN(5)]
		f.clear(p)
		f.must(os.Symlink(tgt, f.abs(p)))
		return fmt.Sprintf("ln -s %s %s", tgt, p)
	case 11: // a file becomes a directory
		p := f.existing(false)
		if p == "" {
			return "noop"
		}
		f.must(os.Remove(f.abs(p)))
		f.must(os.Mkdir(f.abs(p), 0o755))
		f.must(os.WriteFile(f.abs(p+"/"+fuzzNames[f.rng.IntN(len(fuzzNames))]), []byte(f.content()), 0o644))
		return "file->dir " + p
	case 12: // a directory becomes a file or a symlink
		p := f.existing(true)
		if p == "" {
			return "noop"
		}
		f.must(os.RemoveAll(f.abs(p)))
		if f.rng.IntN(2) == 0 {
			f.must(os.Symlink("src", f.abs(p)))
			return "dir->link " + p
		}
		f.must(os.WriteFile(f.abs(p), []byte(f.content()), 0o644))
		return "dir->file " + p
	default: // let a second pass now and then, so entries stop being racy
		if f.rng.IntN(8) == 0 {
			time.Sleep(1100 * time.Millisecond)
			return "sleep"
		}
		return "noop"
	}
}

func isLink(p string) bool {
	st, err := os.Lstat(p)
	return err == nil && st.Mode()&os.ModeSymlink != 0
}

func (f *fuzzTree) listing() string {
	m := manifest(f.t, f.root)
	var lines []string
	for k, v := range m {
		lines = append(lines, k+": "+v)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestTreeEditOddNames: names that line-based git input would misread (a
// C-quoted name, a trailing CR, a newline) next to the names they would be
// misread as, each edited after a capture.
func TestTreeEditOddNames(t *testing.T) {
	t.Parallel()
	for _, name := range []string{`"c"`, "c\r", "d/c\r", "c\nd", " c", "c "} {
		t.Run(fmt.Sprintf("%q", name), func(t *testing.T) {
			t.Parallel()
			wt := gittest.NewRepo(t)
			sh(t, wt, `mkdir d; printf 'plain\n' > c; printf 'plain\n' > d/c`)
			e := openEngine(t, wt)
			capture(t, e, "")
			gittest.WriteFile(t, wt, name, "odd\n")
			got := capture(t, e, "").Tree
			if want := oracle(t, wt); got != want {
				t.Fatalf("captured %s, a fresh engine %s", got, want)
			}
			gittest.WriteFile(t, wt, name, "odd, again\n")
			got = capture(t, e, "").Tree
			if want := oracle(t, wt); got != want {
				t.Fatalf("after a second edit: captured %s, a fresh engine %s", got, want)
			}
		})
	}
}

// TestTreeEditSHA256: the tree edit computes object ids itself, so it is
// checked in a repository using SHA-256 too.
func TestTreeEditSHA256(t *testing.T) {
	t.Parallel()
	wt := t.TempDir()
	sh(t, wt, `git init -q --object-format=sha256 .; mkdir -p a/b; printf 'x\n' > a/b/x; printf 'y\n' > y
git add -A; git commit -qm base`)
	e := openEngine(t, wt)
	capture(t, e, "")
	for i, edit := range []string{
		`printf 'x2\n' > a/b/x`,
		`mkdir a/b/c; printf 'new\n' > a/b/c/new; chmod +x y`,
		`rm a/b/x; ln -s y a/link`,
		`rm -r a/b/c`,
		// Enough new objects to be written as a pack.
		`for i in $(seq 30); do mkdir -p p/$i; printf '%s\n' $i > p/$i/f; done`,
	} {
		sh(t, wt, edit)
		got := capture(t, e, "").Tree
		if want := oracle(t, wt); got != want {
			t.Fatalf("edit %d (%s): captured %s, a fresh engine %s", i, edit, got, want)
		}
	}
	if e.treeEdits == 0 {
		t.Fatal("no capture was a tree edit")
	}
	if packs, _ := filepath.Glob(filepath.Join(wt, ".git", "objects", "pack", "*.pack")); len(packs) == 0 {
		t.Fatal("no tree edit wrote a pack")
	}
}
