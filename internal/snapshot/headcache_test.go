package snapshot

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// recordPriv makes e record the git subcommands it runs on the private
// index, leaving out the settle refresh (it runs once, whenever the seeded
// index becomes a second old).
func recordPriv(e *Engine) func() []string {
	var mu sync.Mutex
	var calls []string
	e.onPriv = func(args []string) {
		mu.Lock()
		defer mu.Unlock()
		if !slices.Contains(args, "--force-write-index") {
			calls = append(calls, args[0])
		}
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		c := calls
		calls = nil
		return c
	}
}

// oracle captures wt with a fresh engine: a new private index, and a first
// capture that always runs update-index and write-tree.
func oracle(t *testing.T, wt string) string {
	t.Helper()
	return capture(t, openEngine(t, wt), "").Tree
}

func sharedIndexes(t *testing.T, e *Engine) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(e.privDir, "sharedindex.*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCapturedTreeReuse checks the one shortcut capture takes: with nothing
// changed, the tree of the previous capture is returned without write-tree,
// and after any change, however hard to see, it is never returned.
func TestCapturedTreeReuse(t *testing.T) {
	t.Parallel()
	type edit struct {
		name    string
		edit    func(t *testing.T, wt string)
		changed bool // the tree must differ from the one before
	}
	write := func(rel, content string) func(t *testing.T, wt string) {
		return func(t *testing.T, wt string) { gittest.WriteFile(t, wt, rel, content) }
	}
	edits := []edit{
		{"same size, same second", write("a.txt", "AAAA\n"), true},
		{"same size, mtime put back", func(t *testing.T, wt string) {
			p := filepath.Join(wt, "a.txt")
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(p, os.O_WRONLY, 0) // same inode, same size
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte("ZZZZ"), 0); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if err := os.Chtimes(p, st.ModTime(), st.ModTime()); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"exec bit", func(t *testing.T, wt string) { sh(t, wt, "chmod +x a.txt") }, true},
		{"untracked file", write("new.txt", "n\n"), true},
		{"untracked file in a new directory", write("x/y/z.txt", "z\n"), true},
		{"deleted file", func(t *testing.T, wt string) { sh(t, wt, "rm dir/b.txt") }, true},
		{"file becomes symlink", func(t *testing.T, wt string) { sh(t, wt, "rm a.txt; ln -s dir/b.txt a.txt") }, true},
		{"touched, content unchanged", func(t *testing.T, wt string) { sh(t, wt, "touch a.txt dir/b.txt") }, false},
		{"rewritten with the same bytes", write("a.txt", "aaaa\n"), false},
		{"edited and reverted", func(t *testing.T, wt string) {
			gittest.WriteFile(t, wt, "a.txt", "bbbb\n")
			gittest.WriteFile(t, wt, "a.txt", "aaaa\n")
		}, false},
		{"ignored file", write("debug.log", "l\n"), false},
		{"blocklisted directory", write("node_modules/m/i.js", "m\n"), false},
	}
	for _, tc := range edits {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wt := gittest.NewRepo(t)
			sh(t, wt, `mkdir dir; printf 'aaaa\n' > a.txt; printf 'b\n' > dir/b.txt; printf '*.log\n' > .gitignore; git add -A; git commit -qm files; printf 'u\n' > u.txt`)
			e := openEngine(t, wt)
			calls := recordPriv(e)
			before := capture(t, e, "cp1")
			calls()
			if again := capture(t, e, "cp2"); again.Tree != before.Tree {
				t.Fatalf("nothing changed, tree %s, want %s", again.Tree, before.Tree)
			}
			if c := calls(); !slices.Equal(c, []string{"status"}) {
				t.Fatalf("capture with nothing changed ran %q, want only status", c)
			}
			// No sleep: the edit lands in the second the index was written.
			tc.edit(t, wt)
			after := capture(t, e, "cp3")
			if want := oracle(t, wt); after.Tree != want {
				t.Fatalf("after the edit: tree %s, a fresh engine captures %s", after.Tree, want)
			}
			if (after.Tree != before.Tree) != tc.changed {
				t.Fatalf("tree changed = %v, want %v", after.Tree != before.Tree, tc.changed)
			}
			calls()
			if again := capture(t, e, "cp4"); again.Tree != after.Tree {
				t.Fatalf("nothing changed since the edit: tree %s, want %s", again.Tree, after.Tree)
			}
			if c := calls(); slices.Contains(c, "write-tree") || slices.Contains(c, "update-index") {
				t.Fatalf("capture with nothing changed ran %q", c)
			}
		})
	}
}

// TestRacyEditsInTheSameSecond edits one file to same-size contents many
// times, each edit right after the capture that wrote the index.
func TestRacyEditsInTheSameSecond(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	e := openEngine(t, wt)
	seen := map[string]bool{}
	for i := range 20 {
		want := fmt.Sprintf("%04d", i%10) // every content twice, never twice in a row
		gittest.WriteFile(t, wt, "r.txt", want)
		s := capture(t, e, "")
		if got := blobAt(t, wt, s.Tree, "r.txt"); got != want {
			t.Fatalf("edit %d: snapshot holds %q, want %q", i, got, want)
		}
		seen[s.Tree] = true
	}
	if len(seen) != 10 {
		t.Fatalf("%d distinct trees for 10 distinct contents", len(seen))
	}
}

