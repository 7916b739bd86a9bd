package snapshot

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

func TestExcludedListsIgnoredAndBlocklisted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	gittest.WriteFile(t, repo, ".gitignore", "*.log\nsecrets/\n")
	gittest.Commit(t, repo, "ignore")
	for _, p := range []string{"app.log", "sub/deep.log", "secrets/key.pem", "node_modules/pkg/index.js", "src/build/out.o", "kept.txt"} {
		gittest.WriteFile(t, repo, p, "x\n")
	}
	e, err := Open(ctx, Options{Worktree: repo, SessionID: "s_test", StateDir: filepath.Join(t.TempDir(), "state")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Wait)
	index, err := os.ReadFile(filepath.Join(repo, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Excluded(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"app.log", "node_modules/", "secrets/", "src/build/", "sub/deep.log"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Excluded = %q, want %q", got, want)
	}
	after, _ := os.ReadFile(filepath.Join(repo, ".git", "index"))
	if string(after) != string(index) {
		t.Fatal("Excluded changed the real index")
	}
	// The list is capped, and says how many were left out.
	for i := 0; i < MaxExcluded+5; i++ {
		gittest.WriteFile(t, repo, fmt.Sprintf("many/f%03d.log", i), "x\n")
	}
	got, err = e.Excluded(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != MaxExcluded || got[len(got)-1] != fmt.Sprintf("… and %d more", len(want)+MaxExcluded+5-MaxExcluded+1) {
		t.Fatalf("capped list = %d entries ending %q", len(got), got[len(got)-1])
	}
}

// TestExcludedPath: a path is left out when any of its components is
// blocklisted (".git" in any case) or a restore temporary.
func TestExcludedPath(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{
		"a/b.txt": false, "node_modules": true, "x/node_modules/y": true, "x/.GIT/config": true,
		".gitignore": false, "a/.git": true, "a/.gitx/b": false, "d/.yolop-tmp-1": true,
		"d/e.yolop-tmp-1": false, "build.txt": false, "a//build/": true, "": false, "git/.Git": true,
	} {
		if got := excludedPath(p); got != want {
			t.Errorf("excludedPath(%q) = %v, want %v", p, got, want)
		}
	}
}
