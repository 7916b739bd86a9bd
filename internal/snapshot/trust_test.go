package snapshot

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// A directory captured as plain files and later replaced by a nested
// repository is left alone by a restore of the older snapshot: its
// committed and untracked files stay exactly as they are, and verification
// compares the worktree with the target minus that subtree.
func TestRestoreLeavesDirectoryTurnedNestedRepoAlone(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	e := openEngine(t, wt)
	ctx := context.Background()
	// Turn A creates lib2/a.txt and lib2/b.txt.
	sh(t, wt, "mkdir lib2 && echo A > lib2/a.txt && echo B > lib2/b.txt && echo top > top.txt")
	cpB := capture(t, e, "cp2") // before turn B
	// Turn B replaces lib2 with a repository: committed a.txt, untracked u.txt.
	sh(t, wt, `rm -rf lib2 && mkdir lib2 && cd lib2 && git init -q && echo nested > a.txt &&
		git add a.txt && git -c user.name=t -c user.email=t@t commit -qm nested && echo u > u.txt && cd .. && echo changed > top.txt`)
	before := manifest(t, filepath.Join(wt, "lib2"))

	cur := capture(t, e, "r1")
	if out := gittest.Git(t, wt, "ls-tree", "-r", "--name-only", cur.Tree); strings.Contains(out, "lib2") {
		t.Fatalf("the capture after lib2 became a repository still holds it:\n%s", out)
	}
	if got := e.NestedRepos(); len(got) != 1 || got[0] != "lib2" {
		t.Fatalf("NestedRepos = %q, want [lib2]", got)
	}
	ex, err := e.Excluded(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !contains(ex, "lib2/") {
		t.Errorf("Excluded = %q, want it to name lib2/", ex)
	}
	changes, err := e.Diff(ctx, cur.Tree, cpB.Tree)
	if err != nil {
		t.Fatal(err)
	}
	apply, alone := e.LeftAlone(changes)
	if len(alone) != 1 || alone[0] != "lib2" {
		t.Errorf("LeftAlone = %q, want [lib2]", alone)
	}
	for _, c := range apply {
		if strings.HasPrefix(c.Path, "lib2/") {
			t.Errorf("a change inside the nested repository would be applied: %+v", c)
		}
	}

	res, err := e.Restore(ctx, cur, cpB.Tree)
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if len(res.LeftAlone) != 1 || res.LeftAlone[0] != "lib2" {
		t.Errorf("RestoreResult.LeftAlone = %q", res.LeftAlone)
	}
	if d := diffManifests(before, manifest(t, filepath.Join(wt, "lib2"))); d != "" {
		t.Errorf("the nested repository was touched:\n%s", d)
	}
	if b, _ := os.ReadFile(filepath.Join(wt, "top.txt")); string(b) != "top\n" {
		t.Errorf("top.txt = %q, want it restored", b)
	}
	// The nested repository's own state is intact.
	if st := gittest.Git(t, filepath.Join(wt, "lib2"), "status", "--porcelain"); st != "?? u.txt" {
		t.Errorf("nested status = %q", st)
	}
}

// A submodule-like nested repository that appears inside a captured
// directory keeps the rest of the directory captured.
func TestCaptureSkipsNestedRepoBelowCapturedDir(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	e := openEngine(t, wt)
	sh(t, wt, "mkdir -p pkg/vendor && echo x > pkg/x.txt && echo v > pkg/vendor/v.txt")
	capture(t, e, "c1")
	sh(t, wt, "cd pkg/vendor && git init -q")
	s := capture(t, e, "c2")
	out := gittest.Git(t, wt, "ls-tree", "-r", "--name-only", s.Tree)
	if !strings.Contains(out, "pkg/x.txt") || strings.Contains(out, "pkg/vendor") {
		t.Fatalf("tree = %q, want pkg/x.txt and nothing under pkg/vendor", out)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// A file captured 0600 and deleted comes back 0600, not 0644; one opened up
// after the capture is narrowed again; an exec file keeps a narrow mode.
func TestRestoreKeepsNarrowPermissions(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	e := openEngine(t, wt)
	ctx := context.Background()
	sh(t, wt, "echo s > secret.key && chmod 600 secret.key && echo k > kept.key && chmod 600 kept.key && echo x > run.sh && chmod 700 run.sh && echo o > open.txt && chmod 664 open.txt")
	cp := capture(t, e, "cp1")
	sh(t, wt, "rm secret.key run.sh && chmod 644 kept.key")
	cur := capture(t, e, "r1")
	if _, err := e.Restore(ctx, cur, cp.Tree); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	for name, want := range map[string]fs.FileMode{"secret.key": 0o600, "kept.key": 0o600, "run.sh": 0o700, "open.txt": 0o664} {
		st, err := os.Lstat(filepath.Join(wt, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", name, got, want)
		}
	}
	// The record goes with the snapshot refs.
	if out := gittest.Git(t, wt, "for-each-ref", "--format=%(refname)", ModesRefPrefix); !strings.Contains(out, ModesRefPrefix+"s_test/cp1") {
		t.Errorf("no permission record beside cp1: %q", out)
	}
	if _, err := DeleteSessionRefs(ctx, wt, "s_test"); err != nil {
		t.Fatal(err)
	}
	if out := gittest.Git(t, wt, "for-each-ref", "refs/yolop/"); out != "" {
		t.Errorf("refs left after DeleteSessionRefs: %q", out)
	}
}

// An ignored file's permissions are not part of the snapshot's record.
func TestPermissionRecordSkipsIgnored(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	e := openEngine(t, wt)
	sh(t, wt, "echo '*.env' > .gitignore && echo s > a.env && chmod 600 a.env && echo s > b.key && chmod 600 b.key")
	capture(t, e, "cp1")
	blob := gittest.Git(t, wt, "cat-file", "blob", ModesRefPrefix+"s_test/cp1")
	if !strings.Contains(blob, "b.key") || strings.Contains(blob, "a.env") {
		t.Errorf("record = %q, want b.key and not a.env", blob)
	}
}

// Everything the engine writes in its state directory is owner-only.
func TestStateDirIsOwnerOnly(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	e := openEngine(t, wt)
	for i := 0; i < 3; i++ {
		sh(t, wt, "echo $RANDOM >> f.txt")
		capture(t, e, "")
	}
	e.Wait()
	capture(t, e, "")
	e.Wait()
	err := filepath.WalkDir(e.stateDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := os.Lstat(path)
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %o, want %o", path, st.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A capture on a full disk names the cause: "no space left on device".
func TestCaptureNamesFullDisk(t *testing.T) {
	t.Parallel()
	disk := gittest.SmallDisk(t, 4<<20)
	wt := gittest.NewRepoIn(t, disk)
	e, err := Open(context.Background(), Options{Worktree: wt, SessionID: "s_test", StateDir: filepath.Join(disk, "state")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Wait)
	capture(t, e, "c1")
	sh(t, wt, "echo a > a.txt && echo b > b.txt")
	gittest.Fill(t, filepath.Join(disk, "filler"))
	_, err = e.Capture(context.Background(), "c2")
	var ce *CaptureError
	if !errors.As(err, &ce) || ce.Reason != "no space left on device" || !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Capture on a full disk = %v, want reason %q", err, "no space left on device")
	}
}
