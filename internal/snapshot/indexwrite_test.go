package snapshot

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// editedCheckout is a committed checkout with names that sort around '/',
// a symlink, an executable and a long path, then changed in more paths than
// a loose tree edit takes: the first capture edits the seed's tree into a
// pack, and its private index is written in Go.
func editedCheckout(t *testing.T) string {
	t.Helper()
	repo := gittest.NewRepo(t)
	for d := 0; d < 6; d++ {
		for f := 0; f < 8; f++ {
			gittest.WriteFile(t, repo, fmt.Sprintf("d%d/s/f%d.txt", d, f), fmt.Sprintf("file %d %d\n", d, f))
		}
	}
	deep := strings.TrimSuffix(strings.Repeat(strings.Repeat("x", 200)+"/", 5), "/")
	for _, p := range []string{"a-b", "a/b.txt", "a/b-c/d", "a0", "a.b/x", deep + "/leaf"} {
		gittest.WriteFile(t, repo, p, p+"\n")
	}
	sh(t, repo, `ln -s a0 link && chmod +x a0`)
	gittest.Commit(t, repo, "base")
	sh(t, repo, `
		for d in 0 1 2 3 4; do for f in 0 1 2 3 4 5; do echo edited >> d$d/s/f$f.txt; done; done
		rm d5/s/f1.txt a-b
		chmod +x d5/s/f2.txt
		rm link && ln -s a.b/x link
		mkdir -p fresh/deep && echo new > fresh/deep/x.txt && echo new > a/b-c/e
	`)
	gittest.WriteFile(t, repo, deep+"/leaf", "edited\n")
	// Files older than any index: none is racily clean (see
	// TestEditedIndexSmudgesRacilyCleanEntries).
	sh(t, repo, `find . -path ./.git -prune -o -exec touch -h -d '1 minute ago' {} + && { git update-index -q --refresh || true; }`)
	return repo
}

// TestEditedIndexIsTheOneGitWrites: after a first capture that edited the
// seed's tree into a pack, the private index is written in Go: every entry's
// stat data match its file as git reads them (diff-files lists nothing, and
// it does not refresh), its entries are the captured tree's, and its cache
// tree is byte for byte the one git records for that tree. git then reads
// and updates it like its own.
func TestEditedIndexIsTheOneGitWrites(t *testing.T) {
	t.Parallel()
	repo := editedCheckout(t)
	e := openEngine(t, repo)
	first := capture(t, e, "")
	e.Wait()
	if e.indexWrites != 1 || e.seedTrees != 1 {
		t.Fatalf("private indexes written in Go: %d, seeded tree edits: %d; want 1 and 1", e.indexWrites, e.seedTrees)
	}
	ctx := context.Background()
	if out, err := e.runPriv(ctx, nil, "diff-files", "--name-only", "-z"); err != nil || len(out) > 0 {
		t.Errorf("entries whose stat data do not match their files: %v %q", err, out)
	}
	if out, err := e.runPriv(ctx, nil, "diff-index", "--cached", "--name-status", first.Tree); err != nil || len(out) > 0 {
		t.Errorf("the private index differs from the captured tree: %v\n%s", err, out)
	}
	// git's own cache tree of the captured tree: read-tree records one.
	ref := filepath.Join(t.TempDir(), "ref-index")
	if _, err := e.priv.With("GIT_INDEX_FILE="+ref).Run(ctx, "read-tree", first.Tree); err != nil {
		t.Fatal(err)
	}
	want := indexExtension(t, ref, "TREE", "")
	got := indexExtension(t, e.privIndex, "TREE", e.privDir)
	if !bytes.Equal(got, want) {
		t.Errorf("cache tree differs from git's:\n got %q\nwant %q", got, want)
	}

	// git updates the index as its own, and the next capture trusts it.
	gittest.WriteFile(t, repo, "d0/s/f7.txt", "again\n")
	next := capture(t, e, "")
	e.Wait()
	if got := gittest.Git(t, repo, "diff-tree", "-r", "--name-only", first.Tree, next.Tree); strings.TrimSpace(got) != "d0/s/f7.txt" {
		t.Fatalf("second capture changed %q, want d0/s/f7.txt", got)
	}
	if out, err := e.runPriv(ctx, nil, "diff-files", "--name-only", "-z"); err != nil || len(out) > 0 {
		t.Errorf("after git's update, entries whose stat data do not match their files: %v %q", err, out)
	}
	shared, _ := filepath.Glob(filepath.Join(e.privDir, "sharedindex.*"))
	if len(shared) != 1 {
		t.Errorf("shared indexes left in the private git directory: %q", shared)
	}
}

