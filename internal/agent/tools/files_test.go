package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestBlocked(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rel  string
		want string
	}{
		{"src/main.go", ""},
		{"node_modules/x/index.js", "node_modules"},
		{"a/b/c/node_modules/d", "node_modules"},
		{"pkg/.venv/bin/python", ".venv"},
		{".git/config", ".git"},
		{"deep/er/target", "target"},
		{"builder/x", ""},
		{"my.git/x", ""},
		{"./dist/app.js", "dist"},
		{".", ""},
	}
	for _, tc := range tests {
		got, ok := Blocked(tc.rel)
		if ok != (tc.want != "") || got != tc.want {
			t.Errorf("Blocked(%q) = %q, %v; want %q", tc.rel, got, ok, tc.want)
		}
	}
}

func TestPathConfinement(t *testing.T) {
	t.Parallel()
	resolverModes(t, testPathConfinement)
}

func testPathConfinement(t *testing.T, force func(*beneath)) {
	s, root := newSet(t)
	force(s.dirs)
	outside := t.TempDir()
	putFile(t, outside, "secret.txt", "secret\n")
	putFile(t, root, "in/file.txt", "inside\n")
	symlink(t, outside, filepath.Join(root, "out"))                            // dir link leaving the root
	symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(root, "s")) // file link leaving the root
	symlink(t, "../../..", filepath.Join(root, "in/up"))                       // relative link climbing out
	symlink(t, "in", filepath.Join(root, "inlink"))                            // link inside the root
	symlink(t, filepath.Join(root, "in"), filepath.Join(root, "abslink"))      // absolute, inside the root
	symlink(t, "in/file.txt", filepath.Join(root, "flink"))                    // the last component
	symlink(t, "../inlink/file.txt", filepath.Join(root, "in/back"))           // "..", staying inside
	symlink(t, "loop2", filepath.Join(root, "loop1"))
	symlink(t, "loop1", filepath.Join(root, "loop2"))

	reads := []struct {
		path string
		want string // substring of the error; "" means success with content "inside\n"
	}{
		{"in/file.txt", ""},
		{filepath.Join(root, "in/file.txt"), ""},
		{"./in/../in/file.txt", ""},
		{"inlink/file.txt", ""},
		{"abslink/file.txt", ""},
		{"flink", ""},
		{"in/back", ""},
		{"abslink/../inlink/back", ""},
		{"../secret.txt", "escapes the project root"},
		{"in/../../secret.txt", "escapes the project root"},
		{filepath.Join(outside, "secret.txt"), "outside the project root"},
		{"out/secret.txt", "symlink out, which points outside"},
		{"s", "symlink s, which points outside"},
		{"in/up/etc/passwd", "points outside"},
		{"loop1/x", "too many levels"},
		{"", "path is empty"},
		{".git/config", ".git"},
	}
	for _, tc := range reads {
		r := call(t, s, "read_file", map[string]any{"path": tc.path})
		if tc.want == "" {
			if mustOK(t, r).Content != "inside\n" {
				t.Errorf("read %s: %q", tc.path, r.Content)
			}
			continue
		}
		mustErr(t, r, tc.want)
	}

	// Writes through links that leave the root must not create anything
	// outside it.
	for _, p := range []string{"out/new.txt", "s", "in/up/tmp/x", "../x"} {
		mustErr(t, call(t, s, "write_file", map[string]any{"path": p, "content": "pwned"}))
		mustErr(t, call(t, s, "edit_file", map[string]any{"path": p, "old_text": "secret", "new_text": "pwned"}))
	}
	if got := readFileT(t, outside, "secret.txt"); got != "secret\n" {
		t.Fatalf("outside file changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); !os.IsNotExist(err) {
		t.Fatalf("a file was created outside the root: %v", err)
	}
	// Deleting a link that points outside removes the link, not the target.
	mustOK(t, call(t, s, "delete_file", map[string]any{"path": "s"}))
	if got := readFileT(t, outside, "secret.txt"); got != "secret\n" {
		t.Fatalf("delete followed the link: %q", got)
	}
	// Writing through a link inside the root writes its target.
	mustOK(t, call(t, s, "write_file", map[string]any{"path": "inlink/new.txt", "content": "x"}))
	if got := readFileT(t, root, "in/new.txt"); got != "x" {
		t.Fatalf("write through inner link: %q", got)
	}
	if fi, err := os.Lstat(filepath.Join(root, "inlink")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("inner link was replaced: %v", err)
	}
}

