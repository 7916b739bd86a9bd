package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/snapshot"
)

// TestCheckFolder: a folder as broad as / is refused unless asked for, as
// is one holding the data directory or lying in a session's worktree.
func TestCheckFolder(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	code := func(err error) fault.Code {
		var fe *FolderError
		if !errors.As(err, &fe) {
			return ""
		}
		return fe.FaultCode()
	}
	if err := CheckFolder(data, "/", false, nil); code(err) != fault.FolderTooBroad {
		t.Fatalf("/: %v", err)
	}
	// Asked for, / is not too broad; it still holds the data directory.
	if err := CheckFolder(data, "/", true, nil); code(err) != fault.DataDirInFolder {
		t.Fatalf("/ asked for: %v", err)
	}
	if err := CheckFolder(filepath.Join(data, "sub", "data"), data, true, nil); code(err) != fault.DataDirInFolder {
		t.Fatalf("data directory inside: %v", err)
	}
	wt := filepath.Join(data, "worktrees", "repo-1", "s_x")
	if err := os.MkdirAll(wt, 0o700); err != nil {
		t.Fatal(err)
	}
	err := CheckFolder(data, wt, true, func(string) string { return "s_x" })
	if code(err) != fault.SessionWorktree || !strings.Contains(err.Error(), "the worktree of session s_x") {
		t.Fatalf("in a session worktree: %v", err)
	}
	if err := CheckFolder(data, t.TempDir(), false, nil); err != nil {
		t.Fatalf("a project folder: %v", err)
	}
}

// TestPrepareFolder: the folder's private repository is made in the data
// directory, once per folder; a folder over the file limit is refused.
func TestPrepareFolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	data, folder := t.TempDir(), t.TempDir()
	for _, f := range []string{"a.txt", "b.txt", "c.txt"} {
		if err := os.WriteFile(filepath.Join(folder, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := PrepareFolder(ctx, data, folder, 2, 0, nil); !errors.As(err, new(*snapshot.TooManyFilesError)) || fault.Of(err) != fault.FolderTooBroad {
		t.Fatalf("over max_files: %v", err)
	}
	gitDir, err := PrepareFolder(ctx, data, folder, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if gitDir != folderGitDir(data, folder) || !strings.HasPrefix(gitDir, filepath.Join(data, "folders")+string(filepath.Separator)) {
		t.Fatalf("git dir %s", gitDir)
	}
	if again, err := PrepareFolder(ctx, data, folder, 2, 0, nil); err != nil || again != gitDir {
		t.Fatalf("prepared again: %s %v", again, err)
	}
}
