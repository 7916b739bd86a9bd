package snapshot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// openFolder imports folder into a private repository and opens an engine
// on it, as an in-place session outside git does.
func openFolder(t *testing.T, folder string, maxSize int64) (*Engine, ImportResult, string) {
	t.Helper()
	ctx := context.Background()
	gitDir := filepath.Join(t.TempDir(), "folder", "git")
	res, err := ImportFolder(ctx, ImportOptions{GitDir: gitDir, Folder: folder, MaxFileSize: maxSize})
	if err != nil {
		t.Fatalf("ImportFolder: %v", err)
	}
	e, err := Open(ctx, Options{Worktree: folder, SessionID: "s_test", StateDir: filepath.Join(t.TempDir(), "state"), GitDir: gitDir, CommonDir: gitDir, Folder: true, MaxFileSize: maxSize})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(e.Wait)
	return e, res, gitDir
}

// The first capture of a folder is its import's commit, written as a pack
// (no loose objects), with an index whose stat data lets the session's
// first capture hash nothing; the folder gets no .git; what the ignore
// files and the blocklist leave out is left out; captures and restores are
// exact afterwards.
func TestFolderImportAndRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	sh(t, dir, `
printf 'alpha\n' > a.txt
printf '\000\001bin' > b.bin
printf '#!/bin/sh\n' > run.sh && chmod +x run.sh
ln -s a.txt link
mkdir -p sub/deep node_modules/x nested/.git
printf 'n\n' > sub/deep/n.txt
printf 'x\n' > node_modules/x/i.js
printf 'secret\n' > secret.env
printf '*.env\n' > .gitignore
printf 'skip/\n' > .yolopignore
mkdir skip && printf 's\n' > skip/s.txt
printf 'in a nested repository\n' > nested/f.txt
printf '* filter=evil\n' > .gitattributes
printf 'line with crlf\r\n' > crlf.txt
cp a.txt same-as-a.txt
`)
	e, res, gitDir := openFolder(t, dir, 0)
	if _, err := os.Lstat(filepath.Join(dir, ".git")); !os.IsNotExist(err) {
		t.Fatalf("the folder got a .git: %v", err)
	}
	var loose []string
	_ = filepath.WalkDir(filepath.Join(gitDir, "objects"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.Contains(p, "/pack/") && !strings.Contains(p, "/info/") {
			loose = append(loose, p)
		}
		return nil
	})
	if len(loose) > 0 {
		t.Errorf("the import wrote loose objects: %v", loose)
	}
	var hashed [][]string
	e.onPriv = func(args []string) { hashed = append(hashed, args) }
	s := capture(t, e, "cp1")
	for _, a := range hashed {
		if slices.Contains(a, "update-index") && slices.Contains(a, "--add") {
			t.Errorf("the first capture after the import updated the index: %v", a)
		}
	}
	head := FolderRunner(gitDir, dir, filepath.Join(gitDir, "index"))
	out, err := head.Run(ctx, "rev-parse", FolderBranch+"^{tree}")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(out)) != s.Tree {
		t.Errorf("first capture %s is not the import's tree %s", s.Tree, out)
	}
	ls, err := head.Run(ctx, "ls-tree", "-r", "--name-only", s.Tree)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(string(ls))
	want := []string{".gitattributes", ".gitignore", ".yolopignore", "a.txt", "b.bin", "crlf.txt", "link", "run.sh", "same-as-a.txt", "sub/deep/n.txt"}
	if !slices.Equal(got, want) {
		t.Errorf("captured %v, want %v", got, want)
	}
	if res.Files != len(want) {
		t.Errorf("import counted %d files, want %d", res.Files, len(want))
	}
	// The pack and its index are sound as git sees them, and the tree is
	// the one git itself writes for the same files.
	if out, err := head.Run(ctx, "fsck", "--strict", "--full", "--no-dangling"); err != nil {
		t.Errorf("fsck: %v %s", err, out)
	}
	if out, err := head.Run(ctx, "write-tree"); err != nil || strings.TrimSpace(string(out)) != s.Tree {
		t.Errorf("git write-tree of the import's index = %s (%v), want %s", out, err, s.Tree)
	}
	// The bytes are raw: no attribute of the folder's converted them.
	blob, err := head.Run(ctx, "cat-file", "blob", s.Tree+":crlf.txt")
	if err != nil || string(blob) != "line with crlf\r\n" {
		t.Errorf("crlf.txt captured as %q (%v)", blob, err)
	}

	before := manifest(t, dir)
	sh(t, dir, `
rm a.txt && mv sub/deep/n.txt moved.txt && chmod -x run.sh && printf 'new\377' > b.bin
ln -sfn run.sh link && printf 'made\n' > made.txt
`)
	cur := capture(t, e, "end")
	if cur.Tree == s.Tree {
		t.Fatal("the second capture saw no change")
	}
	r1 := capture(t, e, "r1")
	if _, err := e.Restore(ctx, r1, s.Tree); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	after := manifest(t, dir)
	// The ignored, blocklisted and nested paths were never touched.
	if d := diffManifests(before, after); d != "" {
		t.Errorf("restore is not exact:\n%s", d)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".git")); !os.IsNotExist(err) {
		t.Errorf("the folder got a .git: %v", err)
	}
	refs, err := e.SessionRefs(ctx)
	if err != nil || len(refs) != 3 {
		t.Errorf("session refs %v (%v), want cp1, end, r1", refs, err)
	}
}

