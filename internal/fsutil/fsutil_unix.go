//go:build unix

package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// WriteFileAtomicAt is WriteFileAtomic for the entry name of the open
// directory dir: the temporary file, the rename and the directory fsync
// all go through dir's descriptor, so nothing on the path to dir (a
// directory swapped for a symlink meanwhile) can redirect the write. name
// is one component; a symlink at name is replaced, never followed.
func WriteFileAtomicAt(dir *os.File, name string, data []byte, perm fs.FileMode) (err error) {
	shown := filepath.Join(dir.Name(), name)
	dfd := int(dir.Fd())
	var tmp string
	var fd int
	for try := 0; ; try++ {
		tmp = "." + name + ".tmp-" + strconv.FormatUint(uint64(rand.Uint32()), 10)
		fd, err = unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EINTR) || (errors.Is(err, unix.EEXIST) && try < 100) {
			continue
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", shown, &fs.PathError{Op: "create", Path: filepath.Join(dir.Name(), tmp), Err: err})
		}
		break
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dir.Name(), tmp))
	defer func() {
		if err != nil {
			f.Close()
			_ = unix.Unlinkat(dfd, tmp, 0) // the write failed already; this is cleanup
			err = fmt.Errorf("write %s: %w", shown, err)
		}
	}()
	// The file was created 0600; fchmod is not subject to umask.
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = unix.Renameat(dfd, tmp, dfd, name); err != nil {
		return &fs.PathError{Op: "rename", Path: shown, Err: err}
	}
	if err = dir.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir.Name(), err)
	}
	return nil
}
