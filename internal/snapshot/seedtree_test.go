package snapshot

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// TestSeededFirstCaptureEqualsAFullCapture: the first capture of a checkout,
// seeded from the user's index (its stat data trusted, its trees computed
// from its entries), equals a capture that hashes every file anew: a fresh
// index read from HEAD, then `add -A`. The checkout holds every kind of
// entry a user's index can carry (edited, deleted, made executable, a new
// and a retargeted symlink, untracked, ignored, tracked-but-ignored, a file
// replaced by a directory, intent-to-add, staged and then edited again,
// removed from the index only; the last four only in the staged cases,
// which the tree edit declines), with the index written whole, split, and
// as version 4. The user's index, HEAD and refs stay byte-identical.
func TestSeededFirstCaptureEqualsAFullCapture(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		staged bool   // the index differs from HEAD (staged changes)
		ita    bool   // an intent-to-add entry (the seed's tree leaves it out)
		index  string // git update-index flags that rewrite the user's index
	}{
		{name: "worktree changes", index: ""},
		{name: "worktree changes, split index", index: "--split-index"},
		{name: "worktree changes, index v4", index: "--index-version 4"},
		{name: "intent-to-add", ita: true},
		{name: "intent-to-add, split index", ita: true, index: "--split-index"},
		{name: "staged and intent-to-add", staged: true},
		{name: "staged, split index", staged: true, index: "--split-index"},
		{name: "staged, index v4", staged: true, index: "--index-version 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := gittest.NewRepo(t)
			for d := 0; d < 5; d++ {
				for f := 0; f < 6; f++ {
					gittest.WriteFile(t, repo, fmt.Sprintf("d%d/s/f%d.txt", d, f), fmt.Sprintf("file %d %d\n", d, f))
				}
				gittest.WriteFile(t, repo, fmt.Sprintf("d%d/top.txt", d), "top\n")
			}
			gittest.WriteFile(t, repo, "a-b.txt", "sorts before a/\n")
			gittest.WriteFile(t, repo, "a/x.txt", "x\n")
			gittest.WriteFile(t, repo, "a0.txt", "sorts after a/\n")
			gittest.WriteFile(t, repo, ".gitignore", "*.log\nbuild/\n")
			gittest.WriteFile(t, repo, "kept.log", "tracked, though ignored\n")
			gittest.WriteFile(t, repo, "becomes-dir", "a file first\n")
			sh(t, repo, `ln -s d0/top.txt link-old; ln -s d1/top.txt link-moved`)
			gittest.Commit(t, repo, "base")
			sh(t, repo, `
				for d in 0 1 2; do echo edited >> d$d/s/f0.txt; done
				rm d3/s/f1.txt d4/top.txt
				chmod +x d2/s/f2.txt
				ln -s a/x.txt link-new
				rm link-moved && ln -s d2/top.txt link-moved
				echo new > d4/s/new.txt
				mkdir -p fresh/deep && echo deep > fresh/deep/x.txt
				echo ignored > noise.log
				mkdir -p build && echo out > build/out.bin
				echo more >> kept.log
			`)
			if tc.staged {
				// A file replaced by a directory: the tree edit declines
				// it, the index path captures it.
				sh(t, repo, `
					rm becomes-dir && mkdir becomes-dir && echo inside > becomes-dir/f.txt
					echo staged > d0/s/f3.txt && git add d0/s/f3.txt
					echo staged > d1/s/f3.txt && git add d1/s/f3.txt && echo after >> d1/s/f3.txt
					echo ita > d2/s/ita.txt && git add -N d2/s/ita.txt
					echo staged-new > d3/s/staged-new.txt && git add d3/s/staged-new.txt
					git rm -q --cached d4/s/f4.txt
					git rm -q d4/s/f5.txt
				`)
			}
			if tc.ita {
				sh(t, repo, `echo ita > d2/s/ita.txt && git add -N d2/s/ita.txt`)
			}
			if tc.index != "" {
				gittest.Git(t, repo, append([]string{"update-index"}, strings.Fields(tc.index)...)...)
			}
			before := gitState(t, filepath.Join(repo, ".git"))
			e := openEngine(t, repo)
			first := capture(t, e, "")
			e.Wait()
			sameState(t, before, gitState(t, filepath.Join(repo, ".git")))

			ref := filepath.Join(t.TempDir(), "index")
			r := git.New(repo).With("GIT_INDEX_FILE=" + ref)
			for _, args := range [][]string{{"read-tree", "HEAD"}, {"add", "-A"}} {
				if _, err := r.Run(context.Background(), args...); err != nil {
					t.Fatal(err)
				}
			}
			out, err := r.Run(context.Background(), "write-tree")
			if err != nil {
				t.Fatal(err)
			}
			if want := git.Trim(out); first.Tree != want {
				t.Fatalf("first capture %s, a full capture gives %s:\n%s", first.Tree, want, gittest.Git(t, repo, "diff-tree", "-r", first.Tree, want))
			}
			if !tc.staged && (e.treeEdits != 1 || e.seedTrees != 1) {
				t.Errorf("the first capture did not edit the seed's tree (tree edits %d, trees from the seed %d)", e.treeEdits, e.seedTrees)
			}
			gittest.Git(t, repo, "fsck", "--no-dangling", "--no-progress")
			// The background update brought the private index to the
			// captured tree, deletions included.
			if out, err := e.runPriv(context.Background(), nil, "diff-index", "--cached", "--name-status", first.Tree); err != nil || len(out) > 0 {
				t.Errorf("the private index differs from the captured tree: %v\n%s", err, out)
			}
			// The private index caught up with what was captured.
			gittest.WriteFile(t, repo, "d0/s/f5.txt", "again\n")
			next := capture(t, e, "")
			if got := gittest.Git(t, repo, "diff-tree", "-r", "--name-only", first.Tree, next.Tree); strings.TrimSpace(got) != "d0/s/f5.txt" {
				t.Fatalf("second capture changed %q, want d0/s/f5.txt", got)
			}
		})
	}
}

