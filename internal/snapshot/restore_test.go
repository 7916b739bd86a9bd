package snapshot

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// rawTree writes a tree object with the given entries verbatim (git mktree
// refuses some of the hostile names a foreign tree could hold).
func rawTree(t *testing.T, dir string, entries [][3]string) string {
	t.Helper()
	var buf []byte
	for _, e := range entries { // mode, name, oid
		buf = append(buf, e[0]+" "+e[1]+"\x00"...)
		raw := make([]byte, 20)
		for i := 0; i < 20; i++ {
			var b byte
			for _, c := range e[2][2*i : 2*i+2] {
				b <<= 4
				if c >= 'a' {
					b |= byte(c-'a') + 10
				} else {
					b |= byte(c - '0')
				}
			}
			raw[i] = b
		}
		buf = append(buf, raw...)
	}
	cmd := exec.Command("git", "hash-object", "-t", "tree", "-w", "--literally", "--stdin")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(string(buf))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hash-object: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func TestRestoreRejectsUnsafeTrees(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	blob := gittest.Git(t, wt, "hash-object", "-w", "--stdin")
	e := openEngine(t, wt)
	cur := capture(t, e, "r1")
	good := [3]string{"100644", "aaa-good", blob}
	sub := func(name string) string {
		return rawTree(t, wt, [][3]string{{"100644", "f", blob}})
	}
	cases := map[string][][3]string{
		"dot-dot":       {{"40000", "..", sub("")}, good},
		"dot-git":       {{"40000", ".git", sub("")}, good},
		"dot-git-upper": {{"100644", ".GIT", blob}, good},
		"blocklisted":   {{"40000", "node_modules", sub("")}, good},
		"gitlink":       {{"160000", "sub", blob}, good},
		"slash in name": {{"100644", "a/../../x", blob}, good},
		"reserved temp": {{"100644", tmpPrefix + "x", blob}, good},
	}
	for name, entries := range cases {
		before := manifest(t, wt)
		tree := rawTree(t, wt, entries)
		_, err := e.Restore(context.Background(), cur, tree)
		var re *RestoreError
		if !errors.Is(err, ErrUnsafePath) || !errors.As(err, &re) || re.Applied {
			t.Errorf("%s: Restore error = %v, want an unapplied ErrUnsafePath", name, err)
		}
		if d := diffManifests(before, manifest(t, wt)); d != "" {
			t.Errorf("%s: worktree changed:\n%s", name, d)
		}
	}
}

func TestRestoreNeverWritesThroughSymlinks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wt := gittest.NewRepo(t)
	outside := t.TempDir()
	e := openEngine(t, wt)
	base := capture(t, e, "cp0")
	sh(t, wt, `mkdir d; printf 'inside\n' > d/f`)
	cp1 := capture(t, e, "cp1")
	// The captured directory became a symlink to somewhere else.
	sh(t, wt, `rm -r d; ln -s `+outside+` d`)
	cur := capture(t, e, "r1")
	if _, err := e.Restore(ctx, cur, cp1.Tree); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(filepath.Join(wt, "d")); err != nil || !st.IsDir() {
		t.Fatalf("d is not a real directory again: %v", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("wrote through the symlink into %s: %v", outside, ents)
	}
	// A symlink that the snapshot does not know about (stale "from") stops
	// the restore before any write.
	sh(t, wt, `rm -r d; ln -s `+outside+` d; printf 'q\n' > other.txt`)
	before := manifest(t, wt)
	_, err := e.Restore(ctx, base, cp1.Tree)
	var re *RestoreError
	if !errors.Is(err, ErrConflict) || !errors.As(err, &re) || re.Applied {
		t.Fatalf("stale symlinked parent: %v", err)
	}
	if d := diffManifests(before, manifest(t, wt)); d != "" {
		t.Fatalf("worktree changed:\n%s", d)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("wrote into %s", outside)
	}
}

func TestRestoreDirectoryHoldingIgnoredFile(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	sh(t, wt, `printf '*.log\n' > .gitignore; printf 'f\n' > x`)
	e := openEngine(t, wt)
	cp := capture(t, e, "cp1")
	sh(t, wt, `rm x; mkdir x; printf 'a\n' > x/a; printf 'keep me\n' > x/keep.log`)
	cur := capture(t, e, "r1")
	before := manifest(t, wt)
	_, err := e.Restore(context.Background(), cur, cp.Tree)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "keep.log") {
		t.Fatalf("want a conflict naming the ignored file, got %v", err)
	}
	if d := diffManifests(before, manifest(t, wt)); d != "" {
		t.Fatalf("worktree changed:\n%s", d)
	}
}

