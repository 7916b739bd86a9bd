package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/fsutil"
)

// DataDir resolves yolop's data directory: the flag, then $YOLOP_DATA_DIR,
// then $XDG_DATA_HOME/yolop, then ~/.local/share/yolop. The result is
// absolute. The directory is not created.
func DataDir(flag string) (string, error) {
	for _, v := range []string{flag, os.Getenv("YOLOP_DATA_DIR")} {
		if v != "" {
			abs, err := filepath.Abs(v)
			if err != nil {
				return "", fmt.Errorf("data dir %q: %w", v, err)
			}
			return abs, nil
		}
	}
	// The XDG spec says a relative XDG_DATA_HOME is invalid and must be
	// ignored.
	if x := os.Getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "yolop"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return "", fmt.Errorf("data dir: no home directory (%v); pass --data-dir or set YOLOP_DATA_DIR", err)
	}
	return filepath.Join(home, ".local", "share", "yolop"), nil
}

// ResolveDataDir is DataDir with a note for the user when the directory
// came from a relative --data-dir or YOLOP_DATA_DIR ("" otherwise): a
// relative path is resolved against the current directory, so the same
// flag names another directory elsewhere.
func ResolveDataDir(flag string) (dir, note string, err error) {
	dir, err = DataDir(flag)
	if err != nil {
		return "", "", err
	}
	from, raw := "--data-dir", flag
	if raw == "" {
		from, raw = "YOLOP_DATA_DIR", os.Getenv("YOLOP_DATA_DIR")
	}
	if raw != "" && !filepath.IsAbs(raw) {
		note = fmt.Sprintf("data directory %s (%s %s, relative to the current directory)", dir, from, raw)
	}
	return dir, note, nil
}

// WorkDir is the directory a command works in: dir (-C), or the current
// directory when dir is "", absolute and with its symlinks resolved, so a
// folder reached through a symlink is the same folder (git resolves a
// checkout's top level the same way).
func WorkDir(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		dir = wd
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	return abs, nil
}

// ErrDataDirInRepo refuses to start a session whose repository's working
// tree holds the data directory.
var ErrDataDirInRepo = fault.New(fault.DataDirInRepo, "data directory inside the repository")

// CheckDataDir refuses a data directory inside the working tree of dir's
// repository: sessions, their logs (every prompt) and their worktrees (a
// second checkout of the files) would land among the user's files, where
// git status, searches and the user's own commits see them.
func CheckDataDir(dataDir, dir string) error {
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
