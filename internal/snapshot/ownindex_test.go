package snapshot

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// A restore with OwnIndex sets the restored paths' index entries to HEAD:
// staged renames, additions and a directory replaced by a file, under names
// a pathspec would read as patterns, all leave `git status` clean once the
// files equal HEAD again. Without OwnIndex the index bytes are untouched.
func TestRestoreResetsOwnIndex(t *testing.T) {
	t.Parallel()
	for _, own := range []bool{true, false} {
		t.Run(map[bool]string{true: "own", false: "not-own"}[own], func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			wt := gittest.NewRepo(t)
			sh(t, wt, `mkdir d && printf 'n\n' > d/n.txt && printf 'star\n' > '*.txt' && printf 'q\n' > 'a?b' && git add -A && git commit -q -m more`)
			e, err := Open(ctx, Options{Worktree: wt, SessionID: "s_test", StateDir: filepath.Join(t.TempDir(), "state"), OwnIndex: own})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(e.Wait)
			base := capture(t, e, "cp1")
			sh(t, wt, `git mv README.md NOTES.md && git mv '*.txt' star.txt && git rm -q -r d && printf 'file\n' > d && printf 'x\n' > new && git add -A`)
			if st := gittest.Git(t, wt, "status", "--porcelain"); st == "" {
				t.Fatal("the turn staged nothing")
			}
			index := filepath.Join(wt, ".git", "index")
			before, err := os.ReadFile(index)
			if err != nil {
				t.Fatal(err)
			}
			cur := capture(t, e, "cp2")
			res, err := e.Restore(ctx, cur, base.Tree)
			if err != nil {
				t.Fatal(err)
			}
			if res.IndexWarning != "" {
				t.Fatalf("IndexWarning: %s", res.IndexWarning)
			}
			after, err := os.ReadFile(index)
			if err != nil {
				t.Fatal(err)
			}
			st := gittest.Git(t, wt, "status", "--porcelain", "--untracked-files=all")
			if own && st != "" {
				t.Fatalf("git status after the restore:\n%s", st)
			}
			if !own && string(before) != string(after) {
				t.Fatalf("the index changed without OwnIndex; status:\n%s", st)
			}
		})
	}
}

// With OwnIndex, an index the undone changes staged nothing in is not
// rewritten: its bytes stay as they were.
func TestRestoreLeavesAnUnstagedOwnIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wt := gittest.NewRepo(t)
	e, err := Open(ctx, Options{Worktree: wt, SessionID: "s_test", StateDir: filepath.Join(t.TempDir(), "state"), OwnIndex: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Wait)
	base := capture(t, e, "cp1")
	sh(t, wt, `mv README.md NOTES.md && printf 'x\n' > new && mkdir d && printf 'n\n' > d/n`)
	index := filepath.Join(wt, ".git", "index")
	before, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	cur := capture(t, e, "cp2")
	if _, err := e.Restore(ctx, cur, base.Tree); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Fatal("the index was rewritten although nothing was staged")
	}
	if st := gittest.Git(t, wt, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Fatalf("git status after the restore:\n%s", st)
	}
}
