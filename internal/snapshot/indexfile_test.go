package snapshot

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// TestReadIndexFileMatchesGit: the index reader sees the paths, modes,
// stages and flags `git ls-files -s -v` sees, for index versions 2, 3
// (extended flags) and 4 (prefix-compressed paths), and refuses a split
// index.
func TestReadIndexFileMatchesGit(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t)
	for i := 0; i < 30; i++ {
		gittest.WriteFile(t, repo, fmt.Sprintf("dir%d/sub/file-%03d.txt", i%4, i), "x\n")
	}
	gittest.WriteFile(t, repo, "a-rather-long-directory-name/with/a-long-file-name.go", "y\n")
	head := gittest.Commit(t, repo, "files")
	gittest.Git(t, repo, "update-index", "--add", "--cacheinfo", "160000,"+head+",sub")
	gittest.Git(t, repo, "update-index", "--assume-unchanged", "dir1/sub/file-001.txt")
	index := filepath.Join(repo, ".git", "index")
	for _, v := range []string{"2", "3", "4"} {
		if v == "3" {
			gittest.Git(t, repo, "update-index", "--skip-worktree", "dir2/sub/file-002.txt")
		}
		gittest.Git(t, repo, "update-index", "--index-version", v)
		ents, err := readIndexFile(index, 20)
		if err != nil {
			t.Fatalf("version %s: %v", v, err)
		}
		var got []string
		for _, e := range ents {
			tag := "H"
			if e.skipWorktree {
				tag = "S"
			}
			if e.assumed {
				tag = strings.ToLower(tag)
			}
			if e.ctime <= 0 && e.mode != 0o160000 {
				t.Fatalf("version %s: %s has no ctime", v, e.path)
			}
			got = append(got, fmt.Sprintf("%s %06o %d\t%s", tag, e.mode, e.stage, e.path))
		}
		var want []string
		for _, l := range strings.Split(gittest.Git(t, repo, "ls-files", "-s", "-v"), "\n") {
			f := strings.Fields(l) // tag mode oid stage path
			want = append(want, fmt.Sprintf("%s %s %s\t%s", f[0], f[1], f[3], f[4]))
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("version %s:\nread:\n%s\ngit:\n%s", v, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	gittest.Git(t, repo, "update-index", "--index-version", "2")
	gittest.Git(t, repo, "update-index", "--split-index")
	if _, err := readIndexFile(index, 20); err != errIndexFormat {
		t.Fatalf("split index: err = %v, want errIndexFormat", err)
	}
}