func TestBlocklistedWrites(t *testing.T) {
	t.Parallel()
	s, root := newSet(t)
	putFile(t, root, "app/node_modules/pkg/index.js", "module.exports = 1\n")
	putFile(t, root, "src/x.go", "package x\n")
	symlink(t, "app/node_modules/pkg", filepath.Join(root, "vendorlink"))
	for _, p := range []string{
		"node_modules/a.js",
		"app/node_modules/pkg/index.js",
		"a/b/c/d/target/out.bin",
		"web/.next/cache",
		"py/.venv/lib/x.py",
		"vendorlink/index.js", // blocklisted only after resolving the link
		".git/config",
	} {
		for _, tc := range []struct {
			tool string
			args map[string]any
		}{
			{"write_file", map[string]any{"path": p, "content": "x"}},
			{"edit_file", map[string]any{"path": p, "old_text": "1", "new_text": "2"}},
			{"delete_file", map[string]any{"path": p}},
		} {
			r := call(t, s, tc.tool, tc.args)
			mustErr(t, r, "write-blocklisted")
		}
	}
	if got := readFileT(t, root, "app/node_modules/pkg/index.js"); got != "module.exports = 1\n" {
		t.Fatalf("blocklisted file changed: %q", got)
	}
	for _, d := range []string{"node_modules", "a", "web", "py"} {
		if _, err := os.Stat(filepath.Join(root, d)); !os.IsNotExist(err) {
			t.Errorf("refused write still created %s", d)
		}
	}
	// In a worktree .git is a file: the refusal still says why, not
	// "not a directory".
	putFile(t, root, ".git", "gitdir: /elsewhere/.git/worktrees/x\n")
	for _, args := range []map[string]any{{"path": ".git/config", "content": "x"}, {"path": ".git/config"}} {
		tool := "write_file"
		if len(args) == 1 {
			tool = "delete_file"
		}
		r := call(t, s, tool, args)
		mustErr(t, r, "write-blocklisted")
		if strings.Contains(r.Content, "not a directory") {
			t.Errorf("%s .git/config: %s", tool, r.Content)
		}
	}
	mustErr(t, call(t, s, "read_file", map[string]any{"path": ".git/config"}), "inside a .git directory")
	// Reads of blocklisted directories other than .git are allowed.
	if r := mustOK(t, call(t, s, "read_file", map[string]any{"path": "app/node_modules/pkg/index.js"})); !strings.Contains(r.Content, "exports") {
		t.Fatalf("read: %q", r.Content)
	}
	r := call(t, s, "write_file", map[string]any{"path": "app/node_modules/x", "content": ""})
	mustErr(t, r, `"node_modules"`)
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	s, root := newSet(t)
	var big strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&big, "line %d\n", i)
	}
	putFile(t, root, "big.txt", big.String())
	putFile(t, root, "small.txt", "a\nb\nc")
	putFile(t, root, "empty.txt", "")
	putFile(t, root, "bin.dat", "PK\x03\x04\x00\x00binary")
	putFile(t, root, "wide.txt", strings.Repeat("x", 200<<10)+"\nnext\n")
	putFile(t, root, "bytes.txt", strings.Repeat(strings.Repeat("y", 1000)+"\n", 100))
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    map[string]any
		want    string // exact content, or
		prefix  string // header prefix
		contain []string
		errWant string
	}{
		{name: "whole small file", args: map[string]any{"path": "small.txt"}, want: "a\nb\nc"},
		{name: "offset and limit", args: map[string]any{"path": "small.txt", "offset": 2, "limit": 1}, want: "[small.txt: showing lines 2-2 of 3; to read more call read_file with offset=3]\nb\n"},
		{name: "last line without newline", args: map[string]any{"path": "small.txt", "offset": 3}, want: "[small.txt: showing lines 3-3 of 3]\nc"},
		{name: "huge file capped by lines", args: map[string]any{"path": "big.txt"}, prefix: "[big.txt: showing lines 1-2000 of 5000; to read more call read_file with offset=2001]\nline 1\n", contain: []string{"line 2000\n"}},
		{name: "huge file continued", args: map[string]any{"path": "big.txt", "offset": 4990}, want: "[big.txt: showing lines 4990-5000 of 5000]\n" + "line 4990\nline 4991\nline 4992\nline 4993\nline 4994\nline 4995\nline 4996\nline 4997\nline 4998\nline 4999\nline 5000\n"},
		{name: "byte cap ends on a line", args: map[string]any{"path": "bytes.txt"}, prefix: "[bytes.txt: showing lines 1-65 of 100; to read more call read_file with offset=66]\n"},
		{name: "one line over the cap", args: map[string]any{"path": "wide.txt"}, prefix: "[wide.txt: showing lines 1-1 of 2; line 1 is longer than 64 KiB and was cut; to read more call read_file with offset=2]\n"},
		{name: "empty", args: map[string]any{"path": "empty.txt"}, want: "(empty.txt is empty: 0 bytes)"},
		{name: "binary", args: map[string]any{"path": "bin.dat"}, errWant: "binary file, 12 bytes"},
		{name: "directory", args: map[string]any{"path": "."}, errWant: "is a directory; use list_directory"},
		{name: "fifo does not block", args: map[string]any{"path": "fifo"}, errWant: "not a regular file"},
		{name: "missing", args: map[string]any{"path": "nope.txt"}, errWant: "does not exist"},
		{name: "offset past end", args: map[string]any{"path": "small.txt", "offset": 9}, errWant: "past the end of small.txt, which has 3 lines"},
		{name: "bad offset", args: map[string]any{"path": "small.txt", "offset": 0}, errWant: "offset must be 1 or more"},
		{name: "bad limit", args: map[string]any{"path": "small.txt", "limit": -1}, errWant: "limit must be 1 or more"},
		{name: "through a file", args: map[string]any{"path": "small.txt/x"}, errWant: "cannot access"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := call(t, s, "read_file", tc.args)
			if tc.errWant != "" {
				mustErr(t, r, tc.errWant)
				return
			}
			mustOK(t, r)
			if tc.want != "" && r.Content != tc.want {
				t.Fatalf("content %q, want %q", r.Content, tc.want)
			}
			if !strings.HasPrefix(r.Content, tc.prefix) {
				t.Fatalf("content starts %q, want prefix %q", r.Content[:min(len(r.Content), 200)], tc.prefix)
			}
			for _, c := range tc.contain {
				if !strings.Contains(r.Content, c) {
					t.Fatalf("content lacks %q", c)
				}
			}
			if len(r.Content) > readByteCap+300 {
				t.Fatalf("content is %d bytes, over the cap", len(r.Content))
			}
		})
	}
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	s, root := newSet(t)
	r := mustOK(t, call(t, s, "write_file", map[string]any{"path": "a/b/c.txt", "content": "one\n"}))
	if !strings.Contains(r.Content, "created a/b/c.txt (4 bytes)") || r.Display.OldText != nil || *r.Display.NewText != "one\n" {
		t.Fatalf("result %+v", r)
	}
	if got := readFileT(t, root, "a/b/c.txt"); got != "one\n" {
		t.Fatalf("content %q", got)
	}
	putFile(t, root, "run.sh", "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(root, "run.sh"), 0o751); err != nil {
		t.Fatal(err)
	}
	r = mustOK(t, call(t, s, "write_file", map[string]any{"path": "run.sh", "content": "#!/bin/sh\necho hi\n"}))
	if !strings.Contains(r.Content, "overwrote") || *r.Display.OldText != "#!/bin/sh\n" {
		t.Fatalf("result %+v", r)
	}
	fi, err := os.Stat(filepath.Join(root, "run.sh"))
	if err != nil || fi.Mode().Perm() != 0o751 {
		t.Fatalf("mode not preserved: %v %v", fi.Mode(), err)
	}
	mustOK(t, call(t, s, "write_file", map[string]any{"path": "empty", "content": ""}))
	if got := readFileT(t, root, "empty"); got != "" {
		t.Fatalf("empty: %q", got)
	}
	mustErr(t, call(t, s, "write_file", map[string]any{"path": "a/b", "content": "x"}), "is a directory")
	mustErr(t, call(t, s, "write_file", map[string]any{"path": "run.sh/x", "content": "x"}), "cannot access")
	mustErr(t, call(t, s, "write_file", map[string]any{"path": ".", "content": "x"}), "project root itself")
	// No temporary files are left behind.
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".yolop-") {
			t.Fatalf("leftover temp file %s", e.Name())
		}
	}
}

