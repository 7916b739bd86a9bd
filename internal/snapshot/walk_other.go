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

// statAt returns the type and permission bits of name in the directory
// dir (its other stat data are not known here: no watcher is armed and no
// first capture compares them).
func statAt(dir *os.File, name string) (walkedFile, error) {
	st, err := os.Lstat(filepath.Join(dir.Name(), name))
	if err != nil {
		return walkedFile{}, err
	}
	var typ uint32
	switch {
	case st.Mode().IsRegular():
		typ = modeRegular
	case st.Mode()&fs.ModeSymlink != 0:
		typ = modeSymlink
	}
	return walkedFile{mode: typ | uint32(st.Mode().Perm()), size: st.Size()}, nil
}

func dirCtime(dir *os.File) (int64, bool) { return 0, false }