// TestSeedTreesMatchWriteTree: the trees computed from an index's entries
// are the ones git's write-tree writes for that index, names that sort
// around '/' and intent-to-add entries included; an unmerged entry is
// refused.
func TestSeedTreesMatchWriteTree(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t)
	for _, p := range []string{"a-b", "a/b.txt", "a/b-c/d", "a/b/c", "a0", "a.b/x", "z", "y/y/y/y"} {
		gittest.WriteFile(t, repo, p, p+"\n")
	}
	sh(t, repo, `ln -s z l && chmod +x a0 && git add -A && echo n > new && git add -N new`)
	want := strings.TrimSpace(gittest.Git(t, repo, "write-tree"))
	entries, err := readIndexFile(filepath.Join(repo, ".git", "index"), sha1.Size)
	if err != nil {
		t.Fatal(err)
	}
	root, trees, err := seedTrees(entries, sha1.New, map[string]bool{"": true, "a": true, "a/b": true, "missing": true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(root); got != want {
		t.Fatalf("seedTrees root %s, write-tree %s", got, want)
	}
	if _, ok := trees["missing"]; ok {
		t.Errorf("a directory the index does not hold has a tree")
	}
	if _, ok := trees[""]["new"]; ok {
		t.Errorf("the intent-to-add entry is in the tree")
	}
	sub := strings.Fields(gittest.Git(t, repo, "rev-parse", want+":a/b"))[0]
	if got := hex.EncodeToString(trees["a"]["b"].oid); got != sub || trees["a"]["b"].mode != "40000" {
		t.Errorf("a/b is %s %s, want 40000 %s", trees["a"]["b"].mode, got, sub)
	}
	entries[0].stage = 2
	if _, _, err := seedTrees(entries, sha1.New, nil, nil); err == nil {
		t.Errorf("an unmerged entry was put in a tree")
	}
}

// TestSeedTreesTakeTheCacheTree: an index's cache tree (the TREE
// extension) is read as git wrote it, each valid entry the tree id and
// entry count of its directory; the trees computed with it are the ones
// computed without it, whichever directories git left invalid; and a
// directory that needs no entries of its own takes its id from it.
func TestSeedTreesTakeTheCacheTree(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t)
	for _, p := range []string{"a-b", "a/b.txt", "a/b-c/d", "a/b/c", "a/b/e/f", "a0", "a.b/x", "z", "y/y/y/y", "y/z"} {
		gittest.WriteFile(t, repo, p, p+"\n")
	}
	gittest.Commit(t, repo, "base")
	index := filepath.Join(repo, ".git", "index")
	read := func() ([]indexEntry, map[string]cachedTree) {
		t.Helper()
		snap, err := readIndexSnap(index, sha1.Size)
		if err != nil || snap.err != nil {
			t.Fatal(err, snap.err)
		}
		return snap.entries, parseCacheTree(snap.data, snap.ext, sha1.Size)
	}
	entries, cached := read()
	head := strings.TrimSpace(gittest.Git(t, repo, "rev-parse", "HEAD^{tree}"))
	for _, dir := range []string{"", "a", "a/b", "a/b/e", "a/b-c", "a.b", "y", "y/y", "y/y/y"} {
		c, ok := cached[dir]
		if !ok {
			t.Fatalf("the cache tree has no valid entry for %q: %v", dir, cached)
		}
		want := head
		if dir != "" {
			want = strings.TrimSpace(gittest.Git(t, repo, "rev-parse", "HEAD:"+dir))
		}
		n := 0
		for _, x := range entries {
			if dir == "" || strings.HasPrefix(x.path, dir+"/") {
				n++
			}
		}
		if got := hex.EncodeToString([]byte(c.oid)); got != want || c.count != n {
			t.Errorf("cache tree %q: %s with %d entries, want %s with %d", dir, got, c.count, want, n)
		}
	}
	same := func(dirs map[string]bool, cached map[string]cachedTree) {
		t.Helper()
		root0, trees0, err0 := seedTrees(entries, sha1.New, dirs, nil)
		root1, trees1, err1 := seedTrees(entries, sha1.New, dirs, cached)
		if err0 != nil || err1 != nil {
			t.Fatal(err0, err1)
		}
		if !bytes.Equal(root0, root1) || fmt.Sprint(trees0) != fmt.Sprint(trees1) {
			t.Fatalf("with the cache tree: %x %v\nwithout: %x %v", root1, trees1, root0, trees0)
		}
	}
	same(map[string]bool{"": true, "a": true, "a/b": true}, cached)
	same(map[string]bool{"": true, "y": true, "y/y": true, "y/y/y": true}, cached)

	// A directory that needs no entries of its own takes the cache's id:
	// one that lies shows in the root.
	lying := map[string]cachedTree{}
	for d, c := range cached {
		lying[d] = c
	}
	c := lying["a.b"]
	c.oid = strings.Repeat("\x01", sha1.Size)
	lying["a.b"] = c
	root, _, err := seedTrees(entries, sha1.New, map[string]bool{"": true, "a": true}, lying)
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(root) == head {
		t.Errorf("the cache tree's id of a.b was not taken")
	}
	// ...unless its count is not the entries': then it is computed.
	c.count++
	lying["a.b"] = c
	if root, _, _ := seedTrees(entries, sha1.New, map[string]bool{"": true, "a": true}, lying); hex.EncodeToString(root) != head {
		t.Errorf("a cache entry with another count was taken")
	}

	// Staging and intent-to-add leave their directories invalid; what
	// is computed with what remains valid is still git's tree.
	gittest.WriteFile(t, repo, "a/b/e/f", "changed\n")
	gittest.WriteFile(t, repo, "y/new", "n\n")
	gittest.Git(t, repo, "add", "a/b/e/f")
	gittest.Git(t, repo, "add", "-N", "y/new")
	entries, cached = read()
	for _, dir := range []string{"", "a", "a/b", "a/b/e", "y"} {
		if _, ok := cached[dir]; ok {
			t.Errorf("the cache tree of %q is still valid after staging", dir)
		}
	}
	if _, ok := cached["a.b"]; !ok {
		t.Errorf("the cache tree of a.b was dropped")
	}
	same(map[string]bool{"": true, "a": true}, cached)
	want := strings.TrimSpace(gittest.Git(t, repo, "write-tree"))
	if root, _, _ := seedTrees(entries, sha1.New, map[string]bool{"": true}, cached); hex.EncodeToString(root) != want {
		t.Errorf("root %x, write-tree %s", root, want)
	}
}

