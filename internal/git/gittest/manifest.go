package gittest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Entry describes one path of a directory tree, as Manifest saw it.
type Entry struct {
	Type fs.FileMode // 0 for a regular file, fs.ModeDir, fs.ModeSymlink
	Perm fs.FileMode // permission bits
	Hash string      // hex SHA-256 of a file's content
	Link string      // a symlink's target
	Data []byte      // a file's content
}

// Exec reports whether a regular file has its owner-executable bit: the
// one mode bit a git tree records besides the type.
func (e Entry) Exec() bool { return e.Type == 0 && e.Perm&0o100 != 0 }

// ManifestOptions select what Manifest lists.
type ManifestOptions struct {
	// Dirs lists directories too (so a missing or extra empty directory
	// shows up); by default only files and symlinks are listed.
	Dirs bool
	// Skip leaves out a slash-separated relative path (and everything
	// below it). The top-level .git is always left out.
	Skip func(rel string) bool
}

// Manifest describes every path under root except the top-level .git,
// keyed by slash-separated relative path, so two calls compare the whole
// state of a worktree: content, type, permissions and link targets.
func Manifest(t testing.TB, root string, o ManifestOptions) map[string]Entry {
	t.Helper()
	m, err := ReadManifest(root, o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// ReadManifest is Manifest for callers without a testing.TB (testscript
// commands).
func ReadManifest(root string, o ManifestOptions) (map[string]Entry, error) {
	m := map[string]Entry{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == ".git" || (o.Skip != nil && o.Skip(rel)) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		e := Entry{Type: st.Mode().Type(), Perm: st.Mode().Perm()}
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			if e.Link, err = os.Readlink(p); err != nil {
				return err
			}
		case st.IsDir():
			if !o.Dirs {
				return nil
			}
		default:
			if e.Data, err = os.ReadFile(p); err != nil {
				return err
			}
			sum := sha256.Sum256(e.Data)
			e.Hash = hex.EncodeToString(sum[:])
		}
		m[rel] = e
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("manifest of %s: %w", root, err)
	}
	return m, nil
}
