//go:build !linux && !darwin

package snapshot

import (
	"io/fs"
	"os"
	"path/filepath"
)

// openDir opens a directory for reading.
func openDir(path string) (*os.File, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrInvalid}
	}
	return os.Open(path)
}

// permAt returns the permission bits of name in the directory dir (its
// change time is not known here: no watcher is armed by a walk).
func permAt(dir *os.File, name string) (fs.FileMode, int64, bool) {
	st, err := os.Lstat(filepath.Join(dir.Name(), name))
	if err != nil || !st.Mode().IsRegular() {
		return 0, 0, false
	}
	return st.Mode().Perm(), 0, true
}

func dirCtime(dir *os.File) (int64, bool) { return 0, false }
