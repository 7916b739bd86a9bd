package snapshot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// A rule added outside the worktree (info/exclude, core.excludesFile) after
// a file was captured must not make that snapshot unrestorable: the file is
// written back byte for byte and verified by looking at it.
func TestRestoreFileIgnoredSinceCapture(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"info/exclude", "core.excludesFile"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			wt := gittest.NewRepo(t)
			global := filepath.Join(t.TempDir(), "ignore")
			if where == "core.excludesFile" {
				gittest.Git(t, wt, "config", "core.excludesFile", global)
			}
			e := openEngine(t, wt)
			sh(t, wt, "printf 't\\r\\n\\000x' > foo.tmp; mkdir -p d; echo deep > d/x.tmp; chmod +x d/x.tmp; ln -s README.md link.tmp")
			before := capture(t, e, "cp1")
			want := manifest(t, wt)
			sh(t, wt, "rm foo.tmp d/x.tmp link.tmp; rmdir d; echo b > b")
			capture(t, e, "cp2")
			rule := "*.tmp\n"
			if where == "info/exclude" {
				f, err := os.OpenFile(filepath.Join(wt, ".git", "info", "exclude"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
				if err != nil {
					t.Fatal(err)
				}
				f.WriteString(rule)
				f.Close()
			} else if err := os.WriteFile(global, []byte(rule), 0o644); err != nil {
				t.Fatal(err)
			}
			cur := capture(t, e, "r1")
			chk, err := e.CheckRestore(ctx, cur.Tree, before.Tree)
			if err != nil {
				t.Fatalf("CheckRestore: %v", err)
			}
			if wantIgn := []string{"d/x.tmp", "foo.tmp", "link.tmp"}; !reflect.DeepEqual(chk.Ignored, wantIgn) {
				t.Errorf("CheckRestore.Ignored = %q, want %q", chk.Ignored, wantIgn)
			}
			res, err := e.Restore(ctx, cur, before.Tree)
			if err != nil {
				t.Fatalf("Restore: %v", err)
			}
			if d := diffManifests(want, manifest(t, wt)); d != "" {
				t.Errorf("restored worktree differs:\n%s", d)
			}
			if wantIgn := []string{"d/x.tmp", "foo.tmp", "link.tmp"}; !reflect.DeepEqual(res.Ignored, wantIgn) {
				t.Errorf("Restore.Ignored = %q, want %q", res.Ignored, wantIgn)
			}
			// The tree reported is what captures see now: without the
			// ignored files.
			if now := capture(t, e, ""); now.Tree != res.Tree {
				t.Errorf("Restore.Tree = %s, a capture now gives %s", res.Tree, now.Tree)
			}
			// And back: the files are ignored, so they stay (left alone).
			if _, err := e.Restore(ctx, Snapshot{Tree: res.Tree}, cur.Tree); err != nil {
				t.Fatalf("Restore back: %v", err)
			}
			if _, err := os.Lstat(filepath.Join(wt, "b")); err != nil {
				t.Errorf("b not restored: %v", err)
			}
		})
	}
}

// A file that is ignored now but differs from the snapshot's is never
// verified as restored: verification still fails when the bytes differ.
func TestVerifyIgnoredNeedsExactBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wt := gittest.NewRepo(t)
	e := openEngine(t, wt)
	gittest.WriteFile(t, wt, "foo.tmp", "one\n")
	before := capture(t, e, "cp1")
	sh(t, wt, "rm foo.tmp")
	cur := capture(t, e, "cp2")
	gittest.WriteFile(t, wt, ".git/info/exclude", "*.tmp\n")
	p := &plan{writes: []Change{{Path: "foo.tmp", Kind: Added, NewMode: "100644"}}}
	gittest.WriteFile(t, wt, "foo.tmp", "two\n")
	e.mu.Lock()
	_, _, err := e.verifyRestored(ctx, before.Tree, p)
	e.mu.Unlock()
	if !errors.Is(err, ErrMismatch) {
		t.Fatalf("verify with other bytes: %v, want ErrMismatch", err)
	}
	gittest.WriteFile(t, wt, "foo.tmp", "one\n")
	e.mu.Lock()
	got, ign, err := e.verifyRestored(ctx, before.Tree, p)
	e.mu.Unlock()
	if err != nil || got != cur.Tree || !reflect.DeepEqual(ign, []string{"foo.tmp"}) {
		t.Fatalf("verify = %s %q %v, want %s [foo.tmp] nil", got, ign, err, cur.Tree)
	}
	// A path the restore did not write is never explained away.
	e.mu.Lock()
	_, _, err = e.verifyRestored(ctx, before.Tree, &plan{})
	e.mu.Unlock()
	if !errors.Is(err, ErrMismatch) {
		t.Fatalf("verify of an unwritten path: %v, want ErrMismatch", err)
	}
}