// A file larger than the limit is left out of the import and of every
// capture, and named; one that grows past it is dropped from the snapshot.
func TestFolderLeavesOutLargeFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sh(t, dir, `printf 'small\n' > s.txt && head -c 2000 /dev/zero > big.bin && printf 'grows\n' > g.txt`)
	e, res, _ := openFolder(t, dir, 1000)
	if !slices.Equal(res.LeftOut, []string{"big.bin"}) {
		t.Errorf("import left out %v, want big.bin", res.LeftOut)
	}
	s := capture(t, e, "cp1")
	if !slices.Equal(s.LeftOut, []string{"big.bin"}) {
		t.Errorf("capture left out %v, want big.bin", s.LeftOut)
	}
	sh(t, dir, `head -c 3000 /dev/zero > g.txt && head -c 1500 /dev/zero > new.bin`)
	s2 := capture(t, e, "cp2")
	if !slices.Equal(s2.LeftOut, []string{"big.bin", "g.txt", "new.bin"}) {
		t.Errorf("capture left out %v, want big.bin g.txt new.bin", s2.LeftOut)
	}
	ch, err := e.Diff(context.Background(), s.Tree, s2.Tree)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch) != 1 || ch[0].Path != "g.txt" || ch[0].NewOID != "" {
		t.Errorf("diff %+v, want g.txt dropped", ch)
	}
	sh(t, dir, `rm new.bin big.bin && printf 'small again\n' > g.txt`)
	if s3 := capture(t, e, "cp3"); len(s3.LeftOut) != 0 {
		t.Errorf("capture left out %v, want nothing", s3.LeftOut)
	}
}

// A folder over MaxFiles is refused before anything is written but the
// empty repository.
func TestFolderTooManyFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sh(t, dir, `for i in 1 2 3 4 5; do echo $i > f$i; done`)
	_, err := ImportFolder(context.Background(), ImportOptions{GitDir: filepath.Join(t.TempDir(), "git"), Folder: dir, MaxFiles: 4})
	var tm *TooManyFilesError
	if !errors.As(err, &tm) || tm.Max != 4 {
		t.Fatalf("err = %v, want TooManyFilesError", err)
	}
}

// A .yolopignore edited during the session is honoured by the next capture.
func TestFolderIgnoreFileReread(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sh(t, dir, `printf 'a\n' > a.txt && printf 'log\n' > x.log`)
	e, _, _ := openFolder(t, dir, 0)
	s := capture(t, e, "cp1")
	sh(t, dir, `printf '*.log\n' > .yolopignore`)
	s2 := capture(t, e, "cp2")
	ch, err := e.Diff(context.Background(), s.Tree, s2.Tree)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, c := range ch {
		paths = append(paths, c.Path)
	}
	// x.log stays captured, as a file git tracks stays when a
	// .gitignore matches it later; a new .log file is not captured.
	if !slices.Equal(paths, []string{".yolopignore"}) {
		t.Errorf("changes %v, want .yolopignore only", paths)
	}
	sh(t, dir, `printf 'new\n' > y.log`)
	s3 := capture(t, e, "cp3")
	if s3.Tree != s2.Tree {
		t.Errorf("a file .yolopignore matches was captured")
	}
}
