//go:build linux

package snapshot

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// A capture holds what the repository tracks (its real index) plus the
// untracked files no rule ignores, whatever the session's private index
// remembers: an engine that captured a file before a rule matched it, one
// reopened on the same state (a later print-mode process), one with a new
// private index, a watched one, and one whose index was rebuilt all agree,
// after every change of the rules or of what the repository tracks.
func TestCaptureFollowsRulesNotHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wt := gittest.NewRepo(t)
	sh(t, wt, `printf 'c\n' > committed.cfg; git add committed.cfg; git commit -qm cfg`)
	state := filepath.Join(t.TempDir(), "state")
	open := func(dir string) *Engine {
		e, err := Open(ctx, Options{Worktree: wt, SessionID: "s_test", StateDir: dir})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(e.Wait)
		return e
	}
	long := open(state)
	watched := openWatched(t, wt, WatchOptions{})
	steps := []struct{ what, script string }{
		{"untracked files", `printf 's\n' > secret.env; mkdir -p d; printf 'l\n' > d/x.log; printf 'k\n' > keep.txt`},
		{"a .gitignore rule", `printf '*.env\n' > .gitignore`},
		{"an ignored file captured before, edited", `printf 's2\n' > secret.env; printf 'x\n' > other.env`},
		{"a rule for a captured file edited at once", `printf 'k2\n' > keep.txt; printf 'keep.txt\n' >> .gitignore`},
		{"an info/exclude rule", `printf '*.log\n' >> .git/info/exclude`},
		{"a rule for a tracked file", `printf '*.cfg\n' >> .gitignore; printf 'c2\n' > committed.cfg`},
		{"the tracked ignored file deleted", `rm committed.cfg`},
		{"and recreated", `printf 'c3\n' > committed.cfg`},
		{"git rm --cached of it", `git rm -q --cached committed.cfg`},
		{"git add -f of an ignored file", `git add -f secret.env`},
		{"a self-ignoring .gitignore", `mkdir -p cache; printf 'v\n' > cache/v; printf '*\n' > cache/.gitignore`},
		{"the rules dropped", `rm .gitignore cache/.gitignore; : > .git/info/exclude`},
	}
	capture(t, long, "")
	capture(t, watched, "")
	for i, s := range steps {
		sh(t, wt, s.script)
		want := capture(t, open(filepath.Join(t.TempDir(), "fresh")), "").Tree
		longTree := capture(t, long, "").Tree
		long.Wait() // one engine at a time on a state dir
		got := map[string]string{
			"long-lived": longTree,
			"reopened":   capture(t, open(state), "").Tree,
			"watched":    capture(t, watched, "").Tree,
			"git add -A": gitView(t, wt),
		}
		for who, tree := range got {
			if tree != want {
				diff := gittest.Git(t, wt, "diff-tree", "-r", "--name-status", want, tree)
				t.Errorf("step %d (%s): the %s capture differs from a new engine's:\n%s", i, s.what, who, diff)
			}
		}
	}
}

// gitView is git's own answer: the repository's index with `git add -A`
// applied, in a copy, written as a tree. The copy keeps the index's
// modification time, by which git tells racily clean entries (see
// addAllTree).
func gitView(t *testing.T, wt string) string {
	t.Helper()
	idx := filepath.Join(t.TempDir(), "index")
	cmd := exec.Command("sh", "-ec", `cp -p .git/index "$IDX"; GIT_INDEX_FILE="$IDX" git add -A; GIT_INDEX_FILE="$IDX" git write-tree`)
	cmd.Dir = wt
	cmd.Env = append(os.Environ(), "IDX="+idx)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git add -A: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// The reconcile (two listings of every index entry against the rules, most
// of a status each) runs only when the rules or what the repository tracks
// changed: never for a private index just copied from the real one, nor
// while nothing changed them, and once after a .gitignore edit.
func TestRulesReconcileOnlyOnChange(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	e := openEngine(t, wt)
	listings := 0
	e.onPriv = func(args []string) {
		// The reconcile lists the entries the rules ignore (-i).
		if slices.Contains(args, "ls-files") && slices.Contains(args, "-i") {
			listings++
		}
	}
	sh(t, wt, "echo a > a.txt")
	capture(t, e, "")
	sh(t, wt, "echo b > b.txt; rm README.md")
	capture(t, e, "")
	if listings != 0 {
		t.Fatalf("%d listings of the private index without any rule changing", listings)
	}
	sh(t, wt, "echo 'b.txt' > .gitignore")
	if tree := capture(t, e, "").Tree; tree != gitView(t, wt) {
		t.Fatalf("after the .gitignore edit the capture is %s, git gives %s", tree, gitView(t, wt))
	}
	if listings != 1 {
		t.Fatalf("%d listings of the private index after a .gitignore edit, want 1", listings)
	}
	capture(t, e, "")
	if listings != 1 {
		t.Fatalf("%d listings once the rules were reconciled, want 1", listings)
	}
}
