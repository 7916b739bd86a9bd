package snapshot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

func blobAt(t *testing.T, dir, tree, path string) string {
	t.Helper()
	return gittest.Git(t, dir, "cat-file", "-p", tree+":"+path)
}

func treePaths(t *testing.T, dir, tree string) []string {
	t.Helper()
	out := gittest.Git(t, dir, "ls-tree", "-r", "--name-only", tree)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

func TestCaptureLeavesRepositoryAlone(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	sh(t, wt, `printf 'a\n' > a.txt; git add a.txt; printf 'staged-then-edited\n' > a.txt; printf 'u\n' > untracked.txt; printf 'mod\n' >> README.md`)
	gitDir := filepath.Join(wt, ".git")
	before, files := gitState(t, gitDir), manifest(t, wt)
	st, _ := os.Stat(filepath.Join(gitDir, "index"))
	e := openEngine(t, wt)
	var last Snapshot
	for i := 0; i < 3; i++ {
		last = capture(t, e, fmt.Sprintf("cp%d", i+1))
	}
	sameState(t, before, gitState(t, gitDir))
	if d := diffManifests(files, manifest(t, wt)); d != "" {
		t.Fatalf("capture changed the worktree:\n%s", d)
	}
	if st2, _ := os.Stat(filepath.Join(gitDir, "index")); !st2.ModTime().Equal(st.ModTime()) {
		t.Fatal("real index was rewritten")
	}
	if got := blobAt(t, wt, last.Tree, "a.txt"); got != "staged-then-edited" {
		t.Fatalf("a.txt in snapshot = %q, want the bytes on disk", got)
	}
	if got := blobAt(t, wt, last.Tree, "untracked.txt"); got != "u" {
		t.Fatalf("untracked.txt = %q", got)
	}
	if got := gittest.Git(t, wt, "rev-parse", "refs/yolop/checkpoints/s_test/cp3^{tree}"); got != last.Tree {
		t.Fatalf("ref points at %s, want tree %s", got, last.Tree)
	}
	if got := gittest.Git(t, wt, "cat-file", "-t", "refs/yolop/checkpoints/s_test/cp3"); got != "tree" {
		t.Fatalf("ref points at a %s, want a tree", got)
	}
}

func countObjects(t *testing.T, dir string) string {
	t.Helper()
	var keep []string
	for _, l := range strings.Split(gittest.Git(t, dir, "count-objects", "-v"), "\n") {
		if strings.HasPrefix(l, "count:") || strings.HasPrefix(l, "in-pack:") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, " ")
}

func TestUnchangedCapturesAddNoObjects(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	sh(t, wt, `mkdir -p a/b; printf 'x\n' > a/b/c; printf 'y\n' > new.txt; printf 'z\n' >> README.md`)
	e := openEngine(t, wt)
	first := capture(t, e, "cp1")
	objs := countObjects(t, wt)
	for i := 0; i < 100; i++ {
		if s := capture(t, e, "cp"+strconv.Itoa(i+2)); s.Tree != first.Tree {
			t.Fatalf("capture %d: tree %s, want %s", i, s.Tree, first.Tree)
		}
	}
	if got := countObjects(t, wt); got != objs {
		t.Fatalf("objects went from %q to %q", objs, got)
	}
	refs, err := ListRefs(context.Background(), wt, "s_test")
	if err != nil || len(refs) != 101 {
		t.Fatalf("ListRefs = %d refs, %v; want 101", len(refs), err)
	}
}

func TestEmptyDirsAndSeedEdgeCases(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	// Tracked files under a blocklisted directory, an assume-unchanged and
	// a skip-worktree file whose edits git would otherwise not see.
	sh(t, wt, `mkdir -p dist lib; printf 'bundle\n' > dist/app.js; printf 'one\n' > lib/au.txt; printf 'two\n' > lib/sw.txt
git add -A; git commit -qm more
git update-index --assume-unchanged lib/au.txt; git update-index --skip-worktree lib/sw.txt
printf 'ONE\n' > lib/au.txt; printf 'TWO\n' > lib/sw.txt
# Same size, same second as the real index: only a preserved index mtime
# lets git notice (racily clean).
printf 'hello\n' > README.md; git add README.md; printf 'HELLO\n' > README.md
mkdir -p empty/deeper`)
	e := openEngine(t, wt)
	s := capture(t, e, "cp1")
	for path, want := range map[string]string{"lib/au.txt": "ONE", "lib/sw.txt": "TWO", "README.md": "HELLO"} {
		if got := blobAt(t, wt, s.Tree, path); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	for _, p := range treePaths(t, wt, s.Tree) {
		if strings.HasPrefix(p, "dist/") || strings.HasPrefix(p, "empty") {
			t.Errorf("snapshot holds %q", p)
		}
	}
	// Blocklisted tracked files are left alone by a restore too.
	sh(t, wt, `printf 'rebuilt\n' > dist/app.js; printf 'x\n' > lib/new.txt`)
	cur := capture(t, e, "r1")
	if _, err := e.Restore(context.Background(), cur, s.Tree); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(wt, "dist/app.js")); string(b) != "rebuilt\n" {
		t.Fatalf("dist/app.js = %q, restore touched a blocklisted path", b)
	}
	if _, err := os.Stat(filepath.Join(wt, "empty/deeper")); err != nil {
		t.Fatalf("empty directory was removed: %v", err)
	}
}

func TestByteExactWithConversions(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	gittest.Git(t, wt, "config", "core.autocrlf", "true")
	sh(t, wt, `printf '* text eol=crlf\n' > .gitattributes; printf 'a\nb\n' > committed.txt; git add -A; git commit -qm attrs
rm committed.txt; git checkout -- committed.txt
printf 'crlf\r\nfile\r\n' > crlf.txt; printf 'lf\nfile\n' > lf.txt; printf 'mixed\r\nx\n' > mixed.txt`)
	want := map[string]string{}
	for _, f := range []string{"committed.txt", "crlf.txt", "lf.txt", "mixed.txt"} {
		b, err := os.ReadFile(filepath.Join(wt, f))
		if err != nil {
			t.Fatal(err)
		}
		want[f] = string(b)
	}
	if !strings.Contains(want["committed.txt"], "\r\n") {
		t.Fatalf("checkout did not convert (setup): %q", want["committed.txt"])
	}
	e := openEngine(t, wt)
	s := capture(t, e, "cp1")
	for f, w := range want {
		out, err := exec.Command("git", "-C", wt, "cat-file", "blob", s.Tree+":"+f).Output()
		if err != nil || string(out) != w {
			t.Errorf("blob %s = %q, %v; want the disk bytes %q", f, out, err, w)
		}
	}
	sh(t, wt, `printf 'changed\n' > crlf.txt; printf 'changed\r\n' > lf.txt; rm mixed.txt committed.txt`)
	cur := capture(t, e, "r1")
	if _, err := e.Restore(context.Background(), cur, s.Tree); err != nil {
		t.Fatal(err)
	}
	for f, w := range want {
		if b, _ := os.ReadFile(filepath.Join(wt, f)); string(b) != w {
			t.Errorf("%s restored as %q, want %q", f, b, w)
		}
	}
}

func TestDetachedHeadAndLinkedWorktree(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t)
	wt := filepath.Join(t.TempDir(), "linked")
	gittest.Git(t, repo, "worktree", "add", "-q", "--detach", wt)
	wtGitDir := gittest.Git(t, wt, "rev-parse", "--absolute-git-dir")
	sh(t, wt, `printf 'x\n' > x.txt; printf 'more\n' >> README.md`)
	before, mainBefore := gitState(t, wtGitDir), gitState(t, filepath.Join(repo, ".git"))
	e := openEngine(t, wt)
	cp := capture(t, e, "cp1")
	want := manifest(t, wt)
	sh(t, wt, `rm x.txt; printf 'y\n' > y.txt; git add y.txt`)
	cur := capture(t, e, "r1")
	if _, err := e.Restore(context.Background(), cur, cp.Tree); err != nil {
		t.Fatal(err)
	}
	if d := diffManifests(want, manifest(t, wt)); d != "" {
		t.Fatalf("linked worktree not restored:\n%s", d)
	}
	// The agent's `git add y.txt` changed the worktree's index; restore did not.
	after := gitState(t, wtGitDir)
	delete(before, "index")
	delete(after, "index")
	sameState(t, before, after)
	mainAfter := gitState(t, filepath.Join(repo, ".git"))
	for k := range mainAfter {
		if strings.HasPrefix(k, "worktrees/") {
			delete(mainAfter, k)
		}
	}
	sameState(t, mainBefore, mainAfter)
	// Refs are shared by the repository: visible from the main worktree.
	refs, err := ListRefs(context.Background(), repo, "s_test")
	if err != nil || !reflect.DeepEqual(refs, []string{RefPrefix + "s_test/cp1", RefPrefix + "s_test/r1"}) {
		t.Fatalf("ListRefs from main worktree = %q, %v", refs, err)
	}
}

