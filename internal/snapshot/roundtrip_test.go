package snapshot

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// baseScript builds a worktree with every kind of entry a snapshot holds
// and the things it must leave alone.
const baseScript = `
printf 'build/\n*.log\n' > .gitignore
mkdir -p src/pkg docs bin
printf 'package main\n' > src/main.go
printf 'line1\nline2\n' > src/pkg/a.txt
printf '\000\001\002\377binary\r\n' > bin/blob.bin
printf '#!/bin/sh\necho hi\n' > bin/run.sh && chmod +x bin/run.sh
ln -s ../src/main.go docs/link-to-main
ln -s nowhere/at/all docs/dangling
printf 'crlf\r\nline\r\n' > docs/crlf.txt
git add -A && git commit -qm base
printf 'untracked\n' > notes.txt
mkdir -p build node_modules/dep sub/target
printf 'ignored build output\n' > build/out.o
printf 'dep\n' > node_modules/dep/index.js
printf 'rust\n' > sub/target/debug.bin
printf 'log\n' > src/debug.log
`

func TestRoundTripMatrix(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		change string
	}{
		{"no change", `true`},
		{"create", `printf 'new\n' > new.txt; mkdir -p deep/er; printf 'x' > deep/er/f`},
		{"delete tracked and untracked", `rm src/main.go notes.txt`},
		{"delete whole dir", `rm -r src`},
		{"rename", `mv src/pkg/a.txt src/b.txt; mv docs documentation`},
		{"modify same size", `printf 'LINE1\nline2\n' > src/pkg/a.txt`},
		{"binary", `printf '\377\376\000\000zz' > bin/blob.bin; printf '\000' > new.bin`},
		{"exec bit on and off", `chmod +x src/main.go; chmod -x bin/run.sh`},
		{"symlink retarget and dangling", `rm docs/link-to-main; ln -s elsewhere docs/link-to-main; rm docs/dangling`},
		{"file to symlink", `rm src/main.go; ln -s pkg/a.txt src/main.go`},
		{"symlink to file", `rm docs/dangling; printf 'now a file\n' > docs/dangling`},
		{"file to dir", `rm notes.txt; mkdir notes.txt; printf 'inner\n' > notes.txt/inner`},
		{"dir to file", `rm -r src/pkg; printf 'was a dir\n' > src/pkg`},
		{"dir to symlink", `rm -r src/pkg; ln -s ../docs src/pkg`},
		{"symlink to dir", `rm docs/link-to-main; mkdir docs/link-to-main; printf 'x\n' > docs/link-to-main/f`},
		{"crlf content", `printf 'a\r\nb\n\r\n' > docs/crlf.txt; printf 'lf\n' > lf.txt`},
		{"odd names", "printf 'x' > \"$(printf 'new\\nline')\"; printf 'y' > \"$(printf 'caf\\351')\"; printf 'z' > ' sp ace '"},
		{"ignored and blocklisted edits", `printf 'more\n' >> build/out.o; printf 'more\n' > src/new.log; rm -r node_modules/dep; printf 'n\n' > sub/target/x`},
		{"everything", `rm -r src; mv notes.txt n2.txt; chmod +x n2.txt; printf '\000' > bin/blob.bin; ln -sf x docs/crlf.txt; mkdir e; printf '' > e/empty`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			wt := gittest.NewRepo(t)
			sh(t, wt, baseScript)
			gitDir := filepath.Join(wt, ".git")
			e := openEngine(t, wt)
			beforeState := gitState(t, gitDir)
			want := manifest(t, wt)
			cp := capture(t, e, "cp1")

			sh(t, wt, tc.change)
			changed := manifest(t, wt)
			ignoredAfter := map[string]string{}
			for k, v := range changed {
				if excludedPath(k) || filepath.Ext(k) == ".log" || k == "build" || k == "node_modules" {
					ignoredAfter[k] = v
				}
			}
			cur := capture(t, e, "r1")
			res, err := e.Restore(ctx, cur, cp.Tree)
			if err != nil {
				t.Fatalf("Restore: %v", err)
			}
			if res.Tree != cp.Tree {
				t.Fatalf("restored tree %s, want %s", res.Tree, cp.Tree)
			}
			got := manifest(t, wt)
			// Ignored and blocklisted paths keep whatever the change did.
			for k := range want {
				if excludedPath(k) || filepath.Ext(k) == ".log" {
					delete(want, k)
				}
			}
			for k, v := range ignoredAfter {
				want[k] = v
			}
			// Directories that only held captured files are removed, while
			// ignored ones are kept: compare files and links, then dirs
			// that must exist.
			if d := diffManifests(filesOnly(want), filesOnly(got)); d != "" {
				t.Fatalf("manifest differs after restore:\n%s", d)
			}
			sameState(t, beforeState, gitState(t, gitDir))
			// The private index follows the restore: capturing again gives
			// the target without changes.
			if again := capture(t, e, ""); again.Tree != cp.Tree {
				t.Fatalf("capture after restore = %s, want %s", again.Tree, cp.Tree)
			}
		})
	}
}

func filesOnly(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if v != "dir" {
			out[k] = v
		}
	}
	return out
}
