package snapshot

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/git"
)

// A capture's refs are written here as loose ref files, the way git's files
// backend writes them, when the repository keeps its refs in files (every
// repository but a reftable one) and git gives them no shared permissions:
// a git update-ref process costs 2-5 ms of a turn (two per turn), a file
// written, synced and renamed a fraction of one. Anything this path does not
// vouch for — a reftable or shared repository, a name outside the engine's
// own spelling, a ref to delete that exists, a lock held, a directory in the
// way, a symlink among the ref's directories — goes to update-ref, which
// decides as it always did; a write this path began is then completed by
// git's whole transaction (each update names its value, so doing it again
// is harmless).
//
// Like git, the file is synced before it is renamed over the ref (what
// core.fsync=reference asks of git) and its directory is not. The lock is
// git's own (<ref>.lock, created exclusively): a git pack-refs or gc
// pruning the same ref waits its turn, as it does for another git.

// errNotLoose is a ref update the loose path leaves to git.
var errNotLoose = fault.Plain("snapshot: ref update left to git")

// refUpdate is one ref of a transaction: set to oid, or made absent when
// oid is "".
type refUpdate struct {
	ref, oid string
}

// maxPackedRefs is the largest packed-refs file searched for a ref to make
// absent; a bigger one is git's to read.
const maxPackedRefs = 4 << 20

// refsInFiles reports whether refs may be written as loose files in the
// repository whose common git dir is common: git's files backend
// (extensions.refStorage unset or "files", refs/heads a directory, no
// reftable directory), with no shared permissions to give them.
func refsInFiles(common, refStorage, shared string) bool {
	if shared == sharedUnknown || sharedRepository(shared) {
		return false
	}
	if s := strings.ToLower(strings.TrimSpace(refStorage)); s != "" && s != "files" {
		return false
	}
	if st, err := os.Lstat(filepath.Join(common, "refs", "heads")); err != nil || !st.IsDir() {
		return false
	}
	if _, err := os.Lstat(filepath.Join(common, "reftable")); !errors.Is(err, os.ErrNotExist) {
		return false
	}
	return true
}

// ownRefName reports whether ref is spelled the way the engine names its
// refs: refs/yolop/ and components validName accepts (none empty, none
// starting with a dot or ending in ".lock"), a name git itself would write
// as the file of the same path.
func ownRefName(ref string) bool {
	rest, ok := strings.CutPrefix(ref, "refs/yolop/")
	if !ok {
		return false
	}
	for _, c := range strings.Split(rest, "/") {
		if !validName(c) {
			return false
		}
	}
	return true
}

// writeLooseRefs applies updates in order under common, or returns
// errNotLoose (or the error that stopped it) for git to apply them all.
func writeLooseRefs(common string, hashSize int, updates []refUpdate) error {
	for _, u := range updates {
		if !ownRefName(u.ref) || (u.oid != "" && (len(u.oid) != 2*hashSize || !git.IsOID(u.oid))) {
			return errNotLoose
		}
	}
	for _, u := range updates {
		var err error
		if u.oid == "" {
			err = refAbsent(common, u.ref)
		} else {
			err = writeLooseRef(common, u.ref, u.oid)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// refDir opens the directory of ref under common, one component after the
// other, never through a symlink (the agent may write .git where no mount
// keeps it read-only: a symlink there is git's to follow, or not), making
// the missing ones when mkdir is set. A directory missing without mkdir
// is os.ErrNotExist; anything else in the way, errNotLoose.
func refDir(common, ref string, mkdir bool) (*os.File, string, error) {
	parts := strings.Split(ref, "/")
	fd, err := unix.Open(common, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", errNotLoose
	}
	for _, p := range parts[:len(parts)-1] {
		next, err := unix.Openat(fd, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.ENOENT && mkdir {
			// 0777 less the umask, as git makes them.
			if err = unix.Mkdirat(fd, p, 0o777); err == nil || err == unix.EEXIST {
				next, err = unix.Openat(fd, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		unix.Close(fd)
		if err == unix.ENOENT {
			return nil, "", os.ErrNotExist
		}
		if err != nil {
			return nil, "", errNotLoose
		}
		fd = next
	}
	return os.NewFile(uintptr(fd), filepath.Join(common, filepath.FromSlash(ref), "..")), parts[len(parts)-1], nil
}

// refAbsent is nil when ref exists neither as a loose file nor in
// packed-refs: making it absent is then nothing to do.
func refAbsent(common, ref string) error {
	dir, name, err := refDir(common, ref, false)
	if err == nil {
		var st unix.Stat_t
		err = unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW)
		dir.Close()
		if err != unix.ENOENT {
			return errNotLoose
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	// Not followed, not waited on: a symlink or a FIFO there is git's.
	fd, err := unix.Open(filepath.Join(common, "packed-refs"), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT {
		return nil
	}
	if err != nil {
		return errNotLoose
	}
	f := os.NewFile(uintptr(fd), "packed-refs")
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() > maxPackedRefs {
		return errNotLoose
	}
	// "<oid> <ref>" lines, each tag's perhaps followed by "^<peeled>".
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxPackedRefs)
	for sc.Scan() {
		if _, name, ok := strings.Cut(sc.Text(), " "); ok && name == ref {
			return errNotLoose
		}
	}
	if sc.Err() != nil {
		return errNotLoose
	}
	return nil
}

// writeLooseRef points ref at oid: <ref>.lock created exclusively, written,
// synced and renamed over the ref, all in the ref's directory as refDir
// opened it.
func writeLooseRef(common, ref, oid string) error {
	dir, name, err := refDir(common, ref, true)
	if err != nil {
		return errNotLoose
	}
	defer dir.Close()
	dfd := int(dir.Fd())
	lock := name + ".lock"
	// 0666 less the umask, as git makes it.
	fd, err := unix.Openat(dfd, lock, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o666)
	if err != nil {
		return errNotLoose
	}
	f := os.NewFile(uintptr(fd), lock)
	_, err = f.WriteString(oid + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dfd, lock, dfd, name)
	}
	if err != nil {
		if rerr := unix.Unlinkat(dfd, lock, 0); rerr != nil && rerr != unix.ENOENT {
			// A lock left behind would stop git too: say so.
			return fmt.Errorf("snapshot: write %s: %w (and its lock %s stays: %v)", ref, err, lock, rerr)
		}
		return errNotLoose
	}
	return nil
}

// updateRefs applies a capture's ref transaction: as loose files where
// refsInFiles allowed it at open, else (or when that path declines) with
// one update-ref.
func (e *Engine) updateRefs(ctx context.Context, updates []refUpdate) error {
	if e.refFiles {
		err := writeLooseRefs(e.commonDir, e.hashSize(), updates)
		if err == nil {
			e.looseRefWrites++
			return nil
		}
		if !errors.Is(err, errNotLoose) {
			return err
		}
	}
	var in strings.Builder
	for _, u := range updates {
		if u.oid == "" {
			in.WriteString("delete " + u.ref + "\n")
		} else {
			in.WriteString("update " + u.ref + " " + u.oid + "\n")
		}
	}
	_, err := e.repo.RunInput(ctx, []byte(in.String()), "-c", "core.logAllRefUpdates=false", "-c", "core.fsync=reference", "update-ref", "--no-deref", "--stdin")
	return err
}
