package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

func TestCheckShare(t *testing.T) {
	t.Parallel()
	for _, ok := range [][]string{nil, {"node_modules"}, {"web/node_modules", "target", "./vendor/bundle"}} {
		if err := CheckShare(ok); err != nil {
			t.Errorf("CheckShare(%q): %v", ok, err)
		}
	}
	for _, tc := range []struct {
		share []string
		want  string
	}{
		{[]string{"/usr/lib/node_modules"}, "is absolute"},
		{[]string{"../elsewhere"}, "is not inside the checkout"},
		{[]string{"."}, "is not inside the checkout"},
		{[]string{".git"}, "git's own directory"},
		{[]string{"sub/.git/hooks"}, "git's own directory"},
		{[]string{""}, "is not a directory name"},
		{[]string{"node_modules", "node_modules/"}, "listed twice"},
		{[]string{"web", "web/node_modules"}, `"web/node_modules" is inside "web"`},
	} {
		err := CheckShare(tc.share)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckShare(%q) = %v, want an error saying %q", tc.share, err, tc.want)
		}
	}
}

// The copy holds the same files, modes, symlinks and times as the source,
// shares no inode with it, and an entry holding tracked files is never
// replaced (that would delete them from the worktree).
func TestCopyShared(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t)
	gittest.WriteFile(t, repo, ".gitignore", "node_modules/\nvendor/\n")
	gittest.WriteFile(t, repo, "vendor/kept.txt", "tracked despite the rule\n")
	gittest.Git(t, repo, "add", "-f", ".gitignore", "vendor/kept.txt")
	gittest.Commit(t, repo, "ignore")
	gittest.WriteFile(t, repo, "node_modules/a/index.js", "a\n")
	gittest.WriteFile(t, repo, "node_modules/a/bin.sh", "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(repo, "node_modules/a/bin.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../a/bin.sh", filepath.Join(repo, "node_modules/.bin")); err != nil {
		t.Fatal(err)
	}
	gittest.WriteFile(t, repo, "vendor/extra.txt", "untracked\n")
	r := detect(t, repo)
	m := &Manager{DataDir: t.TempDir()}
	info := create(t, m, r, "s_share0000001", "share")
	res, err := copyShared(context.Background(), []string{"node_modules", "vendor"}, repo, info.Path, info.GitDir, r.CommonDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Copied) != 1 || res.Copied[0] != "node_modules" || res.Files != 2 {
		t.Fatalf("copied %q (%d files), notes %q", res.Copied, res.Files, res.Notes)
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "vendor holds files git tracks") {
		t.Errorf("notes %q, want one saying vendor (which holds tracked files) is left out", res.Notes)
	}
	if _, err := os.Stat(filepath.Join(info.Path, "vendor/kept.txt")); err != nil {
		t.Errorf("the tracked vendor/kept.txt is gone from the worktree: %v", err)
	}
	for _, p := range []string{"node_modules/a/index.js", "node_modules/a/bin.sh"} {
		src, err1 := os.Stat(filepath.Join(repo, p))
		dst, err2 := os.Stat(filepath.Join(info.Path, p))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if src.Mode() != dst.Mode() || !src.ModTime().Equal(dst.ModTime()) {
			t.Errorf("%s: mode %v time %v, want %v %v", p, dst.Mode(), dst.ModTime(), src.Mode(), src.ModTime())
		}
		if src.Sys().(*syscall.Stat_t).Ino == dst.Sys().(*syscall.Stat_t).Ino {
			t.Errorf("%s is a hard link of the checkout's file", p)
		}
	}
	if target, err := os.Readlink(filepath.Join(info.Path, "node_modules/.bin")); err != nil || target != "../a/bin.sh" {
		t.Errorf("symlink: %q, %v", target, err)
	}
	// A second copy with the stamp of the first keeps what is there.
	gittest.WriteFile(t, info.Path, "node_modules/a/index.js", "worktree's own\n")
	again, err := copyShared(context.Background(), []string{"node_modules"}, repo, info.Path, info.GitDir, r.CommonDir, res.Stamps)
	if err != nil || len(again.Copied) != 0 {
		t.Fatalf("with a fresh stamp: copied %q, %v", again.Copied, err)
	}
	// Once the checkout's directory changed, the copy is made again.
	gittest.WriteFile(t, repo, "node_modules/.package-lock.json", "{}\n")
	again, err = copyShared(context.Background(), []string{"node_modules"}, repo, info.Path, info.GitDir, r.CommonDir, res.Stamps)
	if err != nil || len(again.Copied) != 1 {
		t.Fatalf("after the checkout changed: copied %q, %v", again.Copied, err)
	}
	if b, _ := os.ReadFile(filepath.Join(info.Path, "node_modules/a/index.js")); string(b) != "a\n" {
		t.Errorf("index.js after a fresh copy: %q", b)
	}
}