func TestRestoreUnwritableDirectory(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	sh(t, wt, `mkdir locked; printf 'a\n' > locked/a`)
	e := openEngine(t, wt)
	cp := capture(t, e, "cp1")
	sh(t, wt, `printf 'b\n' > locked/a; printf 'n\n' > top.txt`)
	dir := filepath.Join(wt, "locked")
	if os.Geteuid() == 0 {
		// root ignores permission bits; the immutable attribute binds it.
		if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
			t.Skipf("cannot make a directory unwritable as root: %v %s", err, out)
		}
		t.Cleanup(func() { exec.Command("chattr", "-i", dir).Run() })
	} else {
		os.Chmod(dir, 0o555)
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
	}
	cur := capture(t, e, "r1")
	before := manifest(t, wt)
	_, err := e.Restore(context.Background(), cur, cp.Tree)
	var re *RestoreError
	if !errors.Is(err, ErrConflict) || !errors.As(err, &re) || re.Applied || !strings.Contains(err.Error(), `"locked" is not writable`) {
		t.Fatalf("want an unapplied conflict naming the directory, got %v", err)
	}
	if d := diffManifests(before, manifest(t, wt)); d != "" {
		t.Fatalf("worktree changed:\n%s", d)
	}
}

type failpointHit string

func TestFailpoints(t *testing.T) {
	ctx := context.Background()
	for _, fp := range []string{"restore.after_write", "restore.after_delete", "restore.before_verify"} {
		t.Run(fp, func(t *testing.T) {
			wt := gittest.NewRepo(t)
			sh(t, wt, `printf 'a\n' > a; printf 'b\n' > b`)
			var seen []string
			armed := false
			e, err := Open(ctx, Options{Worktree: wt, SessionID: "s_test", StateDir: filepath.Join(t.TempDir(), "state"), Failpoint: func(name string) {
				if !armed {
					return
				}
				seen = append(seen, name)
				if name == fp {
					panic(failpointHit(name))
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(e.Wait)
			cp := capture(t, e, "cp1")
			sh(t, wt, `printf 'A\n' > a; rm b; printf 'c\n' > c`)
			pre := manifest(t, wt)
			recovery := capture(t, e, "r1")
			armed = true
			func() {
				defer func() {
					if r := recover(); r != failpointHit(fp) {
						t.Fatalf("recovered %v, want failpoint %s", r, fp)
					}
				}()
				e.Restore(ctx, recovery, cp.Tree)
			}()
			armed = false
			// The state is between the two trees; the recovery snapshot
			// brings back every byte.
			mid := capture(t, e, "")
			if _, err := e.Restore(ctx, mid, recovery.Tree); err != nil {
				t.Fatal(err)
			}
			if d := diffManifests(pre, manifest(t, wt)); d != "" {
				t.Fatalf("recovery lost data:\n%s", d)
			}
			all := []string{"restore.after_write", "restore.after_delete", "restore.before_verify"}
			for i, n := range all {
				if n == fp && !reflect.DeepEqual(seen, all[:i+1]) {
					t.Fatalf("failpoints called %q", seen)
				}
			}
		})
	}
}
