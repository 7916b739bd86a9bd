package tools

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestGrep(t *testing.T) {
	t.Parallel()
	s, root := newSet(t)
	putFile(t, root, "main.go", "package main\n\nfunc main() {\n\tTODO()\n}\n")
	putFile(t, root, "src/app.ts", "// TODO: types\n")
	putFile(t, root, "src/view.tsx", "const TODO = 1\n")
	putFile(t, root, "src/deep/er/x.py", "# TODO python\n")
	putFile(t, root, "node_modules/lib/index.js", "TODO in a dependency\n")
	putFile(t, root, ".git/COMMIT_EDITMSG", "TODO in git\n")
	putFile(t, root, "data.bin", "TODO\x00binary\n")
	putFile(t, root, "long.txt", "TODO "+strings.Repeat("z", 1000)+"\n")
	symlink(t, t.TempDir(), filepath.Join(root, "outlink"))
	putFile(t, root, "crlf.txt", "TODO crlf\r\n")

	tests := []struct {
		name    string
		args    map[string]any
		want    []string // exact lines, in order
		errWant string
		note    string
	}{
		{name: "whole root skips .git, blocklisted and binary", args: map[string]any{"pattern": "TODO"}, want: []string{
			"crlf.txt:1: TODO crlf",
			"long.txt:1: TODO " + strings.Repeat("z", grepMaxLine-5) + " [line cut]",
			"main.go:4: \tTODO()",
			"src/app.ts:1: // TODO: types",
			"src/deep/er/x.py:1: # TODO python",
			"src/view.tsx:1: const TODO = 1",
		}},
		{name: "glob on base name", args: map[string]any{"pattern": "TODO", "glob": "*.go"}, want: []string{"main.go:4: \tTODO()"}},
		{name: "brace glob", args: map[string]any{"pattern": "TODO", "glob": "*.{ts,tsx}"}, want: []string{"src/app.ts:1: // TODO: types", "src/view.tsx:1: const TODO = 1"}},
		{name: "double star glob", args: map[string]any{"pattern": "TODO", "glob": "src/**/*.py"}, want: []string{"src/deep/er/x.py:1: # TODO python"}},
		{name: "explicit blocklisted path is searched", args: map[string]any{"pattern": "TODO", "path": "node_modules"}, want: []string{"node_modules/lib/index.js:1: TODO in a dependency"}},
		{name: "single file", args: map[string]any{"pattern": "^func", "path": "main.go"}, want: []string{"main.go:3: func main() {"}},
		{name: "case insensitive", args: map[string]any{"pattern": "(?i)todo PY", "path": "src"}, want: []string{"src/deep/er/x.py:1: # TODO python"}},
		{name: "no match", args: map[string]any{"pattern": "FIXME"}, note: "no matches for FIXME in ."},
		{name: "bad regexp", args: map[string]any{"pattern": "(?<=x)"}, errWant: "not a valid RE2"},
		{name: "empty pattern", args: map[string]any{"pattern": ""}, errWant: "non-empty pattern"},
		{name: "bad glob", args: map[string]any{"pattern": "x", "glob": "[a"}, errWant: "glob"},
		{name: "outside root", args: map[string]any{"pattern": "x", "path": "outlink"}, errWant: "points outside"},
		{name: "git dir", args: map[string]any{"pattern": "x", "path": ".git"}, errWant: ".git"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := call(t, s, "grep", tc.args)
			if tc.errWant != "" {
				mustErr(t, r, tc.errWant)
				return
			}
			mustOK(t, r)
			if tc.note != "" {
				if !strings.HasPrefix(r.Content, tc.note) {
					t.Fatalf("result %q", r.Content)
				}
				return
			}
			got := strings.Split(strings.TrimSuffix(r.Content, "\n"), "\n")
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestGrepCapsOutput(t *testing.T) {
	t.Parallel()
	s, root := newSet(t, func(e *Env) { e.OutputCap = 4096 })
	var b strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&b, "match %d\n", i)
	}
	putFile(t, root, "many.txt", b.String())
	r := mustOK(t, call(t, s, "grep", map[string]any{"pattern": "match"}))
	if len(r.Content) > 4096+200 {
		t.Fatalf("output %d bytes over the cap", len(r.Content))
	}
	if !strings.Contains(r.Content, "output cut after") || !strings.HasPrefix(r.Content, "many.txt:1: match 0\n") {
		t.Fatalf("result %q", r.Content)
	}
}

func TestExpandBracesAndGlob(t *testing.T) {
	t.Parallel()
	if got := expandBraces("a{b,c{d,e}}f{1,2}"); !slices.Equal(got, []string{"abf1", "abf2", "acdf1", "acdf2", "acef1", "acef2"}) {
		t.Fatalf("expand %v", got)
	}
	if got := expandBraces("{single}"); !slices.Equal(got, []string{"{single}"}) {
		t.Fatalf("expand %v", got)
	}
	tests := []struct {
		glob, rel string
		want      bool
	}{
		{"*.go", "a/b/c.go", true},
		{"**/*.go", "c.go", true},
		{"src/**/*.go", "src/c.go", true},
		{"src/**/*.go", "src/a/b/c.go", true},
		{"src/*.go", "src/a/c.go", false},
		{"*.go", "c.gox", false},
	}
	for _, tc := range tests {
		if got := globMatch([]string{tc.glob}, tc.rel); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v", tc.glob, tc.rel, got)
		}
	}
}
