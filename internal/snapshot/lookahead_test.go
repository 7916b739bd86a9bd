package snapshot

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// addAllTree is the tree `git add -A` on a fresh copy of wt's index makes:
// what a capture of wt must hold. The copy keeps the index's modification
// time: git re-reads an entry whose file changed in the same second as
// the index was written (racily clean) only when it can tell, and a copy
// stamped later would hide a same-size rewrite made just after the index.
func addAllTree(t *testing.T, wt string) string {
	t.Helper()
	idx := filepath.Join(t.TempDir(), "index")
	real := filepath.Join(wt, ".git", "index")
	b, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(idx, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(idx, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, args := range [][]string{{"add", "-A"}, {"write-tree"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = wt, append(os.Environ(), "GIT_INDEX_FILE="+idx)
		if out, err = cmd.Output(); err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
	}
	return strings.TrimSpace(string(out))
}

func openWithLook(t *testing.T, wt string, l *Look) (*Engine, error) {
	t.Helper()
	e, err := Open(context.Background(), Options{Worktree: wt, SessionID: "s_test", StateDir: filepath.Join(t.TempDir(), "state"), Look: l})
	if err == nil {
		t.Cleanup(e.Wait)
	}
	return e, err
}

// An engine that takes the answer asked ahead is the engine that asks
// itself: the same directories, HEAD, settings and first capture.
func TestLookAheadStandsForOpensOwn(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	gittest.Git(t, wt, "config", "core.excludesFile", filepath.Join(wt, "..", "excl"))
	gittest.Git(t, wt, "config", "core.sharedRepository", "umask")
	sh(t, wt, "mkdir -p sub && echo a > sub/a.txt && echo b > b.txt")
	ahead, err := openWithLook(t, wt, LookAhead(context.Background(), wt))
	if err != nil {
		t.Fatal(err)
	}
	own := openEngine(t, wt)
	if !ahead.lookTaken || own.lookTaken {
		t.Fatalf("look taken: %v, without one: %v", ahead.lookTaken, own.lookTaken)
	}
	for _, c := range [][3]string{
		{"git dir", ahead.gitDir, own.gitDir}, {"common dir", ahead.commonDir, own.commonDir},
		{"index", ahead.realIndex, own.realIndex}, {"objects", ahead.objects, own.objects},
		{"object format", ahead.objFormat, own.objFormat}, {"head", ahead.head, own.head},
		{"head's tree", ahead.commitTree[1], own.commitTree[1]},
		{"excludes file", ahead.exclFile, own.exclFile}, {"shared", ahead.sharedRepo, own.sharedRepo},
	} {
		if c[1] != c[2] || c[1] == "" && c[0] != "excludes file" {
			t.Errorf("%s: %q with the look, %q without", c[0], c[1], c[2])
		}
	}
	if ahead.refFiles != own.refFiles {
		t.Errorf("refs as files: %v with the look, %v without", ahead.refFiles, own.refFiles)
	}
	if got, want := capture(t, ahead, "cp1").Tree, addAllTree(t, wt); got != want {
		t.Errorf("first capture %s, git add -A %s", got, want)
	}
}

// An answer asked in a subdirectory is taken, its relative paths read
// from there; one for another repository, or for an engine with a capture
// behind it, is not; one that HEAD has moved past since still makes a
// right first capture; one that found no repository fails Open as its own
// look would.
func TestLookAheadNotTakenOrStale(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	sh(t, wt, "mkdir -p sub/deeper && echo a > sub/a.txt")
	own := openEngine(t, wt)
	e, err := openWithLook(t, wt, LookAhead(context.Background(), filepath.Join(wt, "sub", "deeper")))
	if err != nil {
		t.Fatal(err)
	}
	if !e.lookTaken {
		t.Error("a subdirectory's answer not taken")
	}
	for _, c := range [][3]string{
		{"git dir", e.gitDir, own.gitDir}, {"common dir", e.commonDir, own.commonDir},
		{"index", e.realIndex, own.realIndex}, {"objects", e.objects, own.objects},
	} {
		if c[1] != c[2] {
			t.Errorf("%s: %q with a subdirectory's look, %q without", c[0], c[1], c[2])
		}
	}
	if got, want := capture(t, e, "cp1").Tree, addAllTree(t, wt); got != want {
		t.Errorf("first capture %s, git add -A %s", got, want)
	}
	if e, err = openWithLook(t, wt, LookAhead(context.Background(), gittest.NewRepo(t))); err != nil {
		t.Fatal(err)
	}
	if e.lookTaken {
		t.Error("another repository's answer taken")
	}
	state := filepath.Join(t.TempDir(), "state")
	first, err := Open(context.Background(), Options{Worktree: wt, SessionID: "s_test", StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	capture(t, first, "cp1")
	first.Wait()
	again, err := Open(context.Background(), Options{Worktree: wt, SessionID: "s_test", StateDir: state, Look: LookAhead(context.Background(), wt)})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Wait()
	if again.lookTaken {
		t.Error("taken by an engine with a capture in its state dir")
	}

	// HEAD moves, the index with it, between the look and the capture.
	moved := gittest.NewRepo(t)
	sh(t, moved, "echo 1 > f.txt && echo u > untracked.txt")
	l := LookAhead(context.Background(), moved)
	<-l.done
	sh(t, moved, "git add f.txt && git commit -qm f && echo 2 > f.txt")
	e, err = openWithLook(t, moved, l)
	if err != nil {
		t.Fatal(err)
	}
	if !e.lookTaken {
		t.Fatal("look not taken")
	}
	if got, want := capture(t, e, "cp1").Tree, addAllTree(t, moved); got != want {
		t.Errorf("capture after HEAD moved: %s, git add -A %s", got, want)
	}

	plain := t.TempDir()
	if _, err := openWithLook(t, plain, LookAhead(context.Background(), plain)); !errors.Is(err, ErrNotRepo) {
		t.Errorf("outside a repository: %v, want ErrNotRepo", err)
	}
}
