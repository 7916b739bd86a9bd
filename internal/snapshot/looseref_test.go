package snapshot

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// refFile is the bytes of a loose ref under wt's .git, and whether it is
// there.
func refFile(t *testing.T, wt, ref string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(wt, ".git", filepath.FromSlash(ref)))
	if os.IsNotExist(err) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

// locksUnder lists the lock files under dir.
func locksUnder(t *testing.T, dir string) []string {
	t.Helper()
	var locks []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".lock") {
			locks = append(locks, p)
		}
		return err
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return locks
}

// A capture's refs are the files git would write: the tree's id and a
// newline, with git's permissions, readable by every git command, no lock
// left behind; a permission record beside the ref that needs one only.
func TestCaptureRefsAreGitsFiles(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	e := openEngine(t, wt)
	if !e.refFiles {
		t.Fatal("a plain repository's refs are not written as files")
	}
	sh(t, wt, "echo s > secret.key && chmod 600 secret.key")
	cp1 := capture(t, e, "cp1")
	sh(t, wt, "rm secret.key && echo b > b.txt")
	cp2 := capture(t, e, "cp2")
	if e.looseRefWrites != 2 {
		t.Fatalf("%d captures wrote their refs as files, want 2", e.looseRefWrites)
	}
	for ref, tree := range map[string]string{e.RefName("cp1"): cp1.Tree, e.RefName("cp2"): cp2.Tree} {
		if got, ok := refFile(t, wt, ref); !ok || got != tree+"\n" {
			t.Errorf("%s holds %q, want %q", ref, got, tree+"\n")
		}
		if got := strings.TrimSpace(gittest.Git(t, wt, "rev-parse", "--verify", ref+"^{tree}")); got != tree {
			t.Errorf("git resolves %s to %s, want %s", ref, got, tree)
		}
	}
	if _, ok := refFile(t, wt, e.modesRef("cp1")); !ok {
		t.Error("cp1 has no permission record")
	}
	if _, ok := refFile(t, wt, e.modesRef("cp2")); ok {
		t.Error("cp2, with nothing restrictive, has a permission record")
	}
	// The same permissions as a ref git writes beside them.
	gittest.Git(t, wt, "update-ref", "refs/yolop/checkpoints/s_test/by-git", cp1.Tree)
	ours, err := os.Stat(filepath.Join(wt, ".git", "refs/yolop/checkpoints/s_test/cp1"))
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := os.Stat(filepath.Join(wt, ".git", "refs/yolop/checkpoints/s_test/by-git"))
	if err != nil {
		t.Fatal(err)
	}
	if ours.Mode() != theirs.Mode() {
		t.Errorf("ref mode %v, git's %v", ours.Mode(), theirs.Mode())
	}
	if locks := locksUnder(t, filepath.Join(wt, ".git", "refs")); len(locks) > 0 {
		t.Errorf("locks left: %v", locks)
	}
	gittest.Git(t, wt, "fsck", "--no-dangling", "--no-progress")
	// A restore reads the record back.
	sh(t, wt, "rm -f b.txt")
	cur := capture(t, e, "r1")
	if _, err := e.Restore(context.Background(), cur, cp1.Tree); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(wt, "secret.key")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("secret.key after the restore: %v %v, want mode 600", st, err)
	}
}

// A name captured again (after a crash, before the session recorded it)
// must not keep the first capture's permission record, loose or packed by
// a gc: its removal is git's.
func TestStalePermissionRecordIsRemoved(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	e := openEngine(t, wt)
	for _, pack := range []bool{false, true} {
		name := map[bool]string{false: "loose", true: "packed"}[pack]
		sh(t, wt, "echo s > secret.key && chmod 600 secret.key")
		capture(t, e, name)
		if pack {
			gittest.Git(t, wt, "pack-refs", "--all")
			if _, ok := refFile(t, wt, e.modesRef(name)); ok {
				t.Fatal("pack-refs left the record loose")
			}
		}
		sh(t, wt, "rm secret.key")
		before := e.looseRefWrites
		capture(t, e, name)
		if e.looseRefWrites != before {
			t.Errorf("%s: a record to remove was not left to git", name)
		}
		if err := exec.Command("git", "-C", wt, "show-ref", "--verify", "--quiet", e.modesRef(name)).Run(); err == nil {
			t.Errorf("%s: the first capture's permission record is still there", name)
		}
	}
	// With no record of the name anywhere (packed-refs holds others), the
	// capture is written as files again.
	before := e.looseRefWrites
	capture(t, e, "fresh")
	if e.looseRefWrites != before+1 {
		t.Error("a capture with nothing to remove went to git")
	}
}