// The preview's ignore check uses the .gitignore files the restore leaves:
// a rule the restore removes does not count, one it brings back does.
func TestCheckRestoreIgnoredUsesRestoredGitignore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wt := gittest.NewRepo(t)
	e := openEngine(t, wt)
	gittest.WriteFile(t, wt, "sub/a.log", "a\n")
	gittest.WriteFile(t, wt, "sub/b.out", "b\n")
	before := capture(t, e, "cp1")
	// A later turn ignores *.log in sub/ and changes a.log: the restore
	// brings back the .gitignore-less state, so a.log is not ignored then.
	gittest.WriteFile(t, wt, "sub/.gitignore", "*.log\n")
	sh(t, wt, "rm sub/a.log sub/b.out")
	cur := capture(t, e, "cp2")
	gittest.WriteFile(t, wt, ".git/info/exclude", "*.out\n")
	cur = capture(t, e, "r1")
	chk, err := e.CheckRestore(ctx, cur.Tree, before.Tree)
	if err != nil {
		t.Fatalf("CheckRestore: %v", err)
	}
	if want := []string{"sub/b.out"}; !reflect.DeepEqual(chk.Ignored, want) {
		t.Errorf("Ignored = %q, want %q", chk.Ignored, want)
	}
	res, err := e.Restore(ctx, cur, before.Tree)
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if want := []string{"sub/b.out"}; !reflect.DeepEqual(res.Ignored, want) {
		t.Errorf("Restore.Ignored = %q, want %q", res.Ignored, want)
	}
}

// Something no snapshot holds in the way of a write blocks the restore
// before anything changes, and the check says so first.
func TestRestoreBlockedByUncapturedEntry(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		setup   string // run before the target capture
		removed string // run after it, then captured
		change  string // run after that, before the current capture
		blocker string
		path    string
		why     string
	}{
		{name: "ignored file in a directory that becomes a file", setup: "echo '*.log' > .gitignore; echo one > thing",
			change:  "rm thing; mkdir thing; echo data > thing/keep.txt; echo precious > thing/app.log",
			blocker: "thing/app.log", path: "thing", why: "ignored"},
		{name: "ignored file where a file is restored", setup: "echo t > foo.tmp", removed: "rm foo.tmp",
			change:  "echo '*.tmp' >> .git/info/exclude; echo other > foo.tmp",
			blocker: "foo.tmp", path: "foo.tmp", why: "ignored"},
		{name: "ignored file where a directory is restored", setup: "mkdir cfg; echo x > cfg/a", removed: "rm -r cfg",
			change:  "echo 'cfg' >> .git/info/exclude; echo mine > cfg",
			blocker: "cfg", path: "cfg/a", why: "ignored"},
		{name: "blocklisted directory in a directory that becomes a file", setup: "echo one > pkg",
			change:  "rm pkg; mkdir -p pkg/node_modules; echo x > pkg/node_modules/m; echo y > pkg/y",
			blocker: "pkg/node_modules", path: "pkg", why: "never captured"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			wt := gittest.NewRepo(t)
			e := openEngine(t, wt)
			sh(t, wt, tc.setup)
			target := capture(t, e, "cp1")
			if tc.removed != "" {
				sh(t, wt, tc.removed)
				capture(t, e, "cp2")
			}
			sh(t, wt, tc.change)
			cur := capture(t, e, "r1")
			want := manifest(t, wt)
			_, err := e.CheckRestore(ctx, cur.Tree, target.Tree)
			var be *BlockedError
			if !errors.As(err, &be) || !errors.Is(err, ErrConflict) {
				t.Fatalf("CheckRestore: %v, want a BlockedError", err)
			}
			if be.Blocker != tc.blocker || be.Path != tc.path || be.Why != tc.why {
				t.Errorf("blocked = %+v, want blocker %q path %q why %q", *be, tc.blocker, tc.path, tc.why)
			}
			_, err = e.Restore(ctx, cur, target.Tree)
			var re *RestoreError
			if !errors.As(err, &be) || !errors.As(err, &re) || re.Applied {
				t.Fatalf("Restore: %v, want a BlockedError before any change", err)
			}
			if d := diffManifests(want, manifest(t, wt)); d != "" {
				t.Errorf("a refused restore changed the worktree:\n%s", d)
			}
		})
	}
	t.Run("ignored file already holding the content", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		wt := gittest.NewRepo(t)
		e := openEngine(t, wt)
		gittest.WriteFile(t, wt, "foo.tmp", "same\n")
		target := capture(t, e, "cp1")
		sh(t, wt, "rm foo.tmp")
		capture(t, e, "cp2")
		gittest.WriteFile(t, wt, ".git/info/exclude", "*.tmp\n")
		gittest.WriteFile(t, wt, "foo.tmp", "same\n")
		cur := capture(t, e, "r1")
		if cur.Tree == target.Tree {
			t.Fatal("foo.tmp was captured although ignored")
		}
		res, err := e.Restore(ctx, cur, target.Tree)
		if err != nil {
			t.Fatalf("Restore over an identical ignored file: %v", err)
		}
		if !reflect.DeepEqual(res.Ignored, []string{"foo.tmp"}) {
			t.Errorf("Ignored = %q, want [foo.tmp]", res.Ignored)
		}
	})
}