func TestEditFile(t *testing.T) {
	t.Parallel()
	s, root := newSet(t)
	const orig = "func a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 1\n}\n"
	tests := []struct {
		name    string
		file    string
		args    map[string]any
		want    string
		errWant []string
	}{
		{name: "unique", file: orig, args: map[string]any{"old_text": "func a() {\n\treturn 1", "new_text": "func a() {\n\treturn 2"},
			want: "func a() {\n\treturn 2\n}\n\nfunc b() {\n\treturn 1\n}\n"},
		{name: "ambiguous", file: orig, args: map[string]any{"old_text": "return 1", "new_text": "return 3"},
			errWant: []string{"matches 2 places", "more surrounding lines", "replace_all"}},
		{name: "replace all", file: orig, args: map[string]any{"old_text": "return 1", "new_text": "return 3", "replace_all": true},
			want: strings.ReplaceAll(orig, "return 1", "return 3")},
		{name: "missing", file: orig, args: map[string]any{"old_text": "return 9", "new_text": "x"}, errWant: []string{"not found"}},
		{name: "whitespace hint", file: orig, args: map[string]any{"old_text": "  return 1  ", "new_text": "x"}, errWant: []string{"whitespace"}},
		{name: "crlf hint", file: "a\r\nb\r\n", args: map[string]any{"old_text": "a\nb", "new_text": "x"}, errWant: []string{"CRLF"}},
		{name: "empty old", file: orig, args: map[string]any{"old_text": "", "new_text": "x"}, errWant: []string{"old_text is empty"}},
		{name: "no change", file: orig, args: map[string]any{"old_text": "a", "new_text": "a"}, errWant: []string{"identical"}},
		{name: "missing new_text", file: orig, args: map[string]any{"old_text": "a"}, errWant: []string{"needs old_text and new_text"}},
		{name: "no file", args: map[string]any{"old_text": "a", "new_text": "b"}, errWant: []string{"does not exist; use write_file"}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rel := fmt.Sprintf("f%d.go", i)
			if tc.file != "" {
				putFile(t, root, rel, tc.file)
				if err := os.Chmod(filepath.Join(root, rel), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			tc.args["path"] = rel
			r := call(t, s, "edit_file", tc.args)
			if tc.errWant != nil {
				mustErr(t, r, tc.errWant...)
				if tc.file != "" && readFileT(t, root, rel) != tc.file {
					t.Fatal("a refused edit changed the file")
				}
				return
			}
			mustOK(t, r)
			if got := readFileT(t, root, rel); got != tc.want {
				t.Fatalf("file %q, want %q", got, tc.want)
			}
			if *r.Display.OldText != tc.file || *r.Display.NewText != tc.want {
				t.Fatal("display texts do not match the edit")
			}
			if fi, _ := os.Stat(filepath.Join(root, rel)); fi.Mode().Perm() != 0o600 {
				t.Fatalf("mode %v not preserved", fi.Mode())
			}
		})
	}
}

func TestDeleteFile(t *testing.T) {
	t.Parallel()
	resolverModes(t, testDeleteFile)
}

func testDeleteFile(t *testing.T, force func(*beneath)) {
	s, root := newSet(t)
	force(s.dirs)
	putFile(t, root, "f.txt", "x")
	putFile(t, root, "full/a.txt", "a")
	if err := os.Mkdir(filepath.Join(root, "emptydir"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, "full", filepath.Join(root, "dirlink"))
	tests := []struct {
		path    string
		want    string
		errWant string
		gone    string
	}{
		{path: "f.txt", want: "deleted file f.txt", gone: "f.txt"},
		{path: "emptydir", want: "deleted empty directory emptydir", gone: "emptydir"},
		{path: "full", errWant: "not empty"},
		{path: "dirlink", want: "deleted symlink dirlink", gone: "dirlink"},
		{path: "nope", errWant: "does not exist"},
		{path: ".", errWant: "project root itself"},
	}
	for _, tc := range tests {
		r := call(t, s, "delete_file", map[string]any{"path": tc.path})
		if tc.errWant != "" {
			mustErr(t, r, tc.errWant)
			continue
		}
		if mustOK(t, r).Content != tc.want {
			t.Errorf("%s: %q", tc.path, r.Content)
		}
		if _, err := os.Lstat(filepath.Join(root, tc.gone)); !os.IsNotExist(err) {
			t.Errorf("%s still exists", tc.gone)
		}
	}
	if readFileT(t, root, "full/a.txt") != "a" {
		t.Fatal("deleting the link touched its target")
	}
}

func TestListDirectory(t *testing.T) {
	t.Parallel()
	s, root := newSet(t)
	putFile(t, root, "b.txt", "")
	putFile(t, root, "a/x", "")
	putFile(t, root, ".git/HEAD", "ref: refs/heads/main\n")
	putFile(t, root, "node_modules/m/index.js", "")
	symlink(t, "b.txt", filepath.Join(root, "c"))
	if err := os.Mkdir(filepath.Join(root, "e"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := mustOK(t, call(t, s, "list_directory", `{}`))
	want := "a/\nb.txt\nc -> b.txt\ne/\nnode_modules/  (write-blocklisted: not checkpointed, file tools do not write here)\n"
	if r.Content != want {
		t.Fatalf("list:\n%s\nwant:\n%s", r.Content, want)
	}
	if r := mustOK(t, call(t, s, "list_directory", map[string]any{"path": "e"})); r.Content != "(empty directory)\n" {
		t.Fatalf("empty: %q", r.Content)
	}
	mustErr(t, call(t, s, "list_directory", map[string]any{"path": "b.txt"}), "use read_file")
	mustErr(t, call(t, s, "list_directory", map[string]any{"path": ".git"}), ".git")
	mustErr(t, call(t, s, "list_directory", map[string]any{"path": "zz"}), "does not exist")
}