// BenchmarkShareCopy copies the directory $YOLOP_BENCH_SHARE_SRC into new
// directories under $YOLOP_BENCH_SHARE_DST (scripts/bench-share.sh).
func BenchmarkShareCopy(b *testing.B) {
	src, dst := os.Getenv("YOLOP_BENCH_SHARE_SRC"), os.Getenv("YOLOP_BENCH_SHARE_DST")
	if src == "" || dst == "" {
		b.Skip("set YOLOP_BENCH_SHARE_SRC and YOLOP_BENCH_SHARE_DST (scripts/bench-share.sh)")
	}
	var c copier
	for i := 0; b.Loop(); i++ {
		c = copier{ctx: context.Background()}
		out := filepath.Join(dst, "copy-"+strconv.Itoa(i))
		if err := c.tree(src, out); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := os.RemoveAll(out); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(c.files), "files")
	b.ReportMetric(float64(c.bytes)/(1<<20), "MiB")
	b.ReportMetric(float64(c.reflinked), "reflinked")
}

// Directories keep their own times and permissions, set after their
// entries are written.
func TestCopierDirectoryTimes(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	gittest.WriteFile(t, src, "a/b/c.txt", "c\n")
	old := time.Date(2020, 1, 2, 3, 4, 5, 600, time.UTC)
	for _, d := range []string{"a/b", "a"} {
		if err := os.Chtimes(filepath.Join(src, d), old, old); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(src, "a/b"), 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(src, "a/b"), 0o755) })
	dst := filepath.Join(t.TempDir(), "copy")
	c := copier{ctx: context.Background()}
	if err := c.tree(filepath.Join(src, "a"), dst); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(dst, "b"), 0o755) })
	for _, d := range []string{dst, filepath.Join(dst, "b")} {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if !st.ModTime().Equal(old) {
			t.Errorf("%s: time %v, want %v", d, st.ModTime(), old)
		}
	}
	if st, _ := os.Stat(filepath.Join(dst, "b")); st.Mode().Perm() != 0o555 {
		t.Errorf("b: mode %v, want 0555", st.Mode().Perm())
	}
}

// An earlier session's agent may have left a symlink where a shared
// entry's parent should be: the copy must not delete or write through it.
func TestCopySharedRefusesSymlinkedParents(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t)
	gittest.WriteFile(t, repo, ".gitignore", "web/node_modules/\n")
	gittest.Commit(t, repo, "ignore")
	gittest.WriteFile(t, repo, "web/node_modules/a/index.js", "a\n")
	r := detect(t, repo)
	m := &Manager{DataDir: t.TempDir()}
	info := create(t, m, r, "s_share0000002", "share")
	outside := t.TempDir()
	gittest.WriteFile(t, outside, "node_modules/precious.txt", "the user's\n")
	if err := os.Symlink(outside, filepath.Join(info.Path, "web")); err != nil {
		t.Fatal(err)
	}
	res, err := copyShared(context.Background(), []string{"web/node_modules"}, repo, info.Path, "", r.CommonDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Copied) != 0 || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "web in the session worktree is a symlink") {
		t.Errorf("copied %q, notes %q", res.Copied, res.Notes)
	}
	if b, err := os.ReadFile(filepath.Join(outside, "node_modules/precious.txt")); err != nil || string(b) != "the user's\n" {
		t.Errorf("the file behind the symlink: %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(outside, "node_modules/a")); err == nil {
		t.Error("the copy was written through the symlink")
	}
}
