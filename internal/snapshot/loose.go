package snapshot

import (
	"bufio"
	"compress/zlib"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A small tree edit (fewer new objects than packMinObjects) stores its
// blobs and trees as loose objects, as git's hash-object and mktree would,
// but written here: those two processes were most of a one-file capture.
// Loose, not packed: a pack per turn would leave the user's repository
// with hundreds of small packs, each searched by every git lookup, and
// its next `git gc --auto` would repack them.

// looseTmpPrefix starts the temporary files of writeLoose (git's own are
// tmp_obj_*; `git gc` removes either kind when old).
const looseTmpPrefix = "tmp_obj_yolop_"

// writeLoose stores objs in the objects directory as git stores loose
// objects: at xx/<the other hex digits> of the id, the zlib-compressed
// "<type> <size>\0" and content, read-only (0444 less the umask, as git
// makes them). It makes them as durable as
// git's batch mode (core.fsyncMethod=batch), which the private
// configuration asks git for: each file's data is written out, one file
// is synced (which flushes the device's cache), and only then are they
// renamed into place; the ref naming them, synced after, makes the
// renames durable. An object already there (a regular file) is
// freshened, as git does, and synced with the others. A shared
// repository's permissions (core.sharedRepository) are for git to apply:
// the caller leaves such repositories to git.
func writeLoose(objects string, objs []packObject) (err error) {
	type pending struct {
		f          *os.File
		tmp, final string
	}
	var todo []pending
	defer func() {
		for _, p := range todo {
			if p.f != nil {
				p.f.Close()
			}
			if err != nil && p.tmp != "" {
				os.Remove(p.tmp)
			}
		}
	}()
	seen := map[string]bool{}
	var zw *zlib.Writer // one for all: each new one allocates its tables
	for _, o := range objs {
		id := hex.EncodeToString(o.oid)
		if seen[id] {
			continue
		}
		seen[id] = true
		dir := filepath.Join(objects, id[:2])
		final := filepath.Join(dir, id[2:])
		if f := openStored(final); f != nil {
			// Stored already, perhaps moments ago by a command's own
			// `git add`, which git does not sync by default: synced
			// with the others, as the checkpoint will name it.
			todo = append(todo, pending{f: f})
			continue
		}
		if err := os.Mkdir(dir, 0o777); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		f, err := createReadOnly(dir)
		if err != nil {
			return err
		}
		todo = append(todo, pending{f: f, tmp: f.Name(), final: final})
		if zw, err = writeLooseBody(f, zw, o); err != nil {
			return err
		}
		if err := startWriteOut(f); err != nil {
			return err
		}
	}
	if len(todo) == 0 {
		return nil
	}
	for _, p := range todo[:len(todo)-1] {
		if err := waitWriteOut(p.f); err != nil {
			return err
		}
	}
	if err := todo[len(todo)-1].f.Sync(); err != nil {
		return err
	}
	for i := range todo {
		p := &todo[i]
		err := p.f.Close()
		p.f = nil
		if err == nil && p.tmp != "" {
			err = os.Rename(p.tmp, p.final)
		}
		if err != nil {
			return err
		}
		p.tmp = ""
	}
	return nil
}

// openStored opens the object file at final when it is one (a regular,
// non-empty file; not followed if it is a symlink), freshened as git
// freshens an object it finds (its mtime keeps it from a concurrent gc's
// prune); nil when there is none, and the object is written anew.
func openStored(final string) *os.File {
	f, err := os.OpenFile(final, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
		f.Close()
		return nil
	}
	now := unix.NsecToTimeval(time.Now().UnixNano())
	if err := unix.Futimes(int(f.Fd()), []unix.Timeval{now, now}); err != nil {
		f.Close()
		return nil
	}
	return f
}

// createReadOnly creates a new temporary file in dir with git's mode for
// an object, read-only less the umask, and opens it for writing: no
// permission is changed later through a path (which whatever can write
// dir could have swapped for a symlink meanwhile).
func createReadOnly(dir string) (*os.File, error) {
	for try := 0; ; try++ {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		name := filepath.Join(dir, looseTmpPrefix+hex.EncodeToString(b[:]))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o444)
		if errors.Is(err, os.ErrExist) && try < 10 {
			continue
		}
		return f, err
	}
}

// writeLooseBody writes o's loose form to f, with zw (made when nil)
// reset onto it, and returns zw.
func writeLooseBody(f *os.File, zw *zlib.Writer, o packObject) (*zlib.Writer, error) {
	typ := "blob"
	if o.typ == 2 {
		typ = "tree"
	}
	w := bufio.NewWriter(f)
	if zw == nil {
		var err error
		if zw, err = zlib.NewWriterLevel(w, zlib.BestSpeed); err != nil {
			return nil, err
		}
	} else {
		zw.Reset(w)
	}
	fmt.Fprintf(zw, "%s %d\x00", typ, len(o.data))
	if _, err := zw.Write(o.data); err != nil {
		return zw, err
	}
	if err := zw.Close(); err != nil {
		return zw, err
	}
	return zw, w.Flush()
}

// sharedUnknown is Engine.sharedRepo when the repository's settings could
// not be read: objects are left to git.
const sharedUnknown = "\x00unknown"

// sharedRepository reports whether core.sharedRepository asks git to give
// the repository's files group or other permissions (or is unknown).
func sharedRepository(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "false", "umask", "0", "no", "off":
		return false
	}
	return true
}