func TestBlockedErrorMessage(t *testing.T) {
	t.Parallel()
	be := &BlockedError{Path: "thing", Restore: "file", Blocker: "thing/app.log", Kind: "file", Why: "ignored"}
	if got, want := be.Error(), "thing/app.log (ignored file) is in the way of restoring the file thing; move it away"; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
}

// A file deleted by a tree-edit capture and recreated, now ignored, before
// the private index catches up in the background is not tracked by that
// update: the next capture applies the ignore rules to it.
func TestBackgroundIndexUpdateDoesNotTrackRecreatedFile(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	e := openEngine(t, wt)
	gittest.WriteFile(t, wt, "foo.tmp", "one\n")
	gittest.WriteFile(t, wt, "keep.txt", "k\n")
	capture(t, e, "cp1")
	e.Wait()
	sh(t, wt, "rm foo.tmp; echo k2 > keep.txt")
	recreated := false
	e.onPriv = func(args []string) {
		// Runs just before the background update starts: the file
		// comes back, ignored, while the update is pending.
		if args[0] == "update-index" && len(args) > 1 && args[1] == "--force-remove" && !recreated {
			recreated = true
			gittest.WriteFile(t, wt, ".git/info/exclude", "*.tmp\n")
			gittest.WriteFile(t, wt, "foo.tmp", "secret\n")
		}
	}
	edits := e.treeEdits
	gone := capture(t, e, "cp2")
	if e.treeEdits != edits+1 || !recreated {
		t.Fatalf("the capture took no tree edit (edits %d -> %d, recreated %v)", edits, e.treeEdits, recreated)
	}
	e.Wait()
	e.onPriv = nil
	if got := capture(t, e, "cp3"); got.Tree != gone.Tree {
		t.Errorf("the ignored foo.tmp was captured after the background update: %s, want %s", got.Tree, gone.Tree)
	}
}

// A restore that fails after creating a file the ignore rules now hide
// takes that file back: the caller's rollback, a restore of its own
// capture, cannot see it.
func TestFailedRestoreDropsIgnoredCreations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wt := gittest.NewRepo(t)
	e := openEngine(t, wt)
	gittest.WriteFile(t, wt, "deep/er/foo.tmp", "one\n")
	gittest.WriteFile(t, wt, "b.txt", "b\n")
	target := capture(t, e, "cp1")
	sh(t, wt, "rm -r deep b.txt; mkdir kept")
	capture(t, e, "cp2")
	gittest.WriteFile(t, wt, ".git/info/exclude", "*.tmp\n")
	cur := capture(t, e, "r1")
	e.failpointFn = func(name string) {
		if name == "restore.before_verify" {
			gittest.WriteFile(t, wt, "intruder.txt", "x\n") // verification fails
		}
	}
	_, err := e.Restore(ctx, cur, target.Tree)
	var re *RestoreError
	if !errors.As(err, &re) || re.Step != "verify" || !errors.Is(err, ErrMismatch) {
		t.Fatalf("Restore: %v, want a verify mismatch", err)
	}
	if _, err := os.Lstat(filepath.Join(wt, "deep")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the ignored file (or the directories made for it) stayed after the failed restore: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(wt, "b.txt")); err != nil {
		t.Errorf("b.txt (visible to the caller's rollback) should be left to it: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(wt, "kept")); err != nil {
		t.Errorf("an empty directory that was there before went: %v", err)
	}
}
