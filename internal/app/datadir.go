package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/fsutil"
)

// ErrDataDirInRepo refuses to start a session whose repository's working
// tree holds the data directory.
var ErrDataDirInRepo = fault.New(fault.DataDirInRepo, "data directory inside the repository")

// checkDataDirOutside refuses a data directory inside the working tree of
// dir's repository: sessions, their logs (every prompt) and their
// worktrees (a second checkout of the files) would land among the user's
// files, where git status, searches and the user's own commits see them.
func checkDataDirOutside(dataDir, dir string) error {
	top := repoTop(dir)
	if top == "" {
		return nil
	}
	d := fsutil.ResolveExisting(dataDir)
	rel, err := filepath.Rel(top, d)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil
	}
	return fmt.Errorf("%w: %s is in the working tree of %s, so the sessions, their logs and their worktrees (a second checkout of your files) would be saved among your files; pass a data directory outside the repository (--data-dir DIR or YOLOP_DATA_DIR; the default is ~/.local/share/yolop) and start again (nothing was created)", ErrDataDirInRepo, dataDir, top)
}

// repoTop returns the top level of the git working tree holding dir (the
// nearest directory with a .git entry, symlinks resolved), "" outside one.
func repoTop(dir string) string {
	d := fsutil.ResolveExisting(dir)
	for {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return ""
		}
		d = up
	}
}
