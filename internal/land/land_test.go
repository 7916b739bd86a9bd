package land

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/fsutil"
	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/git/gittest"
)

var ctx = context.Background()

const lines = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"

func TestApplyMergesUndoRestores(t *testing.T) {
	r := newRig(t, map[string]string{"a.txt": lines, "b.txt": "bee\n", "old.txt": "rename me\nplease\n", "gone.txt": "bye\n"})
	wt, co := r.sess.Worktree, r.checkout
	// The session edits line 1, creates, deletes and renames (by shell).
	write(t, wt, "a.txt", strings.Replace(lines, "one", "ONE", 1))
	write(t, wt, "new/file.txt", "created\n")
	write(t, wt, "bin.dat", "\x00\x01\x02binary")
	remove(t, wt, "gone.txt")
	if err := os.Rename(filepath.Join(wt, "old.txt"), filepath.Join(wt, "renamed.txt")); err != nil {
		t.Fatal(err)
	}
	// The user edits other lines of the same files and moves the branch.
	write(t, co, "a.txt", strings.Replace(lines, "seven", "SEVEN", 1))
	write(t, co, "old.txt", "rename me\nplease!\n")
	write(t, co, "moved.txt", "user's branch moved on\n")
	gittest.Git(t, co, "add", "moved.txt")
	gittest.Git(t, co, "commit", "-q", "-m", "user moves on")
	write(t, co, "scratch.txt", "user's untracked file\n")

	before := manifest(t, co)
	state := gitState(t, co)

	res, err := Apply(ctx, r.sess, ApplyOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := diffManifests(before, manifest(t, co)); d != "" {
		t.Fatalf("dry run wrote:\n%s", d)
	}
	want := map[string]string{"a.txt": "merged", "new/file.txt": "clean", "bin.dat": "clean", "gone.txt": "clean", "old.txt": "merged", "renamed.txt": "merged"}
	if got := outcomes(res); !equalMaps(got, want) {
		t.Fatalf("dry-run outcomes %v, want %v", got, want)
	}

	res, err = Apply(ctx, r.sess, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.UndoRef != ApplyRefPrefix+"s_test/1" || res.Conflicts != 0 {
		t.Fatalf("result %+v", res)
	}
	if got := read(t, co, "a.txt"); got != strings.Replace(strings.Replace(lines, "one", "ONE", 1), "seven", "SEVEN", 1) {
		t.Fatalf("a.txt = %q", got)
	}
	if got := read(t, co, "renamed.txt"); got != "rename me\nplease!\n" {
		t.Fatalf("the rename lost the user's edit: %q", got)
	}
	for _, p := range []string{"old.txt", "gone.txt"} {
		if _, err := os.Lstat(filepath.Join(co, p)); !os.IsNotExist(err) {
			t.Fatalf("%s still there", p)
		}
	}
	if read(t, co, "new/file.txt") != "created\n" || read(t, co, "bin.dat") != "\x00\x01\x02binary" || read(t, co, "scratch.txt") != "user's untracked file\n" {
		t.Fatal("created files or the user's untracked file wrong")
	}
	if got := gitState(t, co); got != state {
		t.Fatalf("HEAD, refs, index or config changed:\n%s\n---\n%s", state, got)
	}
	// Applying twice is harmless.
	again, err := Apply(ctx, r.sess, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range again.Paths {
		if p.Outcome != OutcomeApplied {
			t.Fatalf("second apply: %v", again.Paths)
		}
	}
	if again.UndoRef != "" || again.Written != 0 {
		t.Fatalf("second apply wrote: %+v", again)
	}
	if l := Last(r.data, "s_test"); l == nil || l.State != "applied" || l.Paths != 6 {
		t.Fatalf("last apply %+v", l)
	}

	u, err := Undo(ctx, r.sess, UndoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Paths) != 6 {
		t.Fatalf("undo put back %v", u.Paths)
	}
	if d := diffManifests(before, manifest(t, co)); d != "" {
		t.Fatalf("undo is not byte-exact:\n%s", d)
	}
	if got := gitState(t, co); got != state {
		t.Fatal("undo changed HEAD, refs, index or config")
	}
	if _, err := Undo(ctx, r.sess, UndoOptions{}); !errors.Is(err, ErrNothingToUndo) {
		t.Fatalf("second undo: %v", err)
	}
	if l := Last(r.data, "s_test"); l == nil || l.State != "undone" {
		t.Fatalf("last apply %+v", l)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestConflictRefuseAndMarkers(t *testing.T) {
	r := newRig(t, map[string]string{"a.txt": lines, "ok.txt": "x\n"})
	wt, co := r.sess.Worktree, r.checkout
	write(t, wt, "a.txt", strings.Replace(lines, "four", "SESSION", 1))
	write(t, wt, "ok.txt", "y\n")
	write(t, co, "a.txt", strings.Replace(lines, "four", "USER", 1))
	before := manifest(t, co)

	res, err := Apply(ctx, r.sess, ApplyOptions{})
	var ce *ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) || ce.Written {
		t.Fatalf("want a refused conflict, got %v", err)
	}
	if res == nil || res.Conflicts != 1 || outcomes(res)["a.txt"] != OutcomeConflict || outcomes(res)["ok.txt"] != OutcomeClean {
		t.Fatalf("result %+v", res)
	}
	if d := diffManifests(before, manifest(t, co)); d != "" {
		t.Fatalf("refuse wrote:\n%s", d)
	}

	res, err = Apply(ctx, r.sess, ApplyOptions{OnConflict: OnConflictMarkers})
	if !errors.As(err, &ce) || !ce.Written {
		t.Fatalf("markers: %v", err)
	}
	got := read(t, co, "a.txt")
	if !strings.Contains(got, "<<<<<<<") || !strings.Contains(got, "USER") || !strings.Contains(got, "SESSION") {
		t.Fatalf("conflict markers lose a side:\n%s", got)
	}
	if read(t, co, "ok.txt") != "y\n" || res.UndoRef == "" {
		t.Fatal("clean path not written with markers")
	}
	if _, err := Undo(ctx, r.sess, UndoOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := diffManifests(before, manifest(t, co)); d != "" {
		t.Fatalf("undo after markers:\n%s", d)
	}
}

// The markers name the sides for people, in git's merge and diff3 styles
// and with CRLF line endings, and only their marker lines change.
func TestConflictMarkersNameTheSides(t *testing.T) {
	for _, tc := range []struct{ name, style, eol string }{{"merge", "merge", "\n"}, {"diff3", "diff3", "\n"}, {"crlf", "diff3", "\r\n"}} {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.ReplaceAll(lines, "\n", tc.eol)
			r := newRig(t, map[string]string{"a.txt": text})
			wt, co := r.sess.Worktree, r.checkout
			gittest.Git(t, co, "config", "merge.conflictStyle", tc.style)
			write(t, wt, "a.txt", strings.Replace(text, "four", "SESSION", 1))
			write(t, co, "a.txt", strings.Replace(text, "four", "USER", 1))
			if _, err := Apply(ctx, r.sess, ApplyOptions{OnConflict: OnConflictMarkers}); !errors.Is(err, ErrConflict) {
				t.Fatalf("markers: %v", err)
			}
			want := "<<<<<<< your checkout" + tc.eol + "USER" + tc.eol
			if tc.style == "diff3" {
				want += "||||||| base " + git.ShortOID(r.sess.Base) + tc.eol + "four" + tc.eol
			}
			want += "=======" + tc.eol + "SESSION" + tc.eol + ">>>>>>> session s_test (yolop/test-s_test)" + tc.eol
			if got := read(t, co, "a.txt"); !strings.Contains(got, want) {
				t.Fatalf("markers:\n%q\nwant them to contain\n%q", got, want)
			}
		})
	}
}

func TestUndoRefusesEditsSince(t *testing.T) {
	r := newRig(t, map[string]string{"a.txt": lines})
	wt, co := r.sess.Worktree, r.checkout
	write(t, wt, "a.txt", "session\n")
	write(t, wt, "b.txt", "new\n")
	before := manifest(t, co)
	if _, err := Apply(ctx, r.sess, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	write(t, co, "a.txt", "user edit after apply\n")
	write(t, co, "other.txt", "unrelated\n")
	_, err := Undo(ctx, r.sess, UndoOptions{})
	var ee *EditedError
	if !errors.As(err, &ee) || len(ee.Paths) != 1 || ee.Paths[0] != "a.txt" {
		t.Fatalf("want a refusal naming a.txt, got %v", err)
	}
	if read(t, co, "a.txt") != "user edit after apply\n" || read(t, co, "b.txt") != "new\n" {
		t.Fatal("refused undo changed files")
	}
	u, err := Undo(ctx, r.sess, UndoOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if u.SavedRef == "" || len(u.Overwrote) != 1 {
		t.Fatalf("forced undo %+v", u)
	}
	after := manifest(t, co)
	delete(after, "other.txt")
	if d := diffManifests(before, after); d != "" {
		t.Fatalf("forced undo:\n%s", d)
	}
	// The overwritten edit is kept.
	if got := gittest.Git(t, co, "cat-file", "blob", u.SavedRef+":a.txt"); got != "user edit after apply" {
		t.Fatalf("saved edit %q", got)
	}
}

func TestBadInputs(t *testing.T) {
	t.Run("no workspace", func(t *testing.T) {
		_, err := Apply(ctx, Session{ID: "s_x"}, ApplyOptions{})
		if !errors.Is(err, ErrNoWorkspace) || !strings.Contains(err.Error(), "conversation only") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("mid-merge and index lock", func(t *testing.T) {
		r := newRig(t, map[string]string{"a.txt": "a\n"})
		write(t, r.sess.Worktree, "a.txt", "b\n")
		head := gittest.Git(t, r.checkout, "rev-parse", "HEAD")
		os.WriteFile(filepath.Join(r.checkout, ".git", "MERGE_HEAD"), []byte(head+"\n"), 0o644)
		if _, err := Apply(ctx, r.sess, ApplyOptions{}); !errors.Is(err, ErrCheckoutBusy) || !strings.Contains(err.Error(), "merge") {
			t.Fatalf("mid-merge: %v", err)
		}
		os.Remove(filepath.Join(r.checkout, ".git", "MERGE_HEAD"))
		os.WriteFile(filepath.Join(r.checkout, ".git", "index.lock"), nil, 0o644)
		if _, err := Apply(ctx, r.sess, ApplyOptions{}); !errors.Is(err, ErrCheckoutBusy) {
			t.Fatalf("index.lock: %v", err)
		}
		os.Remove(filepath.Join(r.checkout, ".git", "index.lock"))
		if read(t, r.checkout, "a.txt") != "a\n" {
			t.Fatal("refused apply wrote")
		}
	})
	t.Run("another apply holds the lock", func(t *testing.T) {
		r := newRig(t, map[string]string{"a.txt": "a\n"})
		top, _, _ := toplevel(ctx, r.checkout)
		j, err := openJournal(r.data, top)
		if err != nil {
			t.Fatal(err)
		}
		defer j.close()
		if _, err := Apply(ctx, r.sess, ApplyOptions{}); !errors.Is(err, ErrLocked) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("other repository", func(t *testing.T) {
		r := newRig(t, map[string]string{"a.txt": "a\n"})
		other := gittest.NewRepo(t)
		if _, err := Apply(ctx, r.sess, ApplyOptions{To: other}); !errors.Is(err, ErrOtherRepo) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("directory in one tree, file in the other", func(t *testing.T) {
		r := newRig(t, map[string]string{"x/inner.txt": "in\n", "y.txt": "y\n"})
		remove(t, r.sess.Worktree, "x/inner.txt")
		remove(t, r.sess.Worktree, "x")
		write(t, r.sess.Worktree, "x", "x is a file now\n")
		write(t, r.checkout, "y.txt", "user\n")
		before := manifest(t, r.checkout)
		res, err := Apply(ctx, r.sess, ApplyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if read(t, r.checkout, "x") != "x is a file now\n" || res.Written != 2 {
			t.Fatalf("swap not applied: %+v", res)
		}
		if _, err := Undo(ctx, r.sess, UndoOptions{}); err != nil {
			t.Fatal(err)
		}
		if d := diffManifests(before, manifest(t, r.checkout)); d != "" {
			t.Fatal(d)
		}
	})
	t.Run("user deleted a file the session edited", func(t *testing.T) {
		r := newRig(t, map[string]string{"a.txt": lines})
		write(t, r.sess.Worktree, "a.txt", lines+"eight\n")
		remove(t, r.checkout, "a.txt")
		res, err := Apply(ctx, r.sess, ApplyOptions{})
		if !errors.Is(err, ErrConflict) || outcomes(res)["a.txt"] != OutcomeConflict {
			t.Fatalf("%v %+v", err, res)
		}
		if _, err := os.Lstat(filepath.Join(r.checkout, "a.txt")); !os.IsNotExist(err) {
			t.Fatal("refused apply wrote a.txt")
		}
	})
	t.Run("binary conflict", func(t *testing.T) {
		r := newRig(t, map[string]string{"b.bin": "\x00base"})
		write(t, r.sess.Worktree, "b.bin", "\x00session")
		write(t, r.checkout, "b.bin", "\x00user")
		res, err := Apply(ctx, r.sess, ApplyOptions{OnConflict: OnConflictMarkers})
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("%v", err)
		}
		if read(t, r.checkout, "b.bin") != "\x00user" {
			t.Fatal("the user's binary was replaced")
		}
		if len(res.Notes) == 0 || !strings.Contains(res.Notes[0], "your version is kept") {
			t.Fatalf("notes %v", res.Notes)
		}
	})
	t.Run("ignored file in the way", func(t *testing.T) {
		r := newRig(t, map[string]string{"a.txt": "a\n"})
		write(t, r.sess.Worktree, "gen.out", "session\n")
		write(t, r.checkout, ".gitignore", "gen.out\n") // the user's own, untracked
		write(t, r.checkout, "gen.out", "user's ignored file\n")
		// The dry run predicts the refusal the apply makes, and both
		// name the path.
		for _, dry := range []bool{true, false} {
			res, err := Apply(ctx, r.sess, ApplyOptions{DryRun: dry})
			if !errors.Is(err, ErrInTheWay) || !strings.Contains(err.Error(), "gen.out") {
				t.Fatalf("dry run %v: %v", dry, err)
			}
			if res == nil || outcomes(res)["gen.out"] != OutcomeInTheWay || len(res.InTheWay) != 1 || res.Written != 0 {
				t.Fatalf("dry run %v: %+v", dry, res)
			}
			if res.Token != "" || res.MarkersToken != "" {
				t.Fatalf("dry run %v: a token for an apply that cannot be made: %+v", dry, res)
			}
			if txt := res.Text(); strings.Contains(txt, "Nothing to write") || !strings.Contains(txt, "1 path in the way") {
				t.Fatalf("dry run %v: text %q", dry, txt)
			}
		}
		if read(t, r.checkout, "gen.out") != "user's ignored file\n" {
			t.Fatal("ignored file overwritten")
		}
	})
	t.Run("another session's worktree", func(t *testing.T) {
		r := newRig(t, map[string]string{"a.txt": "a\n"})
		write(t, r.sess.Worktree, "a.txt", "session a\n")
		other := attachSession(t, r.checkout, r.sess.Base, "s_other")
		r.sess.WorktreeOwner = func(dir string) string {
			if fsutil.SameDir(dir, other.sess.Worktree) {
				return other.sess.ID
			}
			return ""
		}
		before := manifest(t, other.sess.Worktree)
		for _, to := range []string{other.sess.Worktree, filepath.Join(other.sess.Worktree, ".")} {
			_, err := Apply(ctx, r.sess, ApplyOptions{To: to})
			if !errors.Is(err, ErrSessionWorktree) || !strings.Contains(err.Error(), "s_other") || !strings.Contains(err.Error(), "sessions fork s_other") {
				t.Fatalf("%v", err)
			}
		}
		if d := diffManifests(before, manifest(t, other.sess.Worktree)); d != "" {
			t.Fatalf("wrote into the other session's worktree:\n%s", d)
		}
		if _, err := os.Stat(filepath.Join(r.data, "apply")); !os.IsNotExist(err) {
			t.Fatalf("the refused apply opened state for the target: %v", err)
		}
		// A worktree in the data directory that belongs to no session
		// (a spare) is refused too.
		spare := filepath.Join(r.data, "worktrees", "repo-x", ".spare-1")
		gittest.Git(t, r.checkout, "worktree", "add", "-q", "--detach", spare, r.sess.Base)
		if _, err := Apply(ctx, r.sess, ApplyOptions{To: spare}); !errors.Is(err, ErrSessionWorktree) || !strings.Contains(err.Error(), "inside yolop's data directory") {
			t.Fatalf("spare: %v", err)
		}
		if _, err := os.Stat(filepath.Join(spare, "a.txt")); err != nil || read(t, spare, "a.txt") != "a\n" {
			t.Fatal("wrote into the spare")
		}
		// The user's checkout is still fine.
		if _, err := Apply(ctx, r.sess, ApplyOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("permission denied", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root ignores permissions")
		}
		r := newRig(t, map[string]string{"d/a.txt": "a\n", "z.txt": "z\n"})
		write(t, r.sess.Worktree, "z.txt", "session z\n")
		write(t, r.sess.Worktree, "d/new.txt", "new\n")
		os.Chmod(filepath.Join(r.checkout, "d"), 0o555)
		defer os.Chmod(filepath.Join(r.checkout, "d"), 0o755)
		before := manifest(t, r.checkout)
		_, err := Apply(ctx, r.sess, ApplyOptions{})
		if err == nil || !strings.Contains(err.Error(), "not writable") {
			t.Fatalf("%v", err)
		}
		if d := diffManifests(before, manifest(t, r.checkout)); d != "" {
			t.Fatalf("permission failure left changes:\n%s", d)
		}
	})
	t.Run("bad conflict mode", func(t *testing.T) {
		r := newRig(t, nil)
		if _, err := Apply(ctx, r.sess, ApplyOptions{OnConflict: "theirs"}); err == nil || !strings.Contains(err.Error(), "refuse or markers") {
			t.Fatalf("%v", err)
		}
	})
}

func TestDiff(t *testing.T) {
	r := newRig(t, map[string]string{"a.txt": lines, "b.bin": "\x00old", "del.txt": "d\n"})
	wt := r.sess.Worktree
	cp, err := r.sess.Engine.Capture(ctx, "cp1")
	if err != nil {
		t.Fatal(err)
	}
	_ = cp
	write(t, wt, "a.txt", strings.Replace(lines, "two", "TWO", 1))
	write(t, wt, "b.bin", "\x00new\x01")
	write(t, wt, "c.txt", "c\n")
	remove(t, wt, "del.txt")
	res, err := Diff(ctx, r.sess, DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stat.Files != 4 || res.Stat.Insertions != 2 || res.Stat.Deletions != 2 || res.From != "base" {
		t.Fatalf("stat %+v", res)
	}
	b, _ := json.Marshal(res)
	for _, k := range []string{`"session_id"`, `"base"`, `"from"`, `"paths"`, `"stat"`, `"insertions"`, `"change":"deleted"`} {
		if !strings.Contains(string(b), k) {
			t.Fatalf("json %s lacks %s", b, k)
		}
	}
	// The patch applies to the base with git apply, binary included.
	other := t.TempDir()
	gittest.Git(t, r.checkout, "worktree", "add", "-q", "--detach", other, r.sess.Base)
	cmd := exec.Command("git", "apply", "--index")
	cmd.Dir, cmd.Stdin = other, strings.NewReader(res.Text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s\n%s", err, out, res.Text)
	}
	if d := diffManifests(manifest(t, wt), manifest(t, other)); d != "" {
		t.Fatalf("applied patch differs:\n%s", d)
	}
	for _, f := range []DiffFormat{FormatStat, FormatNameStatus} {
		res, err := Diff(ctx, r.sess, DiffOptions{Format: f})
		if err != nil || !strings.Contains(res.Text, "a.txt") {
			t.Fatalf("%s: %v %q", f, err, res.Text)
		}
	}
	res, err = Diff(ctx, r.sess, DiffOptions{From: "1"})
	if err != nil || res.From != "cp1" || res.Stat.Files != 4 {
		t.Fatalf("from cp1: %v %+v", err, res)
	}
	if _, err := Diff(ctx, r.sess, DiffOptions{From: "cp9"}); !errors.Is(err, ErrBadCheckpoint) {
		t.Fatalf("cp9: %v", err)
	}
	if _, err := r.sess.Engine.ResolveRef(ctx, "cp2"); err == nil {
		t.Fatal("diff created a checkpoint")
	}
}

func TestCommit(t *testing.T) {
	r := newRig(t, map[string]string{"a.txt": "a\n", ".gitignore": "*.log\n"})
	wt := r.sess.Worktree
	write(t, wt, "a.txt", "changed\n")
	write(t, wt, "new.txt", "new\n")
	write(t, wt, "debug.log", "ignored\n")
	write(t, wt, "node_modules/x/index.js", "blocklisted\n")
	gittest.Git(t, wt, "add", "-f", "node_modules/x/index.js") // staged by a shell: still never committed

	// A failing hook refuses; --no-verify skips it.
	hooks := filepath.Join(r.checkout, ".git", "hooks")
	os.MkdirAll(hooks, 0o755)
	os.WriteFile(filepath.Join(hooks, "pre-commit"), []byte("#!/bin/sh\necho 'lint failed' >&2\nexit 1\n"), 0o755)
	_, err := Commit(ctx, r.sess, CommitOptions{})
	var he *HookError
	if !errors.As(err, &he) || !strings.Contains(err.Error(), "lint failed") {
		t.Fatalf("hook: %v", err)
	}
	res, err := Commit(ctx, r.sess, CommitOptions{NoVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	files := gittest.Git(t, wt, "show", "--name-only", "--format=", "HEAD")
	if files != "a.txt\nnew.txt" || res.Files != 2 {
		t.Fatalf("committed %q", files)
	}
	msg := gittest.Git(t, wt, "log", "-1", "--format=%B")
	if !strings.HasPrefix(msg, "test session\n\nTurns:\n- first prompt\n- second\n") {
		t.Fatalf("message %q", msg)
	}
	if who := gittest.Git(t, wt, "log", "-1", "--format=%an <%ae>"); who != "yolop test <test@example.invalid>" {
		t.Fatalf("author %q", who)
	}
	if _, err := Commit(ctx, r.sess, CommitOptions{NoVerify: true}); !errors.Is(err, ErrNothingToCommit) {
		t.Fatalf("empty commit: %v", err)
	}
	// git merge from the user's checkout brings the work.
	gittest.Git(t, r.checkout, "merge", "-q", r.sess.Branch)
	if read(t, r.checkout, "new.txt") != "new\n" {
		t.Fatal("merge did not bring the files")
	}
}

func TestCommitWithoutIdentity(t *testing.T) {
	r := newRig(t, map[string]string{"a.txt": "a\n"})
	gittest.Git(t, r.checkout, "config", "--unset", "user.name")
	gittest.Git(t, r.checkout, "config", "--unset", "user.email")
	cfg := filepath.Join(t.TempDir(), "cfg")
	os.WriteFile(cfg, nil, 0o600)
	t.Setenv("GIT_CONFIG_GLOBAL", cfg)
	t.Setenv("EMAIL", "")
	write(t, r.sess.Worktree, "a.txt", "b\n")
	if _, err := Commit(ctx, r.sess, CommitOptions{}); !errors.Is(err, ErrNoIdentity) || !strings.Contains(err.Error(), "git config --global user.name") {
		t.Fatalf("%v", err)
	}
}

func TestCommitAfterTheAgentMovedTheBranch(t *testing.T) {
	r := newRig(t, map[string]string{"a.txt": "a\n"})
	wt := r.sess.Worktree
	if b, note := WorktreeBranch(wt, r.sess.Branch); b != r.sess.Branch || note != "" {
		t.Fatalf("unmoved: %q %q", b, note)
	}

	// The agent commits, then switches to a branch of its own.
	write(t, wt, "a.txt", "agent\n")
	gittest.Git(t, wt, "commit", "-qam", "agent commit")
	gittest.Git(t, wt, "checkout", "-q", "-b", "yolop/agent-branch")
	write(t, wt, "b.txt", "more\n")
	b, note := WorktreeBranch(wt, r.sess.Branch)
	if b != "yolop/agent-branch" || !strings.Contains(note, "switched to it from the session's branch "+r.sess.Branch) {
		t.Fatalf("switched: %q %q", b, note)
	}
	before := gittest.Git(t, wt, "rev-parse", r.sess.Branch)
	res, err := Commit(ctx, r.sess, CommitOptions{Message: "after the switch"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Branch != "yolop/agent-branch" || res.MovedFrom != r.sess.Branch {
		t.Fatalf("%+v", res)
	}
	if got := gittest.Git(t, wt, "rev-parse", "yolop/agent-branch"); got != res.Commit {
		t.Fatalf("commit %s not on the branch the result names (%s)", res.Commit, got)
	}
	if gittest.Git(t, wt, "rev-parse", r.sess.Branch) != before {
		t.Fatal("the session's recorded branch moved")
	}
	txt := res.Text()
	if !strings.Contains(txt, "git merge yolop/agent-branch") || !strings.Contains(txt, "the agent switched the session's worktree from its branch "+r.sess.Branch) {
		t.Fatalf("text %q", txt)
	}

	// Detached: refused, nothing committed, and the way back named.
	gittest.Git(t, wt, "checkout", "-q", "--detach")
	write(t, wt, "c.txt", "detached\n")
	head := gittest.Git(t, wt, "rev-parse", "HEAD")
	if b, note := WorktreeBranch(wt, r.sess.Branch); b != r.sess.Branch || !strings.Contains(note, "detached HEAD at "+head[:12]) {
		t.Fatalf("detached: %q %q", b, note)
	}
	_, err = Commit(ctx, r.sess, CommitOptions{Message: "detached"})
	if !errors.Is(err, ErrBranchMoved) || !strings.Contains(err.Error(), "on no branch") || !strings.Contains(err.Error(), "switch "+r.sess.Branch) {
		t.Fatalf("detached: %v", err)
	}
	if gittest.Git(t, wt, "rev-parse", "HEAD") != head {
		t.Fatal("a refused commit committed")
	}

	// A branch of the user's: refused.
	gittest.Git(t, r.checkout, "branch", "feature", r.sess.Base)
	gittest.Git(t, wt, "checkout", "-q", "feature")
	_, err = Commit(ctx, r.sess, CommitOptions{Message: "on the user's"})
	if !errors.Is(err, ErrBranchMoved) || !strings.Contains(err.Error(), "to the branch feature, which is not a session branch") {
		t.Fatalf("user branch: %v", err)
	}
	if gittest.Git(t, r.checkout, "rev-parse", "feature") != r.sess.Base {
		t.Fatal("committed on the user's branch")
	}
}

// noTilde fails when a path of the result or of the checkout looks like
// git's "<path>~<commit>" names for file/directory conflicts.
func noTilde(t *testing.T, res *ApplyResult, err error, checkout string) {
	t.Helper()
	for _, p := range res.Paths {
		if strings.Contains(p.Path, "~") {
			t.Fatalf("outcome for a git-internal path %q: %+v", p.Path, res.Paths)
		}
	}
	if err != nil && strings.Contains(err.Error(), "~") {
		t.Fatalf("error names a git-internal path: %v", err)
	}
	for p := range manifest(t, checkout) {
		if strings.Contains(p, "~") {
			t.Fatalf("wrote %s into the checkout", p)
		}
	}
}

func TestApplyFileDirectoryConflicts(t *testing.T) {
	t.Run("the session's file over the checkout's directory", func(t *testing.T) {
		r := newRig(t, map[string]string{"docs/a.md": "a\n", "f.txt": "f\n"})
		write(t, r.checkout, "docs/notes.txt", "mine\n")
		write(t, r.checkout, "localdir/x", "x\n")
		remove(t, r.sess.Worktree, "docs/a.md")
		remove(t, r.sess.Worktree, "docs")
		write(t, r.sess.Worktree, "docs", "now a file\n")
		write(t, r.sess.Worktree, "localdir", "lf\n")
		before := manifest(t, r.checkout)

		var first []PathOutcome
		for i := 0; i < 2; i++ {
			res, err := Apply(ctx, r.sess, ApplyOptions{DryRun: true})
			if !errors.Is(err, ErrConflict) {
				t.Fatalf("%v", err)
			}
			noTilde(t, res, err, r.checkout)
			o := outcomes(res)
			if o["docs"] != OutcomeConflict || o["localdir"] != OutcomeConflict || res.Conflicts != 2 {
				t.Fatalf("%+v", res.Paths)
			}
			if i == 0 {
				first = res.Paths
			} else if fmt.Sprint(first) != fmt.Sprint(res.Paths) {
				t.Fatalf("names change between runs: %v, %v", first, res.Paths)
			}
			notes := strings.Join(res.Notes, "\n")
			for _, want := range []string{
				"docs: your checkout has a directory holding docs/notes.txt (untracked) at docs; the session has a regular file there (the session replaced the directory with the file, and you changed files in it); your directory is kept; the session's file is " + filepath.Join(r.sess.Worktree, "docs") + "; to take the session's instead: mv " + filepath.Join(r.checkout, "docs") + " " + filepath.Join(r.checkout, "docs.mine") + " && cp -p " + filepath.Join(r.sess.Worktree, "docs") + " " + filepath.Join(r.checkout, "docs"),
				"localdir: your checkout has a directory holding localdir/x (untracked) at localdir; the session has a regular file there (both created it); your directory is kept",
			} {
				if !strings.Contains(notes, want) {
					t.Fatalf("notes %q\nwant %q", notes, want)
				}
			}
			if msg := err.Error(); !strings.Contains(msg, "2 paths conflict: docs, localdir;") {
				t.Fatalf("%v", err)
			}
		}

		// Markers: each keeps the checkout's directory, no file is
		// written under a made-up name, and undo is exact.
		res, err := Apply(ctx, r.sess, ApplyOptions{OnConflict: OnConflictMarkers})
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("%v", err)
		}
		noTilde(t, res, err, r.checkout)
		if read(t, r.checkout, "docs/notes.txt") != "mine\n" || read(t, r.checkout, "localdir/x") != "x\n" {
			t.Fatal("the checkout's directories were not kept")
		}
		if _, err := Undo(ctx, r.sess, UndoOptions{}); err != nil {
			t.Fatal(err)
		}
		if d := diffManifests(before, manifest(t, r.checkout)); d != "" {
			t.Fatal(d)
		}
	})
	t.Run("the session's directory over the checkout's file", func(t *testing.T) {
		r := newRig(t, map[string]string{"cfg": "base\n", "f.txt": "f\n"})
		write(t, r.checkout, "cfg", "mine\n")
		write(t, r.checkout, "tool", "my tool\n")
		remove(t, r.sess.Worktree, "cfg")
		write(t, r.sess.Worktree, "cfg/a.toml", "a\n")
		write(t, r.sess.Worktree, "tool/main.go", "package main\n")
		write(t, r.sess.Worktree, "f.txt", "session f\n")
		res, err := Apply(ctx, r.sess, ApplyOptions{DryRun: true})
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("%v", err)
		}
		noTilde(t, res, err, r.checkout)
		o := outcomes(res)
		if o["cfg"] != OutcomeConflict || o["tool"] != OutcomeConflict || o["f.txt"] != OutcomeClean || len(o) != 3 {
			// cfg/a.toml and tool/main.go are not applied: the notes
			// name them, no outcome claims they were.
			t.Fatalf("%+v", res.Paths)
		}
		notes := strings.Join(res.Notes, "\n")
		for _, want := range []string{
			"cfg: your checkout has a regular file at cfg; the session has a directory holding cfg/a.toml there (the session replaced the file with the directory, and you changed the file); your file is kept; the session's files are in " + filepath.Join(r.sess.Worktree, "cfg") + "/; to take the session's instead: mv " + filepath.Join(r.checkout, "cfg") + " " + filepath.Join(r.checkout, "cfg.mine") + " && cp -R " + filepath.Join(r.sess.Worktree, "cfg") + " " + filepath.Join(r.checkout, "cfg"),
			"tool: your checkout has a regular file at tool; the session has a directory holding tool/main.go there (both created it); your file is kept",
		} {
			if !strings.Contains(notes, want) {
				t.Fatalf("notes %q\nwant %q", notes, want)
			}
		}
		res, err = Apply(ctx, r.sess, ApplyOptions{OnConflict: OnConflictMarkers})
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("%v", err)
		}
		noTilde(t, res, err, r.checkout)
		if read(t, r.checkout, "cfg") != "mine\n" || read(t, r.checkout, "tool") != "my tool\n" || read(t, r.checkout, "f.txt") != "session f\n" {
			t.Fatalf("%+v", res)
		}
	})
}

func TestApplyDirectoryOfIgnoredFilesInTheWay(t *testing.T) {
	r := newRig(t, map[string]string{".gitignore": "*.log\n", "a.txt": "a\n", "keep/tracked.txt": "t\n"})
	write(t, r.sess.Worktree, "out", "the session's file\n")
	write(t, r.checkout, "out/x.log", "ignored\n")
	// A directory whose captured files the session deletes is no
	// obstacle; one that also holds an ignored file is.
	remove(t, r.sess.Worktree, "keep/tracked.txt")
	remove(t, r.sess.Worktree, "keep")
	write(t, r.sess.Worktree, "keep", "now a file\n")
	before := manifest(t, r.checkout)
	for _, dry := range []bool{true, false} {
		res, err := Apply(ctx, r.sess, ApplyOptions{DryRun: dry})
		var ite *InTheWayError
		if !errors.As(err, &ite) || !strings.Contains(err.Error(), "the session creates a file out where your checkout has a directory holding out/x.log") {
			t.Fatalf("dry run %v: %v", dry, err)
		}
		if o := outcomes(res); o["out"] != OutcomeInTheWay || o["keep"] == OutcomeInTheWay {
			t.Fatalf("dry run %v: %+v", dry, res.Paths)
		}
	}
	if d := diffManifests(before, manifest(t, r.checkout)); d != "" {
		t.Fatal(d)
	}
	// Moved away, it applies.
	remove(t, r.checkout, "out/x.log")
	if _, err := Apply(ctx, r.sess, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if read(t, r.checkout, "out") != "the session's file\n" || read(t, r.checkout, "keep") != "now a file\n" {
		t.Fatal("not applied")
	}
}

// TestInPlaceWork: the work of a session in place counts from its first
// turn's start, and its paths are those its turns changed between their
// start and end captures, each once; a turn whose end was not captured
// adds none.
func TestInPlaceWork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, map[string]string{"a.txt": "a\n"})
	eng := r.sess.Engine
	capture := func(name string) string {
		t.Helper()
		s, err := eng.Capture(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return s.Tree
	}
	cp1 := capture("cp1")
	write(t, r.sess.Worktree, "a.txt", "one\n")
	end1 := capture("end-cp1")
	cp2 := capture("cp2")
	write(t, r.sess.Worktree, "b.txt", "never captured\n")
	cp3 := capture("cp3")
	write(t, r.sess.Worktree, "a.txt", "three\n")
	write(t, r.sess.Worktree, "c.txt", "c\n")
	end3 := capture("end-cp3")

	s := r.sess
	s.Base, s.InPlace = "", true
	got, err := InPlaceWork(ctx, s, []Turn{{Start: cp1, End: end1}, {Start: cp2}, {Start: cp3, End: end3}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Base != cp1 || strings.Join(got.Paths, ",") != "a.txt,c.txt" {
		t.Fatalf("base %s (want %s), paths %q", got.Base, cp1, got.Paths)
	}
}

// CheckIdleIn finds an operation in progress where git keeps it, in the
// worktree's own git directory, as CheckIdle (which asks git) does: in a
// main checkout and in a linked worktree, whose operations live under
// .git/worktrees/<name>, and never in the other's.
func TestCheckIdleInFindsWhatGitDoes(t *testing.T) {
	main := gittest.NewRepo(t)
	gittest.WriteFile(t, main, "a.txt", "a\n")
	gittest.Commit(t, main, "a")
	linked := filepath.Join(t.TempDir(), "linked")
	gittest.Git(t, main, "worktree", "add", "-q", "--detach", linked)
	gitDir := func(dir string) string {
		return strings.TrimSpace(gittest.Git(t, dir, "rev-parse", "--absolute-git-dir"))
	}
	for _, name := range busyNames {
		for _, co := range []string{main, linked} {
			other := linked
			if co == linked {
				other = main
			}
			p := filepath.Join(gitDir(co), name)
			if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, dir := range []string{co, other} {
				want := CheckIdle(ctx, dir, false)
				got := CheckIdleIn(dir, gitDir(dir))
				if (want == nil) != (got == nil) || dir == co && !errors.Is(got, ErrCheckoutBusy) {
					t.Fatalf("%s in %s: CheckIdleIn(%s) = %v, CheckIdle = %v", name, co, dir, got, want)
				}
				if got != nil && got.Error() != want.Error() {
					t.Fatalf("%s: CheckIdleIn says %q, CheckIdle %q", name, got, want)
				}
			}
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
	}
}
