// Package fsutil holds the one way yolop replaces a file durably (and its
// unsynced form for derived files that are checked when read), and the
// few path helpers every layer shares: comparing paths through symlinks,
// resolving a path that does not exist yet, and a size for a person.
package fsutil

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces path with data: a temporary file in the same
// directory created with perm (set explicitly, so umask does not apply and
// there is no window in which the file is more open), fsync, rename, fsync
// of the directory. Readers, and a crash at any point, see the old content
// or the new, never a mix; the temporary file is removed on failure.
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) error {
	if err := ReplaceFile(path, data, perm); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// WriteFileCache replaces path with data for readers as WriteFileAtomic
// does (they see the old content or the new), without any fsync: after a
// system crash the file may hold the old content, the new, or a torn or
// empty one. Only for a derived file that is checked when read and
// rebuilt when the check fails, which a crash may only make slower.
func WriteFileCache(path string, data []byte, perm fs.FileMode) error {
	return replaceFile(path, data, perm, false)
}

// ReplaceFile is WriteFileAtomic without the fsync of the directory: the
// file's content is on disk before its name, but the new name itself is
// durable only once the caller syncs the directory.
func ReplaceFile(path string, data []byte, perm fs.FileMode) error {
	return replaceFile(path, data, perm, true)
}

func replaceFile(path string, data []byte, perm fs.FileMode, sync bool) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	// CreateTemp makes the file 0600; Chmod is not subject to umask.
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if sync {
		if err = f.Sync(); err != nil {
			return err
		}
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// SyncDir fsyncs a directory, making a rename or a new entry in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}