func TestNestedRepositoriesAndSubmodulesLeftAlone(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	lib := gittest.NewRepo(t)
	gittest.Git(t, wt, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "sub")
	gittest.Commit(t, wt, "add submodule")
	sh(t, wt, `mkdir nested; cd nested; git init -q; printf 'inner\n' > f.txt`)
	e := openEngine(t, wt)
	cp := capture(t, e, "cp1")
	for _, p := range treePaths(t, wt, cp.Tree) {
		if strings.HasPrefix(p, "nested") || strings.HasPrefix(p, "sub") {
			t.Errorf("snapshot holds %q", p)
		}
	}
	sh(t, wt, `printf 'changed\n' > nested/f.txt; printf 'changed\n' > sub/README.md; printf 'n\n' > new.txt`)
	nested, sub := manifest(t, filepath.Join(wt, "nested")), manifest(t, filepath.Join(wt, "sub"))
	cur := capture(t, e, "r1")
	res, err := e.Restore(context.Background(), cur, cp.Tree)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 1 || res.Changes[0].Path != "new.txt" {
		t.Fatalf("changes = %+v, want only new.txt", res.Changes)
	}
	if d := diffManifests(nested, manifest(t, filepath.Join(wt, "nested"))); d != "" {
		t.Errorf("nested repository touched:\n%s", d)
	}
	if d := diffManifests(sub, manifest(t, filepath.Join(wt, "sub"))); d != "" {
		t.Errorf("submodule touched:\n%s", d)
	}
}

