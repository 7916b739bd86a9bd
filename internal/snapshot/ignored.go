package snapshot

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/yolop-dev/yolop/internal/git"
)

// Ignore rules can change under a session from outside its worktree: the
// repository's info/exclude and core.excludesFile (shared by every worktree
// of the repository, never part of a snapshot). A file captured before such
// a rule appeared is still restored, byte for byte, but the next capture no
// longer sees it. The restore therefore verifies such a file by looking at
// it (ignoredMatch), and previews name it (RestoreCheck.Ignored).

// checkIgnored returns which of paths the ignore rules in force ignore in
// the work tree workTree (the worktree itself, or a scratch tree holding
// the .gitignore files a restore will leave): the worktree's .gitignore
// files, the repository's info/exclude and core.excludesFile, and the
// write blocklist. The caller holds e.mu.
func (e *Engine) checkIgnored(ctx context.Context, workTree string, paths []string) (map[string]bool, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	if err := writeIfChanged(filepath.Join(e.privDir, "info", "exclude"), []byte(e.excludeTextFresh())); err != nil {
		return nil, err
	}
	// check-ignore reads its paths as pathspecs without wildcards but
	// with magic (":(top)x"), and refuses literal mode: a path that
	// starts with ':' is passed as "./:…", which it normalises back.
	var in strings.Builder
	for _, p := range paths {
		if strings.HasPrefix(p, ":") {
			in.WriteString("./")
		}
		in.WriteString(p + "\x00")
	}
	r := e.priv.InDir(workTree).With("GIT_WORK_TREE=" + workTree)
	args := append(e.privConfig(), "check-ignore", "--no-index", "-z", "--stdin")
	out, err := r.RunInput(ctx, []byte(in.String()), args...)
	if err != nil {
		var ge *git.Error
		if errors.As(err, &ge) && ge.ExitCode == 1 {
			return nil, nil // none is ignored
		}
		return nil, fmt.Errorf("snapshot: check ignore rules: %w", err)
	}
	set := map[string]bool{}
	for _, p := range git.SplitZ(out) {
		if p != "" {
			set[p] = true
		}
	}
	return set, nil
}

// ignoredAfter returns which of the paths changes writes the ignore rules
// will ignore once the restore is done: the .gitignore files the change set
// writes take their target content, those it deletes are gone, the others
// stay as they are on disk, and the rules from outside the worktree are the
// ones in force now. The caller holds e.mu.
func (e *Engine) ignoredAfter(ctx context.Context, changes []Change) (map[string]bool, error) {
	var written []string
	ignoreFiles := map[string]Change{} // directory -> change of its .gitignore
	for _, c := range changes {
		if path.Base(c.Path) == ".gitignore" {
			ignoreFiles[path.Dir(c.Path)] = c
		}
		if c.Kind != Deleted {
			written = append(written, c.Path)
		}
	}
	if len(written) == 0 {
		return nil, nil
	}
	// A scratch work tree holds, for every directory along the written
	// paths, the .gitignore that will be there after the restore.
	scratch, err := os.MkdirTemp(e.stateDir, "ignore-check-")
	if err != nil {
		return nil, fmt.Errorf("snapshot: check ignore rules: %w", err)
	}
	defer os.RemoveAll(scratch)
	dirs := map[string]bool{".": true}
	for _, p := range written {
		for d := path.Dir(p); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	var fromTarget []Change
	var fromDisk []string
	for d := range dirs {
		if c, ok := ignoreFiles[d]; ok {
			// git does not follow a symlinked .gitignore.
			if c.Kind != Deleted && c.NewMode != "120000" {
				fromTarget = append(fromTarget, c)
			}
			continue
		}
		fromDisk = append(fromDisk, d)
	}
	sort.Strings(fromDisk)
	for _, d := range fromDisk {
		b, err := readRegular(filepath.Join(e.root, d, ".gitignore"))
		if err != nil || b == nil {
			continue
		}
		if err := writeScratch(scratch, d, b); err != nil {
			return nil, err
		}
	}
	if len(fromTarget) > 0 {
		sort.Slice(fromTarget, func(a, b int) bool { return fromTarget[a].Path < fromTarget[b].Path })
		oids := make([]string, len(fromTarget))
		for i, c := range fromTarget {
			oids[i] = c.NewOID
		}
		blobs, err := e.openBlobs(ctx, oids)
		if err != nil {
			return nil, fmt.Errorf("snapshot: check ignore rules: %w", err)
		}
		for _, c := range fromTarget {
			b, err := blobs.next(c.NewOID)
			if err != nil {
				_ = blobs.close()
				return nil, err
			}
			if err := writeScratch(scratch, path.Dir(c.Path), b); err != nil {
				_ = blobs.close()
				return nil, err
			}
		}
		if err := blobs.close(); err != nil {
			return nil, fmt.Errorf("snapshot: check ignore rules: %w", err)
		}
	}
	return e.checkIgnored(ctx, scratch, written)
}

func writeScratch(scratch, dir string, content []byte) error {
	d := filepath.Join(scratch, filepath.FromSlash(dir))
	if err := os.MkdirAll(d, 0o700); err != nil {
		return fmt.Errorf("snapshot: check ignore rules: %w", err)
	}
	if err := os.WriteFile(filepath.Join(d, ".gitignore"), content, 0o600); err != nil {
		return fmt.Errorf("snapshot: check ignore rules: %w", err)
	}
	return nil
}

// readRegular reads a regular file, nil when there is none (missing, a
// symlink, a directory).
func readRegular(p string) ([]byte, error) {
	st, err := os.Lstat(p)
	if err != nil || !st.Mode().IsRegular() {
		return nil, nil
	}
	return os.ReadFile(p)
}

// diskMatches reports whether the worktree holds at rel exactly the entry
// mode/oid names: a file with that content and exec bit, or a symlink with
// that target. Nothing is followed through a symlinked parent.
func (e *Engine) diskMatches(rel, mode, oid string) (bool, error) {
	if e.beyondSymlink(rel) {
		return false, nil
	}
	full := filepath.Join(e.root, rel)
	st, err := os.Lstat(full)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var content []byte
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		if mode != "120000" {
			return false, nil
		}
		t, err := os.Readlink(full)
		if err != nil {
			return false, err
		}
		content = []byte(t)
	case st.Mode().IsRegular():
		exec := st.Mode().Perm()&0o100 != 0
		if (mode == "100755") != exec || mode == "120000" {
			return false, nil
		}
		f, err := os.Open(full)
		if err != nil {
			return false, err
		}
		defer f.Close()
		got, err := e.blobID(f, st.Size())
		if err != nil {
			return false, err
		}
		return got == oid, nil
	default:
		return false, nil
	}
	got, err := e.blobID(bytes.NewReader(content), int64(len(content)))
	return err == nil && got == oid, err
}

// blobID computes the git blob id of size bytes read from r.
func (e *Engine) blobID(r io.Reader, size int64) (string, error) {
	var h hash.Hash
	switch e.objFormat {
	case "sha256":
		h = sha256.New()
	default:
		h = sha1.New()
	}
	h.Write([]byte("blob " + strconv.FormatInt(size, 10) + "\x00"))
	n, err := io.Copy(h, r)
	if err != nil {
		return "", err
	}
	if n != size {
		return "", fmt.Errorf("snapshot: file changed size while hashing")
	}
	return fmt.Sprintf("%x", h.Sum(nil)), nil
}
