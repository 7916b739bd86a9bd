package snapshot

import (
	"crypto/sha1"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// A small tree edit writes its blobs and trees as loose objects itself:
// no hash-object or mktree runs, the tree is the one git writes for the
// same files, every object is stored as git stores it (fsck finds
// nothing, each file read-only, no temporary left), and an object already
// stored is not written again. A shared repository's objects are left to
// git, which gives them the group's permissions.
func TestLooseEditStoresWhatGitWould(t *testing.T) {
	t.Parallel()
	for _, shared := range []bool{false, true} {
		repo := gittest.NewRepo(t)
		before, err := filepath.Glob(filepath.Join(repo, ".git", "objects", "??"))
		if err != nil {
			t.Fatal(err)
		}
		if shared {
			gittest.Git(t, repo, "config", "core.sharedRepository", "group")
		}
		for _, p := range []string{"a.txt", "d/b.txt", "d/e/c.txt", "gone.txt"} {
			gittest.WriteFile(t, repo, p, p+"\n")
		}
		gittest.Commit(t, repo, "base")
		e := openEngine(t, repo)
		capture(t, e, "cp1")
		// The private index catches up in the background; were the
		// edits below to come first, it would take them in and the next
		// capture would write the index's tree, not edit cp1's.
		e.Wait()
		var ran []string
		e.onPriv = func(args []string) { ran = append(ran, strings.Join(args, " ")) }
		sh(t, repo, `
			echo more >> d/e/c.txt
			mkdir -p new/deep && printf 'new\r\n' > new/deep/n.txt
			ln -s d/b.txt link
			chmod +x a.txt
			rm gone.txt
			cp d/b.txt same-as-b.txt
		`)
		edits := e.treeEdits
		s := capture(t, e, "cp2")
		if e.treeEdits != edits+1 {
			t.Fatalf("shared=%v: the capture was no tree edit", shared)
		}
		gitWrote := slices.ContainsFunc(ran, func(a string) bool {
			return strings.HasPrefix(a, "hash-object") || strings.HasPrefix(a, "mktree")
		})
		if gitWrote != shared {
			t.Fatalf("shared=%v: git commands %q", shared, ran)
		}
		// The tree git writes for the same files.
		want := gitWorktreeTree(t, repo)
		if s.Tree != want {
			t.Fatalf("shared=%v: captured %s, git writes %s", shared, s.Tree, want)
		}
		if out := gittest.Git(t, repo, "fsck", "--full", "--strict", "--no-dangling"); strings.TrimSpace(out) != "" {
			t.Fatalf("shared=%v: fsck: %s", shared, out)
		}
		objects := filepath.Join(repo, ".git", "objects")
		err = filepath.WalkDir(objects, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if strings.HasPrefix(d.Name(), "tmp_obj") {
				t.Errorf("a temporary was left: %s", p)
			}
			if info, err := d.Info(); err == nil && len(filepath.Base(filepath.Dir(p))) == 2 && info.Mode().Perm()&0o222 != 0 {
				t.Errorf("%s is writable (%v)", p, info.Mode())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if shared {
			// git gave every object directory, the capture's too, to
			// the group.
			dirs, err := filepath.Glob(filepath.Join(objects, "??"))
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range dirs {
				if slices.Contains(before, d) {
					continue // made before the setting
				}
				if st, err := os.Stat(d); err != nil || st.Mode().Perm()&0o070 != 0o070 {
					t.Errorf("shared: %s is %v (%v), not the group's", d, st.Mode(), err)
				}
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		// Nothing changed since: a capture of the same files again
		// (the engine's own cache bypassed) finds every object stored.
		b, err := os.ReadFile(filepath.Join(repo, "d", "b.txt"))
		if err != nil {
			t.Fatal(err)
		}
		blob := objectID(sha1.New, "blob", b)
		id := hex.EncodeToString(blob)
		stored := filepath.Join(objects, id[:2], id[2:])
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(stored, old, old); err != nil {
			t.Fatal(err)
		}
		if err := writeLoose(objects, []packObject{{typ: 3, data: b, oid: blob}}); err != nil {
			t.Fatalf("an object stored already: %v", err)
		}
		if st, err := os.Stat(stored); err != nil || time.Since(st.ModTime()) > time.Minute {
			t.Fatalf("a stored object was not freshened: %v %v", st.ModTime(), err)
		}
		// A symlink where an object belongs (whatever can write the
		// objects directory may plant one) is not taken for it: the
		// object is written there.
		fake := []byte("not this object\n")
		gittest.WriteFile(t, repo, "elsewhere.txt", string(fake))
		other := []byte("a new object\n")
		oid := objectID(sha1.New, "blob", other)
		hexID := hex.EncodeToString(oid)
		if err := os.MkdirAll(filepath.Join(objects, hexID[:2]), 0o755); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(objects, hexID[:2], hexID[2:])
		if err := os.Symlink(filepath.Join(repo, "elsewhere.txt"), link); err != nil {
			t.Fatal(err)
		}
		if err := writeLoose(objects, []packObject{{typ: 3, data: other, oid: oid}}); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Lstat(link); err != nil || !st.Mode().IsRegular() {
			t.Fatalf("the planted symlink stayed: %v %v", st, err)
		}
		if got := gittest.Git(t, repo, "cat-file", "blob", hexID); strings.TrimSpace(got) != strings.TrimSpace(string(other)) {
			t.Fatalf("the object reads %q", got)
		}
	}
}

// Open's look gives HEAD's commit and tree from two lookups of HEAD, which
// may see it move in between (a `git reset --soft` elsewhere). A first
// capture takes that tree as its base only when the seed's own tree, or
// git asked for the commit's tree, confirms it; otherwise it captures
// through the index, and in every case what the worktree holds.
func TestFirstCaptureChecksHEADsTree(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t)
	for _, p := range []string{"a.txt", "d/b.txt", "d/e/c.txt"} {
		gittest.WriteFile(t, repo, p, p+"\n")
	}
	gittest.Commit(t, repo, "c1")
	sh(t, repo, `echo later > d/b.txt && echo new > d/e/new.txt && git add -A && git commit -qm c2 && git reset -q --hard HEAD~`)
	later := strings.TrimSpace(gittest.Git(t, repo, "rev-parse", "HEAD@{1}^{tree}"))
	// A clean worktree, then one with edits.
	for _, edit := range []string{"", `echo edited >> a.txt && echo more >> d/e/c.txt`} {
		e := openEngine(t, repo)
		if e.commitTree[0] != e.head || e.commitTree[1] == "" {
			t.Fatalf("Open kept %v for HEAD %s", e.commitTree, e.head)
		}
		// As if HEAD had moved to c2 between the look's two lookups.
		e.commitTree[1] = later
		if edit != "" {
			sh(t, repo, edit)
		}
		got := capture(t, e, "cp1").Tree
		if want := gitWorktreeTree(t, repo); got != want {
			t.Fatalf("edit %q: captured %s, the worktree is %s:\n%s", edit, got, want, gittest.Git(t, repo, "diff-tree", "-r", got, want))
		}
	}
}

// gitWorktreeTree is the tree git writes for the worktree's files (every
// file not ignored, as `git add -A` takes them, in an index of its own).
func gitWorktreeTree(t *testing.T, repo string) string {
	t.Helper()
	idx := filepath.Join(t.TempDir(), "index")
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = repo, append(os.Environ(), "GIT_INDEX_FILE="+idx)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("-c", "core.autocrlf=false", "add", "-A")
	return strings.TrimSpace(run("write-tree"))
}
