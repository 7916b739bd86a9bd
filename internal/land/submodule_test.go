package land

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// newSubmoduleRig is a checkout with an initialised submodule at mods/sub
// and a session worktree, where git leaves the submodule uninitialised (an
// empty directory).
func newSubmoduleRig(t *testing.T) *rig {
	t.Helper()
	sub := gittest.NewRepo(t)
	repo := gittest.NewRepo(t)
	gittest.Git(t, repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "mods/sub")
	base := gittest.Commit(t, repo, "add a submodule")
	r := attachSession(t, repo, base, "s_sub")
	if entries, err := os.ReadDir(filepath.Join(r.sess.Worktree, "mods", "sub")); err != nil || len(entries) != 0 {
		t.Fatalf("the session worktree's submodule directory holds %v (%v); want it empty", entries, err)
	}
	return r
}

// A session that writes into its (uninitialised) submodule directory: the
// files there and the gitlink's absence are left out of diff, apply, undo
// and commit, and the note says so.
func TestSubmodulesLeftOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newSubmoduleRig(t)
	write(t, r.sess.Worktree, "mods/sub/new.txt", "x\n")
	write(t, r.sess.Worktree, "README.md", "hello\nmore\n")

	for _, format := range []DiffFormat{FormatPatch, FormatStat, FormatNameStatus} {
		d, err := Diff(ctx, r.sess, DiffOptions{Format: format})
		if err != nil {
			t.Fatalf("Diff %s: %v", format, err)
		}
		if want := []PathChange{{Path: "README.md", Change: "modified"}}; !reflect.DeepEqual(d.Paths, want) {
			t.Errorf("Diff %s paths = %+v, want %+v", format, d.Paths, want)
		}
		if strings.Contains(d.Text, "mods/sub") {
			t.Errorf("Diff %s text names the submodule:\n%s", format, d.Text)
		}
		if d.Stat.Files != 1 {
			t.Errorf("Diff %s stat = %+v", format, d.Stat)
		}
		if len(d.Notes) != 1 || !strings.Contains(d.Notes[0], "mods/sub is a submodule") || !strings.Contains(d.Notes[0], "mods/sub/new.txt") {
			t.Errorf("Diff %s notes = %q", format, d.Notes)
		}
	}

	before := manifest(t, r.checkout)
	res, err := Apply(ctx, r.sess, ApplyOptions{})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if want := []PathOutcome{{Path: "README.md", Outcome: OutcomeClean}}; !reflect.DeepEqual(res.Paths, want) || res.Written != 1 {
		t.Errorf("Apply paths = %+v written %d, want %+v written 1", res.Paths, res.Written, want)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "mods/sub is a submodule") {
		t.Errorf("Apply notes = %q", res.Notes)
	}
	if _, err := os.Lstat(filepath.Join(r.checkout, "mods", "sub", "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("mods/sub/new.txt reached the checkout's submodule: %v", err)
	}
	if got := read(t, r.checkout, "README.md"); got != "hello\nmore\n" {
		t.Errorf("README.md = %q", got)
	}

	u, err := Undo(ctx, r.sess, UndoOptions{})
	if err != nil {
		t.Fatalf("Undo: %v", err)
	}
	if !reflect.DeepEqual(u.Paths, []string{"README.md"}) || len(u.Overwrote) != 0 {
		t.Errorf("Undo = paths %q overwrote %q", u.Paths, u.Overwrote)
	}
	if d := diffManifests(before, manifest(t, r.checkout)); d != "" {
		t.Errorf("undo left the checkout different:\n%s", d)
	}

	c, err := Commit(ctx, r.sess, CommitOptions{Message: "work"})
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if got := gittest.Git(t, r.sess.Worktree, "show", "--name-status", "--format=", c.Commit); got != "M\tREADME.md" {
		t.Errorf("committed %q, want only README.md", got)
	}
	if got := gittest.Git(t, r.sess.Worktree, "ls-tree", c.Commit, "mods/sub"); !strings.HasPrefix(got, "160000 commit ") {
		t.Errorf("the commit's mods/sub = %q, want the gitlink kept", got)
	}
}

// An apply journaled by an older version listed paths inside the
// checkout's submodule that were never written: undo does not count them
// as edited since.
func TestUndoSkipsPathsInNestedRepositories(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newSubmoduleRig(t)
	write(t, r.sess.Worktree, "README.md", "hello\nmore\n")
	if _, err := Apply(ctx, r.sess, ApplyOptions{}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	c, _, err := openCheckout(ctx, r.sess.DataDir, r.sess.ID, r.checkout, r.sess.Worktree)
	if err != nil {
		t.Fatal(err)
	}
	rec, ok := c.j.lastApplied(r.sess.ID)
	if !ok {
		t.Fatal("no apply journaled")
	}
	rec.Paths = append(rec.Paths, "mods/sub/new.txt")
	rec.After, err = editTree(ctx, git.New(r.checkout), c.scratch, rec.After, []edit{{"mods/sub/new.txt", entry{"100644", gittest.Git(t, r.checkout, "hash-object", "-w", "README.md")}}})
	if err != nil {
		t.Fatal(err)
	}
	rec.N++
	rec.Type = recApplyStarted
	if err := c.j.append(*rec); err != nil {
		t.Fatal(err)
	}
	done := record{Type: recApplyDone, SessionID: rec.SessionID, N: rec.N, Target: rec.Target, After: rec.After}
	if err := c.j.append(done); err != nil {
		t.Fatal(err)
	}
	c.close()
	u, err := Undo(ctx, r.sess, UndoOptions{})
	if err != nil {
		t.Fatalf("Undo: %v", err)
	}
	if !reflect.DeepEqual(u.Paths, []string{"README.md"}) {
		t.Errorf("Undo paths = %q", u.Paths)
	}
}

// A nested repository in the checkout (a clone the user keeps inside it):
// what the session has at that path gets no outcome, is not written or
// counted, and the note says so, in the dry run as in the apply.
func TestApplyLeavesNestedRepositoryAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, map[string]string{"a.txt": "a\n"})
	gittest.Git(t, r.checkout, "init", "-q", "vendor/x")
	write(t, r.checkout, "vendor/x/own.txt", "user's\n")
	write(t, r.sess.Worktree, "vendor/x/file.txt", "session\n")
	write(t, r.sess.Worktree, "a.txt", "a2\n")
	for _, dry := range []bool{true, false} {
		res, err := Apply(ctx, r.sess, ApplyOptions{DryRun: dry})
		if err != nil {
			t.Fatalf("Apply (dry run %v): %v", dry, err)
		}
		if want := []PathOutcome{{Path: "a.txt", Outcome: OutcomeClean}}; !reflect.DeepEqual(res.Paths, want) {
			t.Errorf("Apply (dry run %v) paths = %+v, want %+v", dry, res.Paths, want)
		}
		if !strings.Contains(strings.Join(res.Notes, "\n"), "left alone: vendor/x is a nested repository") {
			t.Errorf("Apply (dry run %v) notes = %q", dry, res.Notes)
		}
		if !dry && res.Written != 1 {
			t.Errorf("written = %d, want 1", res.Written)
		}
	}
	if _, err := os.Lstat(filepath.Join(r.checkout, "vendor", "x", "file.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("vendor/x/file.txt was written into the nested repository: %v", err)
	}
	if u, err := Undo(ctx, r.sess, UndoOptions{}); err != nil || !reflect.DeepEqual(u.Paths, []string{"a.txt"}) {
		t.Fatalf("Undo = %+v, %v", u, err)
	}
}