// TestPrivateStateLost removes or damages each piece of private state the
// shortcut relies on; every capture must still be exact.
func TestPrivateStateLost(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// damage runs after capture cp1 of {a.txt, README.md} and returns
		// the engine to go on with.
		damage func(t *testing.T, wt string, e *Engine) *Engine
		edit   string // shell commands run after the damage
	}{
		{"shared index deleted", func(t *testing.T, wt string, e *Engine) *Engine {
			for _, p := range sharedIndexes(t, e) {
				os.Remove(p)
			}
			return e
		}, ""},
		{"shared index deleted, then an edit", func(t *testing.T, wt string, e *Engine) *Engine {
			for _, p := range sharedIndexes(t, e) {
				os.Remove(p)
			}
			return e
		}, editA},
		{"private index deleted", func(t *testing.T, wt string, e *Engine) *Engine {
			os.Remove(e.privIndex)
			return e
		}, editA},
		// The reseeded index (the real one) matches the worktree but not
		// the tree in the private HEAD.
		{"private index deleted, worktree back at HEAD", func(t *testing.T, wt string, e *Engine) *Engine {
			os.Remove(e.privIndex)
			return e
		}, "rm a.txt"},
		{"HEAD tree pruned", func(t *testing.T, wt string, e *Engine) *Engine {
			gittest.Git(t, wt, "update-ref", "-d", e.RefName("cp1"))
			gittest.Git(t, wt, "gc", "-q", "--prune=now")
			return e
		}, ""},
		{"HEAD tree pruned, then reopened", func(t *testing.T, wt string, e *Engine) *Engine {
			gittest.Git(t, wt, "update-ref", "-d", e.RefName("cp1"))
			gittest.Git(t, wt, "gc", "-q", "--prune=now")
			return reopen(t, wt, e)
		}, editA},
		{"HEAD names a commit (older state dir)", func(t *testing.T, wt string, e *Engine) *Engine {
			head := gittest.Git(t, wt, "rev-parse", "HEAD")
			if err := os.WriteFile(filepath.Join(e.privDir, "HEAD"), []byte(head+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			return reopen(t, wt, e)
		}, ""},
		{"another engine captured an edit on the same state dir", func(t *testing.T, wt string, e *Engine) *Engine {
			gittest.WriteFile(t, wt, "a.txt", "other\n")
			capture(t, reopen(t, wt, e), "")
			return e
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wt := gittest.NewRepo(t)
			// cp0 keeps the blobs alive through gc; cp1's tree (with
			// b.txt gone) is referenced by cp1 alone.
			sh(t, wt, `printf 'a\n' > a.txt; printf 'b\n' > b.txt`)
			e := openEngine(t, wt)
			capture(t, e, "cp0")
			sh(t, wt, `rm b.txt`)
			first := capture(t, e, "cp1")
			if len(sharedIndexes(t, e)) != 1 {
				t.Fatalf("shared index files: %q, want one", sharedIndexes(t, e))
			}
			e = tc.damage(t, wt, e)
			if tc.edit != "" {
				sh(t, wt, tc.edit)
			}
			got := capture(t, e, "cp2")
			// Before the oracle, which would write a pruned tree again.
			gittest.Git(t, wt, "cat-file", "-e", got.Tree+"^{tree}")
			want := oracle(t, wt)
			if got.Tree != want {
				t.Fatalf("tree %s, a fresh engine captures %s", got.Tree, want)
			}
			if tc.edit == "" && !strings.HasPrefix(tc.name, "another") && want != first.Tree {
				t.Fatalf("setup: worktree changed without an edit (%s, want %s)", want, first.Tree)
			}
			// The state is whole again: one shared index, and the next
			// unchanged capture is a status and nothing else.
			if len(sharedIndexes(t, e)) != 1 {
				t.Fatalf("shared index files: %q, want one", sharedIndexes(t, e))
			}
			calls := recordPriv(e)
			if again := capture(t, e, "cp3"); again.Tree != got.Tree {
				t.Fatalf("unchanged capture: tree %s, want %s", again.Tree, got.Tree)
			}
			if c := calls(); !slices.Equal(c, []string{"status"}) {
				t.Fatalf("unchanged capture ran %q, want only status", c)
			}
		})
	}
}

const editA = `printf 'A\n' > a.txt`

func reopen(t *testing.T, wt string, e *Engine) *Engine {
	t.Helper()
	e.Wait() // one Engine at a time on a state dir
	r, err := Open(context.Background(), Options{Worktree: wt, SessionID: e.sessionID, StateDir: e.stateDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Wait)
	return r
}

// TestReopenKeepsCapturedTree: an engine opened on an existing state dir
// starts from the tree the last one captured, so its first unchanged capture
// is a status and nothing else.
func TestReopenKeepsCapturedTree(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	sh(t, wt, `printf 'x\n' > x.txt; printf 'more\n' >> README.md`)
	e := openEngine(t, wt)
	first := capture(t, e, "cp1")
	r := reopen(t, wt, e)
	calls := recordPriv(r)
	if got := capture(t, r, "cp2"); got.Tree != first.Tree {
		t.Fatalf("tree %s, want %s", got.Tree, first.Tree)
	}
	if c := calls(); !slices.Equal(c, []string{"status"}) {
		t.Fatalf("first capture after reopening ran %q, want only status", c)
	}
	head, err := os.ReadFile(filepath.Join(e.privDir, "HEAD"))
	if err != nil || strings.TrimSpace(string(head)) != first.Tree {
		t.Fatalf("private HEAD = %q, %v; want %s", head, err, first.Tree)
	}
}
