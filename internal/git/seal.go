package git

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/yolop-dev/yolop/internal/fault"
)

// Dirs are where git finds a linked worktree's repository, taken from
// yolop's own records (a session's workspace.json, a spare's parking
// record), never from what lies in the worktree: its `.git` link and its
// administrative directory's `commondir` file are writable by the agent's
// commands, and a git run that followed them could be pointed at a git
// directory the agent built (with filters and hooks of its own).
type Dirs struct {
	GitDir    string // the worktree's administrative directory, <common>/worktrees/<id>
	CommonDir string // the repository's common git directory
	WorkTree  string // the worktree's top level
}

// Env pins a git process to d: GIT_DIR, GIT_COMMON_DIR and GIT_WORK_TREE.
func (d Dirs) Env() []string {
	return []string{"GIT_DIR=" + d.GitDir, "GIT_COMMON_DIR=" + d.CommonDir, "GIT_WORK_TREE=" + d.WorkTree}
}

// Runner returns a runner in the worktree pinned to d.
func (d Dirs) Runner() *Runner { return New(d.WorkTree).With(d.Env()...) }

// Set reports whether d names all three directories.
func (d Dirs) Set() bool { return d.GitDir != "" && d.CommonDir != "" && d.WorkTree != "" }

// AdminDirOf returns the administrative directory of the linked worktree
// at worktree from the repository's own records: the entry of
// commonDir/worktrees whose `gitdir` file names worktree/.git. Nothing in
// the worktree is read.
func AdminDirOf(worktree, commonDir string) (string, error) {
	return findAdminDir(worktree, commonDir)
}

// The files of a worktree's administrative directory that change what git
// runs there and that the agent's commands can write: config.worktree is
// read (when the repository sets extensions.worktreeConfig) after the
// repository's config, so it can define filter drivers, textconv commands
// and core.hooksPath; info/sparse-checkout decides which files git writes.
const (
	ConfigWorktreeFile = "config.worktree"
	SparseCheckoutFile = "info/sparse-checkout"
)

// Seal records the content of those files when yolop made or claimed the
// worktree: the sha256 of each, "" for a file that did not exist.
type Seal struct {
	ConfigWorktree string `json:"config_worktree"`
	SparseCheckout string `json:"sparse_checkout"`
}

// ErrConfigChanged is wrapped by *ConfigChangedError.
var ErrConfigChanged = fault.New(fault.WorktreeConfigChanged, "git: the worktree's git configuration changed")

// ConfigChangedError says which sealed file changed since it was recorded.
type ConfigChangedError struct {
	File string // its path
	Was  string // the recorded sha256, "" when it did not exist
	Now  string // its sha256 now, "" when it no longer exists
}

func (e *ConfigChangedError) Error() string {
	was := "it did not exist then"
	if e.Was != "" {
		was = "it had sha256 " + e.Was[:12] + "… then"
	}
	fix := fmt.Sprintf("remove it (rm %s) to let yolop run git for the session again", e.File)
	if e.Was != "" {
		fix = "put back what it held (sha256 " + e.Was[:12] + "…) to let yolop run git for the session again"
	}
	verb := "was changed"
	switch {
	case e.Now == "":
		verb = "was removed"
	case e.Was == "":
		verb = "was created"
	}
	return fmt.Sprintf("%s %s after yolop recorded it (%s): a command of the session's agent can write it, and git would run what it names (filters, hooks), so yolop runs no git for this session until it is as recorded; inspect it with `git config --file %s --list` (or cat it), and %s", e.File, verb, was, e.File, fix)
}

func (e *ConfigChangedError) Unwrap() error { return ErrConfigChanged }

// ReadSeal hashes the sealed files of the administrative directory gitDir.
func ReadSeal(gitDir string) (Seal, error) {
	var s Seal
	var err error
	if s.ConfigWorktree, err = hashFile(filepath.Join(gitDir, ConfigWorktreeFile)); err != nil {
		return Seal{}, err
	}
	if s.SparseCheckout, err = hashFile(filepath.Join(gitDir, SparseCheckoutFile)); err != nil {
		return Seal{}, err
	}
	return s, nil
}

// CheckSeal fails with a *ConfigChangedError when a sealed file of gitDir
// is not as want records. It costs two small file reads.
func CheckSeal(gitDir string, want Seal) error {
	for _, f := range []struct{ name, want string }{{ConfigWorktreeFile, want.ConfigWorktree}, {SparseCheckoutFile, want.SparseCheckout}} {
		p := filepath.Join(gitDir, f.name)
		got, err := hashFile(p)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrConfigChanged, err)
		}
		if got != f.want {
			return &ConfigChangedError{File: p, Was: f.want, Now: got}
		}
	}
	return nil
}

// hashFile is the sha256 of the file at p, "" when there is none. Anything
// but a regular file (a symlink, a directory) counts as present and
// unreadable: git would follow it.
func hashFile(p string) (string, error) {
	st, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "not-a-file:" + st.Mode().Type().String(), nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