// TestEditedIndexSmudgesRacilyCleanEntries: an entry whose file was modified
// no earlier than the index holding it was written is written with size 0,
// as git's own index write leaves it: its stat data cannot vouch for a
// change made within the same second, so the next status compares its
// content. Entries older than the index keep their stat data.
func TestEditedIndexSmudgesRacilyCleanEntries(t *testing.T) {
	t.Parallel()
	repo := editedCheckout(t)
	// The user's index records a file modified in the future: its entry
	// is racily clean with respect to every index written before then.
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(repo, "d5/s/f3.txt"), future, future); err != nil {
		t.Fatal(err)
	}
	sh(t, repo, `git update-index -q --refresh || true`) // other files are modified
	e := openEngine(t, repo)
	// A first capture that compares stat data itself lists a racy entry
	// as changed and reads it again; this is about the entries the
	// edited index carries over, as after a status.
	e.noSeedStat = true
	first := capture(t, e, "")
	e.Wait()
	if e.indexWrites != 1 {
		t.Fatalf("private indexes written in Go: %d, want 1", e.indexWrites)
	}
	out, err := e.runPriv(context.Background(), nil, "ls-files", "--debug", "--", "d5/s/f3.txt", "d5/s/f4.txt")
	if err != nil {
		t.Fatal(err)
	}
	sizes := debugSizes(string(out))
	if sizes["d5/s/f3.txt"] != "0" || sizes["d5/s/f4.txt"] != fmt.Sprint(len("file 5 4\n")) {
		t.Errorf("sizes recorded: %v; want the racy entry smudged to 0 and the other kept", sizes)
	}
	// Its content is compared, found unchanged: nothing to capture.
	gittest.WriteFile(t, repo, "d0/s/f7.txt", "again\n")
	next := capture(t, e, "")
	if got := gittest.Git(t, repo, "diff-tree", "-r", "--name-only", first.Tree, next.Tree); strings.TrimSpace(got) != "d0/s/f7.txt" {
		t.Fatalf("second capture changed %q, want d0/s/f7.txt", got)
	}
}

// TestEditedIndexLeftToGitWhenSplit: a packed tree edit over a private
// index git has split (its later updates write only their changes) is left
// to git's update-index, whose result is as exact.
func TestEditedIndexLeftToGitWhenSplit(t *testing.T) {
	t.Parallel()
	repo := editedCheckout(t)
	e := openEngine(t, repo)
	capture(t, e, "")
	e.Wait()
	gittest.WriteFile(t, repo, "d0/s/f7.txt", "again\n") // git splits the index
	capture(t, e, "")
	sh(t, repo, `for d in 0 1 2 3 4; do for f in 0 1 2 3 4 5; do echo twice >> d$d/s/f$f.txt; done; done`)
	third := capture(t, e, "")
	e.Wait()
	if e.indexWrites != 1 || e.treeEdits != 3 {
		t.Fatalf("private indexes written in Go: %d, tree edits %d; want 1 and 3", e.indexWrites, e.treeEdits)
	}
	ctx := context.Background()
	if out, err := e.runPriv(ctx, nil, "diff-files", "--name-only", "-z"); err != nil || len(out) > 0 {
		t.Errorf("entries whose stat data do not match their files: %v %q", err, out)
	}
	if out, err := e.runPriv(ctx, nil, "diff-index", "--cached", "--name-status", third.Tree); err != nil || len(out) > 0 {
		t.Errorf("the private index differs from the captured tree: %v\n%s", err, out)
	}
}

// indexExtension returns the data of the extension sig of the index at
// path; an index split by a link extension is looked up in gitDir.
func indexExtension(t *testing.T, path, sig, gitDir string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, off, err := parseIndexExt(path, data, 20)
	if err != nil && gitDir == "" {
		t.Fatal(err)
	}
	if err != nil {
		// A split index: zero entries of its own, then extensions.
		off = 12
		if n := binary.BigEndian.Uint32(data[8:12]); n != 0 {
			t.Fatalf("%s: a split index with %d entries of its own", path, n)
		}
	}
	for end := len(data) - 20; off+8 <= end; {
		size := int(binary.BigEndian.Uint32(data[off+4:]))
		if string(data[off:off+4]) == sig {
			return data[off+8 : off+8+size]
		}
		off += 8 + size
	}
	t.Fatalf("%s has no %s extension", path, sig)
	return nil
}

// debugSizes maps the paths of `ls-files --debug` output to their sizes.
func debugSizes(out string) map[string]string {
	sizes := map[string]string{}
	path := ""
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, " ") {
			path = line
			continue
		}
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "size:" {
			sizes[path] = f[1]
		}
	}
	return sizes
}

// TestPackedEditReadsNoSwappedPath: a path the capture found a regular file
// but that something running in the worktree replaced since with a symlink
// to a file outside it, or with a FIFO, is declined by the packed edit's
// read (the index path then looks again): the outside file is not read
// into the snapshot, and no read waits on the FIFO.
func TestPackedEditReadsNoSwappedPath(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t)
	gittest.WriteFile(t, repo, "a.txt", "a\n")
	gittest.Commit(t, repo, "base")
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("outside the worktree\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := openEngine(t, repo)
	sh(t, repo, "rm a.txt && ln -s "+secret+" a.txt && mkfifo fifo")
	for _, p := range []string{"a.txt", "fifo"} {
		done := make(chan error, 1)
		go func() {
			_, err := e.readChanged([]*fastChange{{path: p, mode: "100644"}}, sha1.New)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, errNotFast) {
				t.Errorf("%s: the packed edit read it (%v), want errNotFast", p, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the packed edit's read is waiting on it", p)
		}
	}
}
