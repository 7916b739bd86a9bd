package snapshot

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// TestSeedSettledSkipsTheSettlePass: a private index seeded from a settled
// real index (a recycled worktree) gets no settle marker, so no capture
// pays a refresh of every file; an edit made after the seed is still
// captured, and without the hint the marker is written as before.
func TestSeedSettledSkipsTheSettlePass(t *testing.T) {
	t.Parallel()
	for _, settled := range []bool{true, false} {
		repo := gittest.NewRepo(t)
		gittest.WriteFile(t, repo, "a.txt", "a\n")
		gittest.Commit(t, repo, "base")
		state := filepath.Join(t.TempDir(), "state")
		e, err := Open(context.Background(), Options{Worktree: repo, SessionID: "s_test", StateDir: state, SeedSettled: settled})
		if err != nil {
			t.Fatal(err)
		}
		first := capture(t, e, "")
		_, err = os.Stat(filepath.Join(state, "index.settle"))
		if marker := err == nil; marker == settled {
			t.Fatalf("SeedSettled=%v: settle marker present = %v", settled, marker)
		}
		gittest.WriteFile(t, repo, "a.txt", "b\n")
		if next := capture(t, e, ""); next.Tree == first.Tree {
			t.Fatalf("SeedSettled=%v: an edit after the seed was not captured", settled)
		}
		e.Wait()
	}
}

// TestFirstCaptureOfADirtyCheckout: the first capture of a checkout with
// many changes (edited, created, deleted, made executable, a symlink, a
// racily clean same-size edit) edits the HEAD commit's tree and writes its
// objects as one pack; its tree equals what a fresh index with every file
// hashed gives, the racy edit included, and the background index update
// settles the seed.
func TestFirstCaptureOfADirtyCheckout(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t)
	for d := 0; d < 6; d++ {
		for f := 0; f < 8; f++ {
			gittest.WriteFile(t, repo, fmt.Sprintf("d%d/f%d.txt", d, f), fmt.Sprintf("file %d %d\n", d, f))
		}
	}
	gittest.WriteFile(t, repo, "racy.txt", "aaaa\n")
	gittest.Commit(t, repo, "base")
	// A same-size edit in the second of the index write, its mtime put
	// back: only the racy-git rule can see it.
	racy := filepath.Join(repo, "racy.txt")
	index := filepath.Join(repo, ".git", "index")
	for try := 0; ; try++ {
		if try == 10 {
			t.Skip("could not make a racily clean entry (every try crossed a second)")
		}
		if err := os.WriteFile(racy, []byte("aaaa\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		gittest.Git(t, repo, "add", "racy.txt")
		before, err := os.Stat(racy)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(racy, []byte("bbbb\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(racy, before.ModTime(), before.ModTime()); err != nil {
			t.Fatal(err)
		}
		ist, err := os.Stat(index)
		if err != nil {
			t.Fatal(err)
		}
		if ist.ModTime().Unix() == before.ModTime().Unix() {
			break
		}
	}
	sh(t, repo, `
		for d in 0 1 2 3 4; do for f in 0 1 2 3 4; do echo edited >> d$d/f$f.txt; done; done
		for i in 1 2 3 4 5 6 7 8; do echo new $i > d5/new$i.txt; done
		mkdir -p fresh/dir && echo deep > fresh/dir/x.txt
		rm d0/f7.txt d1/f7.txt d2/f7.txt
		chmod +x d3/f7.txt
		ln -s d4/f7.txt link
	`)
	// Seeded a second later: a copy of the index that took the time of
	// the copy would hide the racy edit.
	for rst, _ := os.Stat(racy); time.Now().Unix() <= rst.ModTime().Unix(); {
		time.Sleep(50 * time.Millisecond)
	}
	e := openEngine(t, repo)
	first := capture(t, e, "")
	e.Wait()
	// The reference: every file hashed into a fresh index.
	ref := filepath.Join(t.TempDir(), "index")
	r := git.New(repo).With("GIT_INDEX_FILE=" + ref)
	if _, err := r.Run(context.Background(), "add", "-A"); err != nil {
		t.Fatal(err)
	}
	out, err := r.Run(context.Background(), "write-tree")
	if err != nil {
		t.Fatal(err)
	}
	if want := git.Trim(out); first.Tree != want {
		t.Fatalf("first capture %s, a fresh index gives %s:\n%s", first.Tree, want, gittest.Git(t, repo, "diff-tree", "-r", first.Tree, want))
	}
	if e.treeEdits != 1 {
		t.Errorf("the first capture took the index path (tree edits: %d)", e.treeEdits)
	}
	if e.seedTrees != 1 {
		t.Errorf("the first capture read the HEAD commit's trees instead of computing them from the seed")
	}
	packs, _ := filepath.Glob(filepath.Join(repo, ".git", "objects", "pack", "*.pack"))
	if len(packs) != 1 {
		t.Errorf("packs written: %v, want one", packs)
	}
	for _, p := range packs {
		// Git reads the pack and its index written in Go as its own.
		gittest.Git(t, repo, "verify-pack", p)
		if st, err := os.Stat(p); err != nil || st.Mode().Perm()&0o044 == 0 {
			t.Errorf("pack %s: %v, %v: git's own packs are readable by whoever reaches the repository", p, st.Mode(), err)
		}
	}
	gittest.Git(t, repo, "fsck", "--no-dangling", "--no-progress")
	if _, err := os.Stat(filepath.Join(e.stateDir, "index.settle")); err == nil {
		t.Errorf("the background index update left the seed unsettled")
	}
	// The index's cache tree was rebuilt: the next status compares the
	// index with the captured tree without reading its trees.
	if got := cacheTreeRoot(t, e.privIndex); got != first.Tree {
		t.Errorf("the private index's cache tree names %q at its root, want the captured %s", got, first.Tree)
	}
	// The index caught up: one more edit is captured, the rest kept.
	gittest.WriteFile(t, repo, "d5/f0.txt", "again\n")
	next := capture(t, e, "")
	if got := gittest.Git(t, repo, "diff-tree", "-r", "--name-only", first.Tree, next.Tree); strings.TrimSpace(got) != "d5/f0.txt" {
		t.Fatalf("second capture changed %q, want d5/f0.txt", got)
	}
}

// cacheTreeRoot is the root tree id the index file's cache-tree extension
// ("TREE") records, "" when it has none or the root is invalid.
func cacheTreeRoot(t *testing.T, index string) string {
	t.Helper()
	b, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	// The extension: "TREE", a 4-byte size, then "<path>\0<count> <subtrees>\n<oid>"
	// with the root's path empty; a count of -1 is an invalid entry.
	i := bytes.Index(b, []byte("TREE"))
	if i < 0 || len(b) < i+9 || b[i+8] != 0 {
		return ""
	}
	rest := b[i+9:]
	nl := bytes.IndexByte(rest, '\n')
	if nl < 0 || bytes.HasPrefix(rest, []byte("-1 ")) || len(rest) < nl+1+20 {
		return ""
	}
	return hex.EncodeToString(rest[nl+1 : nl+1+20])
}