// Something in the ref's way fails the capture as git says, and leaves
// what was there: another's lock, a directory of refs.
func TestRefInTheWayFailsTheCapture(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	e := openEngine(t, wt)
	base := capture(t, e, "cp0")
	lock := filepath.Join(wt, ".git", filepath.FromSlash(e.RefName("cp1"))+".lock")
	if err := os.WriteFile(lock, []byte("held\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sh(t, wt, "echo a > a.txt")
	e.repo.LockRetry = 50 * time.Millisecond // git's wait for a lock, shortened
	if _, err := e.Capture(context.Background(), "cp1"); err == nil || !strings.Contains(err.Error(), "lock") {
		t.Errorf("capture beside a held lock: %v, want git's lock error", err)
	}
	if b, err := os.ReadFile(lock); err != nil || string(b) != "held\n" {
		t.Errorf("the held lock was touched: %q %v", b, err)
	}
	if _, ok := refFile(t, wt, e.RefName("cp1")); ok {
		t.Error("cp1 written past a held lock")
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}

	gittest.Git(t, wt, "update-ref", e.RefName("cp2")+"/under", base.Tree)
	if _, err := e.Capture(context.Background(), "cp2"); err == nil {
		t.Error("capture onto a directory of refs succeeded")
	}
	if got := strings.TrimSpace(gittest.Git(t, wt, "rev-parse", e.RefName("cp2")+"/under")); got != base.Tree {
		t.Errorf("the ref in the way now names %s", got)
	}
	if locks := locksUnder(t, filepath.Join(wt, ".git", "refs")); len(locks) > 0 {
		t.Errorf("locks left: %v", locks)
	}
	capture(t, e, "cp3") // and the next capture is fine
}

// Only git's files backend without shared permissions has its refs
// written as files; a shared repository's go through git, with git's
// permissions.
func TestRefsInFiles(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	common := filepath.Join(wt, ".git")
	for _, c := range []struct {
		storage, shared string
		want            bool
	}{
		{"", "", true}, {"files", "false", true}, {"FILES", "umask", true},
		{"reftable", "", false}, {"", "group", false}, {"", "0660", false}, {"", sharedUnknown, false},
	} {
		if got := refsInFiles(common, c.storage, c.shared); got != c.want {
			t.Errorf("refsInFiles(storage %q, shared %q) = %v, want %v", c.storage, c.shared, got, c.want)
		}
	}
	// A reftable repository's marks: refs/heads a file, a reftable
	// directory.
	stub := t.TempDir()
	if err := os.MkdirAll(filepath.Join(stub, "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stub, "refs", "heads"), []byte("this repository uses the reftable format\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if refsInFiles(stub, "", "") {
		t.Error("refs/heads a file: refs written as files")
	}
	if err := os.Mkdir(filepath.Join(common, "reftable"), 0o755); err != nil {
		t.Fatal(err)
	}
	if refsInFiles(common, "", "") {
		t.Error("a reftable directory: refs written as files")
	}
	if err := os.Remove(filepath.Join(common, "reftable")); err != nil {
		t.Fatal(err)
	}

	gittest.Git(t, wt, "config", "core.sharedRepository", "group")
	e := openEngine(t, wt)
	sh(t, wt, "echo a > a.txt")
	s := capture(t, e, "cp1")
	if e.refFiles || e.looseRefWrites != 0 {
		t.Fatalf("a shared repository's refs were written as files")
	}
	if got := strings.TrimSpace(gittest.Git(t, wt, "rev-parse", e.RefName("cp1"))); got != s.Tree {
		t.Errorf("cp1 names %s, want %s", got, s.Tree)
	}
	st, err := os.Stat(filepath.Join(common, filepath.FromSlash(e.RefName("cp1"))))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm()&0o060 != 0o060 {
		t.Errorf("a shared repository's ref has mode %v, want group read-write (git's)", st.Mode())
	}
}

func TestOwnRefName(t *testing.T) {
	t.Parallel()
	for ref, want := range map[string]bool{
		"refs/yolop/checkpoints/s_01abc/cp1":     true,
		"refs/yolop/modes/s_01abc/end-cp12":      true,
		"refs/yolop/checkpoints/s.1/cp.2":        true,
		"refs/heads/main":                        false,
		"refs/yolop/checkpoints/s/cp1.lock":      false,
		"refs/yolop/checkpoints/s/.cp1":          false,
		"refs/yolop/checkpoints/s/cp1.":          false,
		"refs/yolop/checkpoints/s/a..b":          false,
		"refs/yolop/checkpoints//cp1":            false,
		"refs/yolop/checkpoints/s/cp 1":          false,
		"refs/yolop/checkpoints/s/../../../HEAD": false,
		"refs/yolop/":                            false,
	} {
		if got := ownRefName(ref); got != want {
			t.Errorf("ownRefName(%q) = %v, want %v", ref, got, want)
		}
	}
}

// A symlink among the refs' directories (the agent may write .git where
// no mount keeps it read-only) is never followed by the files path: git
// decides, as it did before.
func TestRefDirectorySymlinkLeftToGit(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	e := openEngine(t, wt)
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(wt, ".git", "refs", "yolop")); err != nil {
		t.Fatal(err)
	}
	sh(t, wt, "echo a > a.txt")
	s := capture(t, e, "cp1")
	if e.looseRefWrites != 0 {
		t.Errorf("%d ref transactions written through a symlink", e.looseRefWrites)
	}
	if got := strings.TrimSpace(gittest.Git(t, wt, "rev-parse", e.RefName("cp1"))); got != s.Tree {
		t.Errorf("cp1 names %s, want %s", got, s.Tree)
	}
	if _, _, err := refDir(filepath.Join(wt, ".git"), e.RefName("cp2"), true); !errors.Is(err, errNotLoose) {
		t.Errorf("refDir through a symlink: %v, want errNotLoose", err)
	}
}