func TestDiffKinds(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	sh(t, wt, `printf 'm\n' > mod; printf 'x\n' > exe; printf 'd\n' > del; printf 'l\n' > link`)
	e := openEngine(t, wt)
	a := capture(t, e, "")
	sh(t, wt, `printf 'M\n' > mod; chmod +x exe; rm del link; ln -s mod link; printf 'n\n' > add`)
	b := capture(t, e, "")
	ch, err := e.Diff(context.Background(), a.Tree, b.Tree)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range ch {
		got = append(got, fmt.Sprintf("%s %s %s>%s", c.Path, c.Kind, c.OldMode, c.NewMode))
	}
	want := []string{"add added >100644", "del deleted 100644>", "exe mode_changed 100644>100755", "link type_changed 100644>120000", "mod modified 100644>100644"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Diff =\n%q\nwant\n%q", got, want)
	}
}

// TestDiffMissingObject: a diff against a tree the repository no longer
// holds fails with a *MissingObjectError naming it (found by git's exit
// status, not its words); any other failure does not.
func TestDiffMissingObject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wt := gittest.NewRepo(t)
	e := openEngine(t, wt)
	a := capture(t, e, "")
	gone := strings.Repeat("ab", 20)
	_, err := e.Diff(ctx, a.Tree, gone)
	var me *MissingObjectError
	if !errors.As(err, &me) || me.OID != gone || !strings.Contains(err.Error(), "snapshot: diff ") {
		t.Fatalf("Diff to a missing tree: %v", err)
	}
	// A name that is not an object id, or an object that is no tree.
	blob := strings.TrimSpace(gittest.Git(t, wt, "hash-object", "-w", "--stdin"))
	for _, bad := range []string{"not-a-tree", blob} {
		if _, err := e.Diff(ctx, a.Tree, bad); err == nil || errors.As(err, &me) {
			t.Errorf("Diff to %q: %v, want an error that is no MissingObjectError", bad, err)
		}
	}
}

func TestOpenAndCaptureErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	bare := filepath.Join(t.TempDir(), "bare.git")
	gittest.Git(t, repo, "clone", "-q", "--bare", repo, bare)
	state := func() string { return filepath.Join(t.TempDir(), "state") }
	os.MkdirAll(filepath.Join(repo, "subdir"), 0o755)
	cases := []struct {
		name string
		o    Options
		want error
	}{
		{"no commits", Options{Worktree: gittest.NewEmptyRepo(t), SessionID: "s1", StateDir: state()}, ErrNoCommits},
		{"bare", Options{Worktree: bare, SessionID: "s1", StateDir: state()}, ErrBare},
		{"not a repository", Options{Worktree: t.TempDir(), SessionID: "s1", StateDir: state()}, ErrNotRepo},
		{"not the top level", Options{Worktree: filepath.Join(repo, "subdir"), SessionID: "s1", StateDir: state()}, ErrNotTopLevel},
		{"bad session id", Options{Worktree: repo, SessionID: "../x", StateDir: state()}, ErrBadName},
	}
	for _, tc := range cases {
		_, err := Open(ctx, tc.o)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: Open error = %v, want %v", tc.name, err, tc.want)
		}
		var ce *CaptureError
		if tc.want != ErrBadName && tc.want != ErrNotTopLevel && (!errors.As(err, &ce) || ce.Reason == "") {
			t.Errorf("%s: want a *CaptureError with a reason, got %#v", tc.name, err)
		}
	}
	if _, err := Open(ctx, Options{Worktree: repo, SessionID: "s1", StateDir: filepath.Join(repo, ".yolop")}); err == nil || !strings.Contains(err.Error(), "inside the worktree") {
		t.Errorf("state dir inside the worktree: %v", err)
	}
	e := openEngine(t, repo)
	if _, err := e.Capture(ctx, "bad/name"); !errors.Is(err, ErrBadName) {
		t.Errorf("bad snapshot name: %v", err)
	}
}

func TestCaptureLockAndBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wt := gittest.NewRepo(t)
	e := openEngine(t, wt)
	capture(t, e, "cp1")
	// The real index.lock (an agent's git command running) does not block a
	// capture: it never touches the real index.
	if err := os.WriteFile(filepath.Join(wt, ".git", "index.lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sh(t, wt, `printf 'x\n' > x.txt`)
	capture(t, e, "cp2")
	os.Remove(filepath.Join(wt, ".git", "index.lock"))
	// A held private index lock is a clear, labelled failure after retries.
	// (Planted once the engine's own background index update is done: the
	// lock stands for a process that died, which never runs beside it.)
	e.Wait()
	if err := os.WriteFile(e.privIndex+".lock", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sh(t, wt, `printf 'y\n' > y.txt`)
	_, err := e.Capture(ctx, "cp3")
	var ce *CaptureError
	if !errors.Is(err, ErrLocked) || !errors.As(err, &ce) || !strings.Contains(ce.Reason, "locked") {
		t.Fatalf("capture with held lock: %v", err)
	}
	if _, rerr := e.ResolveRef(ctx, "cp3"); !errors.Is(rerr, ErrNoRef) {
		t.Fatalf("a failed capture left a ref: %v", rerr)
	}
	// Reopening (after a crash) clears the lock the dead process left.
	reopened, err := Open(ctx, Options{Worktree: wt, SessionID: "s_test", StateDir: e.stateDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reopened.Wait)
	capture(t, reopened, "cp3")
	// Over budget: a capture error, never a tree.
	e.budget = time.Nanosecond
	s, err := e.Capture(ctx, "cp4")
	if !errors.Is(err, ErrBudget) || !errors.As(err, &ce) || s.Tree != "" {
		t.Fatalf("over budget: %+v, %v", s, err)
	}
	e.budget = DefaultBudget
	if got := capture(t, e, "cp5"); len(treePaths(t, wt, got.Tree)) != 3 {
		t.Fatalf("capture after failures: %q", treePaths(t, wt, got.Tree))
	}
}

func TestRefs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wt := gittest.NewRepo(t)
	gittest.Git(t, wt, "tag", "v1")
	gittest.Git(t, wt, "branch", "feature")
	e := openEngine(t, wt)
	other, err := Open(ctx, Options{Worktree: wt, SessionID: "s_other", StateDir: filepath.Join(t.TempDir(), "st")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Wait)
	a := capture(t, e, "cp1")
	capture(t, e, "end-cp1")
	capture(t, other, "cp1")
	if got, err := e.ResolveRef(ctx, "cp1"); err != nil || got != a.Tree {
		t.Fatalf("ResolveRef = %s, %v", got, err)
	}
	if _, err := e.ResolveRef(ctx, "cp9"); !errors.Is(err, ErrNoRef) {
		t.Fatalf("missing ref: %v", err)
	}
	if err := e.DeleteRef(ctx, "end-cp1"); err != nil {
		t.Fatal(err)
	}
	if err := e.DeleteRef(ctx, "end-cp1"); err != nil {
		t.Fatalf("deleting a missing ref: %v", err)
	}
	user := gittest.Git(t, wt, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags")
	n, err := DeleteSessionRefs(ctx, wt, "s_test")
	if err != nil || n != 1 {
		t.Fatalf("DeleteSessionRefs = %d, %v", n, err)
	}
	if refs, _ := ListRefs(ctx, wt, "s_test"); len(refs) != 0 {
		t.Fatalf("left %q", refs)
	}
	if refs, _ := ListRefs(ctx, wt, "s_other"); len(refs) != 1 {
		t.Fatalf("other session's refs = %q", refs)
	}
	if got := gittest.Git(t, wt, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags"); got != user {
		t.Fatalf("user refs changed:\n%s\n%s", user, got)
	}
	if n, err := DeleteSessionRefs(ctx, wt, "s_none"); n != 0 || err != nil {
		t.Fatalf("no refs: %d, %v", n, err)
	}
}
