package snapshot

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// TestFirstCaptureWithoutStatus is a differential test of the first
// capture that compares the walk's stat data with the seeded index
// (seedstat.go): on a random checkout state, worktree and user's index
// both, its tree must be the one a first capture that runs a status takes,
// and the one a fresh index given every file (`git add -A`) writes. The
// states favour what stat data hide: same-size edits with the mtime put
// back, edits in the second of the index write, exec bits, symlinks,
// file<->directory swaps, staged and intent-to-add entries, entries
// removed from the index, empty files, ignored directories and nested
// repositories.
func TestFirstCaptureWithoutStatus(t *testing.T) {
	t.Parallel()
	if !seedStatOS {
		t.Skip("the comparison runs on Linux only")
	}
	rounds := 24
	if testing.Short() {
		rounds = 8
	}
	compared, declined := 0, 0
	for i := 0; i < rounds; i++ {
		seed := uint64(i + 1)
		c, d := firstCaptureRound(t, seed)
		compared += c
		declined += d
	}
	// Both outcomes of a comparison were exercised: the tree edit from
	// the seed, and the index path when the seed held staged changes.
	t.Logf("%d rounds: %d compared, %d declined to the index path", rounds, compared, declined)
	if compared < rounds/2 {
		t.Errorf("only %d of %d first captures compared stat data instead of running a status", compared, rounds)
	}
	if declined == 0 {
		t.Errorf("no comparison met a seed with staged changes (the tree edit's decline was not exercised)")
	}
}