// TestReadCacheTreeRefusesDamage: a cut or damaged TREE extension is read
// as none, never in part.
func TestReadCacheTreeRefusesDamage(t *testing.T) {
	t.Parallel()
	oid := strings.Repeat("\x02", sha1.Size)
	good := "\x002 1\n" + oid + "a\x001 0\n" + oid
	if m := readCacheTree([]byte(good), sha1.Size); len(m) != 2 || m["a"].count != 1 || m[""].count != 2 {
		t.Fatalf("a whole extension read as %v", m)
	}
	for i := 0; i < len(good); i++ {
		if m := readCacheTree([]byte(good[:i]), sha1.Size); m != nil {
			t.Errorf("cut at %d, read as %v", i, m)
		}
	}
	for _, bad := range []string{
		"\x002 1\n" + oid + "a\x001 0\n" + oid + "x", // trailing bytes
		"r\x002 0\n" + oid,                           // a root with a name
		"\x002 1\n" + oid + "\x001 0\n" + oid,        // a child without one
		"\x002 1\n" + oid + "a/b\x001 0\n" + oid,     // a slash in a name
		"\x002 1\n" + oid + "..\x001 0\n" + oid,      // a dot-dot name
		"\x00-2 0\n",                                 // a count below -1
		"\x002 99999999999\n" + oid,                  // more subtrees than bytes
		"\x00x 0\n" + oid,                            // not a number
	} {
		if m := readCacheTree([]byte(bad), sha1.Size); m != nil {
			t.Errorf("%q read as %v", bad, m)
		}
	}
	if m := readCacheTree([]byte("\x00-1 1\na\x001 0\n"+oid), sha1.Size); len(m) != 1 || m["a"].count != 1 {
		t.Errorf("an invalid root with a valid child read as %v", m)
	}
}