// firstCaptureRound builds one random state and compares the captures;
// compared counts the captures made without a status, declined those
// whose tree edit declined to the index path.
func firstCaptureRound(t *testing.T, seed uint64) (compared, declined int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed*0x9e3779b97f4a7c15))
	wt := gittest.NewRepo(t)
	sh(t, wt, `mkdir -p src/lib docs ign node_modules/m; printf 'a\n' > src/a.go; printf 'bb\n' > src/lib/b.go
printf 'readme\n' > docs/r.md; printf 'ign/\n*.log\nnode_modules/\n' > .gitignore; printf 'x\n' > top.txt
: > src/empty.py; printf '#!/bin/sh\n' > run.sh; chmod +x run.sh; ln -s src/a.go link
printf 'dep\n' > node_modules/m/index.js
find . -path ./.git -prune -o -exec touch -h -d '-1 hour' {} +
git add -A; git commit -qm base`)
	f := &fuzzTree{t: t, rng: rng, root: wt}
	var log []string
	n := 1 + rng.IntN(12)
	for range n {
		log = append(log, f.step())
	}
	// The user's index too.
	for range rng.IntN(4) {
		log = append(log, indexStep(t, rng, f))
	}
	if rng.IntN(2) == 0 {
		// A same-size edit of a file older than the index, its mtime put
		// back: only the inode's change time tells.
		p := []string{"top.txt", "docs/r.md", "src/lib/b.go", "README.md"}[rng.IntN(4)]
		if st, err := os.Lstat(f.abs(p)); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
			// Past the coarse clock's tick that stamped the inode's
			// change when the index recorded it (no one can see an
			// edit within it), and now and then past its second (a
			// git built without nanosecond stat data sees only that).
			time.Sleep(20 * time.Millisecond)
			if rng.IntN(3) == 0 {
				time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
			}
			b, err := os.ReadFile(f.abs(p))
			f.must(err)
			b[0] ^= 0x20
			f.must(os.WriteFile(f.abs(p), b, st.Mode().Perm()))
			f.must(os.Chtimes(f.abs(p), st.ModTime(), st.ModTime()))
			log = append(log, "same-size edit, mtime put back: "+p)
		}
	}
	if rng.IntN(3) == 0 {
		// Edits in the second the index is written: only the racy-git
		// rule sees a same-size one whose mtime is put back.
		gittest.Git(t, wt, "update-index", "-q", "--refresh")
		log = append(log, "refresh", f.step(), f.step())
	}
	nested := ""
	if rng.IntN(4) == 0 {
		// A new one, or one where tracked files were.
		nested = []string{"nest", "docs"}[rng.IntN(2)]
		sh(t, wt, `rm -rf `+nested+` && mkdir -p `+nested+` && cd `+nested+` && git init -q && echo n > r.md`)
		log = append(log, "nested repository "+nested)
	}
	what := func() string { return "ops:\n" + strings.Join(log, "\n") + "\nworktree:\n" + f.listing() }

	indexBefore, err := os.ReadFile(filepath.Join(wt, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	e, want, got := bothWays(t, wt, nil)
	// The reference git itself writes from every file.
	ref := freshIndexTree(t, wt, nested)
	// The comparison may see what a status cannot (a same-size edit in
	// the second the index recorded, which git compares to the second
	// when built without nanosecond stat data), never less.
	if got != want && got != ref {
		t.Fatalf("seed %d: the first capture without a status took %s, with a status %s (every file: %q):\n%s\n%s",
			seed, got, want, ref, gittest.Git(t, wt, "diff-tree", "-r", "--no-renames", got, want), what())
	}
	if want == ref && got != ref {
		t.Fatalf("seed %d: the first capture took %s, a fresh index of every file %s:\n%s\n%s",
			seed, got, ref, gittest.Git(t, wt, "diff-tree", "-r", "--no-renames", got, ref), what())
	}
	indexAfter, err := os.ReadFile(filepath.Join(wt, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	if string(indexAfter) != string(indexBefore) {
		t.Fatalf("seed %d: the user's index changed", seed)
	}
	e.Wait()
	// The private index caught up with what was captured: a status
	// against it finds nothing.
	if out, err := e.runPriv(context.Background(), nil, "diff-index", "--cached", "--name-only", "-z", got); err != nil || len(out) > 0 {
		t.Fatalf("seed %d: the private index after the capture differs from its tree: %q, %v\n%s", seed, out, err, what())
	}
	if e.statuslessCaptures > 0 {
		compared = 1
		if e.treeEdits == 0 {
			declined = 1
		}
	}
	return compared, declined
}

// freshIndexTree is the tree a fresh index given every file of wt (`git
// add -A`) writes, less what no capture holds: blocklisted paths and the
// nested repository nested ("" for none).
func freshIndexTree(t *testing.T, wt, nested string) string {
	t.Helper()
	ctx := context.Background()
	r := git.New(wt).With("GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index"))
	args := []string{"add", "-A"}
	if nested != "" {
		args = append(args, "--", ".", ":(exclude)"+nested)
	}
	if _, err := r.Run(ctx, args...); err != nil {
		t.Fatal(err)
	}
	listed, err := r.Run(ctx, "ls-files", "-z")
	if err != nil {
		t.Fatal(err)
	}
	var blocked strings.Builder
	for _, p := range git.SplitZ(listed) {
		if excludedPath(p) {
			blocked.WriteString(p + "\x00")
		}
	}
	if blocked.Len() > 0 {
		if _, err := r.RunInput(ctx, []byte(blocked.String()), "update-index", "--force-remove", "-z", "--stdin"); err != nil {
			t.Fatal(err)
		}
	}
	out, err := r.Run(ctx, "write-tree")
	if err != nil {
		t.Fatal(err)
	}
	return git.Trim(out)
}

// bothWays takes the first capture of wt twice, with fresh engines: with
// a status (want), and as the engine chooses, comparing stat data where it
// can (got, by e). set, when not nil, adjusts both engines first.
func bothWays(t *testing.T, wt string, set func(*Engine)) (e *Engine, want, got string) {
	t.Helper()
	withStatus := openEngine(t, wt)
	if set != nil {
		set(withStatus)
	}
	withStatus.noSeedStat = true
	want = capture(t, withStatus, "").Tree
	e = openEngine(t, wt)
	if set != nil {
		set(e)
	}
	return e, want, capture(t, e, "").Tree
}

// indexStep changes the user's index as the user's own git commands do.
func indexStep(t *testing.T, rng *rand.Rand, f *fuzzTree) string {
	t.Helper()
	wt := f.root
	p := f.existing(false)
	switch rng.IntN(5) {
	case 0: // stage whatever is there now, then maybe edit it again
		if p == "" {
			return "noop"
		}
		gittest.Git(t, wt, "update-index", "--add", "--remove", "--replace", "--", p)
		if rng.IntN(2) == 0 && !isLink(f.abs(p)) {
			if err := os.WriteFile(f.abs(p), []byte("after add "+p+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return "git add " + p + "; edit " + p
		}
		return "git add " + p
	case 1: // intent to add, an empty file or not
		q := "src/intent.txt"
		f.clear(q)
		if err := os.WriteFile(f.abs(q), []byte("intent\n")[:rng.IntN(2)*7], 0o644); err != nil {
			t.Fatal(err)
		}
		gittest.Git(t, wt, "add", "-N", "--", q)
		return "git add -N " + q
	case 2: // no longer tracked, still on disk
		gittest.Git(t, wt, "rm", "-q", "--cached", "--ignore-unmatch", "--", "top.txt")
		return "git rm --cached top.txt"
	case 3: // a file made empty and staged, then filled again
		q := "src/empty.py"
		if st, err := os.Lstat(f.abs(q)); err != nil || !st.Mode().IsRegular() {
			return "noop"
		}
		gittest.Git(t, wt, "update-index", "--add", "--", q)
		if err := os.WriteFile(filepath.Join(wt, "src", "empty.py"), []byte("filled\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return "git add src/empty.py; fill it"
	default: // a touch: stat data change, content does not
		if p == "" || isLink(f.abs(p)) {
			return "noop"
		}
		now := time.Now().Add(-time.Duration(rng.IntN(3)) * time.Second)
		if err := os.Chtimes(f.abs(p), now, now); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("touch %s", p)
	}
}

// TestSeedComparisonLeavesToStatus: what the comparison cannot vouch for
// is left to a status.
func TestSeedComparisonLeavesToStatus(t *testing.T) {
	t.Parallel()
	if !seedStatOS {
		t.Skip("the comparison runs on Linux only")
	}
	cases := []struct {
		name, script string
	}{
		{"assume-unchanged", `git update-index --assume-unchanged a.txt; echo changed > a.txt`},
		{"skip-worktree", `git update-index --skip-worktree a.txt; echo changed > a.txt`},
		{"split index", `git update-index --split-index; echo changed > a.txt`},
		{"unmerged", `git checkout -qb other; echo other > a.txt; git commit -qam other; git checkout -q -; echo main > a.txt; git commit -qam main; git merge -q other || true`},
		{"unreadable directory", `mkdir -p locked/in; echo x > locked/in/f; git add locked; git commit -qm locked; chmod 000 locked`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			wt := gittest.NewRepo(t)
			sh(t, wt, `echo a > a.txt; echo b > b.txt; git add -A; git commit -qm base`)
			sh(t, wt, c.script)
			t.Cleanup(func() { os.Chmod(filepath.Join(wt, "locked"), 0o755) })
			if c.name == "unreadable directory" && os.Geteuid() == 0 {
				t.Skip("root reads every directory")
			}
			e, want, got := bothWays(t, wt, nil)
			if e.statuslessCaptures != 0 {
				t.Errorf("the first capture compared stat data it cannot vouch for")
			}
			if got != want {
				t.Fatalf("first capture %s, with a status %s", got, want)
			}
		})
	}
}

// TestSeedComparisonCases: one state each that only one rule of the
// comparison sees, against the tree a fresh index of every file writes.
func TestSeedComparisonCases(t *testing.T) {
	t.Parallel()
	if !seedStatOS {
		t.Skip("the comparison runs on Linux only")
	}
	// aged: the files are an hour old, and the index recorded them a
	// second ago: nothing is racy, and an edit now changes the second
	// of the inode's change time.
	const aged = `find . -path ./.git -prune -o -exec touch -h -d '-1 hour' {} +; git add -A; git commit -qm base`
	cases := []struct {
		name, script string
		clean        bool // the worktree holds the seed exactly
	}{
		{"clean", `true`, true},
		{"clean worktree, staged change", `echo staged > a.txt; git add a.txt`, true},
		{"clean worktree, file staged and removed from the index", `git rm -q --cached b.txt`, false},
		{"empty intent-to-add", `: > new.txt; git add -N new.txt`, false},
		{"intent-to-add", `echo new > new.txt; git add -N new.txt`, false},
		{"staged change, another file edited", `echo staged > a.txt; git add a.txt; echo edited > b.txt`, false},
		{"same size, mtime put back", `printf 'A\n' > a.txt; touch -r b.txt a.txt`, false},
		{"exec bit", `chmod +x a.txt`, false},
		{"symlink retargeted, same length", `ln -sfn b.txt link`, false},
		{"replaced by a rename, same size and mtime", `printf 'B\n' > tmp; touch -r b.txt tmp; mv tmp b.txt`, false},
		{"file becomes a directory", `rm a.txt; mkdir a.txt; echo in > a.txt/in`, false},
		{"file becomes a symlink", `rm a.txt; ln -s b.txt a.txt`, false},
		{"ignored and untracked", `mkdir -p logs; echo l > logs/x.log; echo u > u.txt`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			wt := gittest.NewRepo(t)
			sh(t, wt, `printf 'a\n' > a.txt; printf 'b\n' > b.txt; ln -s a.txt link; printf '*.log\n' > .gitignore; `+aged)
			// Past the second of the index's write, so that an edit is
			// seen by its change time, as git sees it.
			time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
			sh(t, wt, c.script)
			e := openEngine(t, wt)
			got := capture(t, e, "").Tree
			if e.statuslessCaptures != 1 {
				t.Fatalf("the first capture ran a status")
			}
			if want := freshIndexTree(t, wt, ""); got != want {
				t.Fatalf("first capture %s, a fresh index of every file %s:\n%s", got, want, gittest.Git(t, wt, "diff-tree", "-r", got, want))
			}
			packs, _ := filepath.Glob(filepath.Join(wt, ".git", "objects", "pack", "*.pack"))
			if c.clean && len(packs) > 0 {
				t.Errorf("a capture of a clean worktree wrote %d packs", len(packs))
			}
		})
	}
}

// TestSameStat: each field git compares decides alone; the device does not.
func TestSameStat(t *testing.T) {
	f := walkedFile{mode: modeRegular | 0o644, ctime: 1700000000*1e9 + 5, mtime: 1690000000*1e9 + 7, ino: 1<<32 + 42, uid: 1000, gid: 100, size: 1<<32 + 9}
	sd := func(edit func(v []uint32)) []byte {
		v := []uint32{1700000000, 5, 1690000000, 7, 77 /* dev */, 42, 0o100644, 1000, 100, 9}
		if edit != nil {
			edit(v)
		}
		b := make([]byte, 40)
		for i, x := range v {
			binary.BigEndian.PutUint32(b[i*4:], x)
		}
		return b
	}
	if !sameStat(sd(nil), 0o100644, f) {
		t.Fatalf("equal stat data (but the device) differ")
	}
	for i, name := range []string{"ctime", "ctime ns", "mtime", "mtime ns", "", "inode", "", "uid", "gid", "size"} {
		if name == "" {
			continue
		}
		if sameStat(sd(func(v []uint32) { v[i]++ }), 0o100644, f) {
			t.Errorf("a different %s went unseen", name)
		}
	}
	if sameStat(sd(nil), 0o100755, f) {
		t.Errorf("an executable entry matched a file without the owner's x bit")
	}
	if x := f; !sameStat(sd(nil), 0o100644, walkedFile{mode: x.mode | 0o011, ctime: x.ctime, mtime: x.mtime, ino: x.ino, uid: x.uid, gid: x.gid, size: x.size}) {
		t.Errorf("group and other x bits made a difference git does not make")
	}
	if sameStat(sd(nil), 0o120000, f) {
		t.Errorf("a symlink entry matched a regular file")
	}
	link := f
	link.mode = modeSymlink | 0o777
	if sameStat(sd(nil), 0o100644, link) || !sameStat(sd(nil), 0o120000, link) {
		t.Errorf("a symlink's type was not compared")
	}
	if sameStat(sd(nil), 0o160000, f) {
		t.Errorf("a gitlink entry matched a file")
	}
}

// TestSeedComparisonLargeFiles: a file over Options.MaxFileSize whose
// stat data no longer vouch for it is left to a status, which hashes it:
// the capture leaves out a changed one only.
func TestSeedComparisonLargeFiles(t *testing.T) {
	t.Parallel()
	if !seedStatOS {
		t.Skip("the comparison runs on Linux only")
	}
	for _, c := range []struct {
		name, script string
		compared     bool
	}{
		{"untouched", `true`, true},
		{"touched", `touch big.bin`, false},
		{"rewritten, same bytes", `cp big.bin big.tmp; cat big.tmp > big.bin; rm big.tmp`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			wt := gittest.NewRepo(t)
			sh(t, wt, `head -c 5000 /dev/zero | tr '\0' x > big.bin; echo a > a.txt
find . -path ./.git -prune -o -exec touch -h -d '-1 hour' {} +; git add -A; git commit -qm base`)
			sh(t, wt, c.script)
			e, want, got := bothWays(t, wt, func(e *Engine) { e.maxFileSize = 1000 })
			if got != want {
				t.Fatalf("first capture %s, with a status %s:\n%s", got, want, gittest.Git(t, wt, "diff-tree", "-r", want, got))
			}
			if !strings.Contains(gittest.Git(t, wt, "ls-tree", "--name-only", got), "big.bin") {
				t.Fatalf("the unchanged big.bin was left out")
			}
			if (e.statuslessCaptures == 1) != c.compared {
				t.Fatalf("compared stat data: %v, want %v", e.statuslessCaptures == 1, c.compared)
			}
		})
	}
}

// TestSeedComparisonUnsearchableDirectory: a directory that can be read
// but not searched hides its files' stat data from the walk as from git;
// the capture fails as a status-driven one does, never leaving them out.
func TestSeedComparisonUnsearchableDirectory(t *testing.T) {
	t.Parallel()
	if !seedStatOS {
		t.Skip("the comparison runs on Linux only")
	}
	if os.Geteuid() == 0 {
		t.Skip("root searches every directory")
	}
	for _, script := range []string{
		`mkdir nd; echo 1 > nd/f; chmod 444 nd`,
		`echo 2 > td/u; chmod 444 td`,
	} {
		wt := gittest.NewRepo(t)
		sh(t, wt, `mkdir td; echo 1 > td/t; git add -A; git commit -qm base`)
		sh(t, wt, script)
		t.Cleanup(func() { sh(t, wt, `chmod 755 td; [ ! -d nd ] || chmod 755 nd`) })
		for _, noSeedStat := range []bool{true, false} {
			e := openEngine(t, wt)
			e.noSeedStat = noSeedStat
			if s, err := e.Capture(context.Background(), ""); err == nil {
				t.Errorf("%q (with a status: %v): captured %s, want the error a status gives", script, noSeedStat, s.Tree)
			}
			if e.statuslessCaptures != 0 {
				t.Errorf("%q: the capture compared stat data the walk could not read", script)
			}
		}
	}
}

// TestSeedComparisonAgainstStatus: ignore rules, names and index states a
// comparison could get wrong; each first capture must take the tree a
// first capture with a status takes (or, where git's own comparison to
// the second cannot see an edit, the tree of every file's bytes).
func TestSeedComparisonAgainstStatus(t *testing.T) {
	t.Parallel()
	if !seedStatOS {
		t.Skip("the comparison runs on Linux only")
	}
	const base = `mkdir -p src/lib docs; echo a > src/a.go; echo b > src/lib/b.go; echo r > docs/r.md; echo t > top.txt`
	cases := []struct{ name, setup, script, nested string }{
		{"a negated file under an ignored directory", `printf 'out/\n!out/keep.txt\n' > .gitignore`, `mkdir out; echo k > out/keep.txt; echo o > out/o`, ""},
		{"a negated file under an ignored directory's contents", `printf 'out/*\n!out/keep.txt\n' > .gitignore; mkdir out; echo k > out/keep.txt`, `mkdir -p out/sub; echo o > out/o; echo n > out/sub/n; echo k2 > out/keep.txt.bak`, ""},
		{"a negated subdirectory", `printf 'dir/*\n!dir/sub/\n' > .gitignore`, `mkdir -p dir/sub/deep; echo x > dir/x; echo s > dir/sub/s; echo d > dir/sub/deep/d`, ""},
		{"tracked files under an ignored directory", `mkdir out; echo t > out/t; git add -f out/t; printf 'out/\n!out/u\n' > .gitignore`, `echo u > out/u; echo v > out/v; mkdir -p out/sub; echo w > out/sub/w; echo t2 > out/t`, ""},
		{"a tracked directory ignored", `printf 'src/\n' > .gitignore`, `echo n > src/new.go; mkdir -p src/newdir; echo m > src/newdir/m; echo a2 > src/a.go`, ""},
		{"an allow-list", `printf '*\n!*/\n!*.go\n!.gitignore\n' > .gitignore`, `echo n > src/new.go; echo t > src/new.txt; mkdir -p fresh/deep; echo g > fresh/deep/x.go; echo h > fresh/deep/x.md`, ""},
		{"core.excludesFile and info/exclude", `printf '*.tmp\nsecret/\n' > ../excludes-$$; git config core.excludesFile "$(cd .. && pwd)/excludes-$$"; printf 'priv/\n*.bak\n' > .git/info/exclude`, `echo 1 > a.tmp; mkdir -p secret priv nd; echo 2 > secret/s; echo 3 > nd/x.tmp; echo 4 > nd/y; echo 5 > priv/p; echo 6 > src/x.bak`, ""},
		{"an untracked directory with its own rules", ``, `mkdir -p nd/a/b; printf '*\n!.gitignore\n!keep\n' > nd/.gitignore; echo 1 > nd/keep; echo 2 > nd/other; echo 3 > nd/a/b/keep`, ""},
		{"names that sort apart from their paths", `echo 1 > a-b; echo 2 > a.b; mkdir a; echo 3 > a/b; echo 4 > a0; printf 5 > "$(printf 'z\377')"`, `echo 1 > a-c; echo 2 > a.c; echo 3 > a/c; echo 4 > a1; printf y > "$(printf 'z\376')"; mkdir -p "$(printf 'a\377')"; echo q > "$(printf 'a\377')/q"; echo 1x > a-b`, ""},
		{"names pathspecs would read", `echo 1 > ':x'; echo 2 > ./-x`, `echo 1 > ':(top)y'; echo 2 > ./-y; echo 3 > '*'; echo 4 > 'x?'; echo 5 > '[ab]'; echo 6 > 'back\slash'; echo 7 > ' sp'; mkdir -p '[d]' ':(glob)d'; echo 8 > '[d]/f'; echo 9 > ':(glob)d/*'; echo 10 > ':x'`, ""},
		{"the executable bit set in the index only", ``, `git update-index --chmod=+x top.txt; chmod +x src/a.go`, ""},
		{"a directory become a symlink, another a file", ``, `rm -rf src docs; ln -s top.txt src; echo f > docs`, ""},
		{"a nested repository in an untracked directory", ``, `mkdir -p nd/n; echo 1 > nd/x; (cd nd/n && git init -q && echo 2 > f)`, "nd/n"},
		{"index version 4", `git update-index --index-version 4`, `echo n > src/new.go; echo a2 > src/a.go; printf 'R\n' > docs/r.md; touch -r top.txt docs/r.md`, ""},
		{"intent to add in a new directory", ``, `mkdir nd; echo 1 > nd/f; echo 2 > nd/g; git add -N nd/f`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			wt := gittest.NewRepo(t)
			sh(t, wt, base+"\n"+c.setup+"\nfind . -path ./.git -prune -o -exec touch -h -d '-1 hour' {} +; git add -A; git commit -qm base")
			time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
			sh(t, wt, c.script)
			e, want, got := bothWays(t, wt, nil)
			if e.statuslessCaptures != 1 {
				t.Errorf("the first capture ran a status")
			}
			if got != want && got != freshIndexTree(t, wt, c.nested) {
				t.Fatalf("first capture %s, with a status %s:\n%s", got, want, gittest.Git(t, wt, "diff-tree", "-r", "--no-renames", want, got))
			}
		})
	}
}

// The untracked files of a first capture without a status are listed
// against an empty index (their pathspecs name nothing tracked), by every
// ignore rule git weighs: nested .gitignore files in untracked and tracked
// directories, a negation, a directory pattern, info/exclude and
// core.excludesFile.
func TestUntrackedAgainstAnEmptyIndex(t *testing.T) {
	t.Parallel()
	if !seedStatOS {
		t.Skip("the comparison runs on Linux only")
	}
	wt := gittest.NewRepo(t)
	excl := filepath.Join(t.TempDir(), "excludes")
	if err := os.WriteFile(excl, []byte("*.tmp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, wt, "config", "core.excludesFile", excl)
	sh(t, wt, `mkdir -p src/gen docs
printf '*.log\n!keep.log\nbuild/\n' > .gitignore; printf 'x\n' > src/a.go; printf '*.out\n' > src/.gitignore
git add -A; git commit -qm base
printf 'secret\n' >> .git/info/exclude
mkdir -p new/deep build/x src/gen/build
printf 'n\n' > new/n.txt; printf '*.md\n' > new/.gitignore; printf 'r\n' > new/r.md; printf 'd\n' > new/deep/d.md
printf 'k\n' > keep.log; printf 'l\n' > other.log; printf 't\n' > x.tmp; printf 's\n' > secret
printf 'o\n' > src/a.out; printf 'b\n' > build/x/b.txt; printf 'g\n' > src/gen/build/g.txt; printf 'u\n' > src/u.go; printf 'd\n' > docs/d.txt`)
	e := openEngine(t, wt)
	got := capture(t, e, "").Tree
	if e.statuslessCaptures != 1 || e.emptyIndexRuns != 1 {
		t.Fatalf("%d captures without a status, %d against an empty index: want 1, 1", e.statuslessCaptures, e.emptyIndexRuns)
	}
	if want := addAllTree(t, wt); got != want {
		t.Fatalf("capture %s, git add -A %s:\n%s", got, want, gittest.Git(t, wt, "diff-tree", "-r", got, want))
	}
}
