package worktree

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/yolop-dev/yolop/internal/blocklist"
	"github.com/yolop-dev/yolop/internal/fsutil"
	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/snapshot"
	"github.com/yolop-dev/yolop/internal/spawn"
)

// recordSuffix names a spare's parking record, beside it in the data
// directory: <spare>.park (.spare-1.park for .spare-1). The agent's
// commands can write the worktree and its administrative directory, never
// the data directory, so nothing they plant can make a claim take the
// spare for what parking left.
const recordSuffix = ".park"

// parkRecord is what parking (or preparing) left, checked when the spare
// is claimed: any difference refuses it.
type parkRecord struct {
	// From is the session the worktree was parked from ("" for a
	// prepared spare).
	From string `json:"from"`
	// Head is the commit its HEAD is detached at.
	Head string `json:"head"`
	// GitDir is its administrative directory, made fresh by parking.
	GitDir string `json:"git_dir"`
	// Seal is what config.worktree and info/sparse-checkout held.
	Seal git.Seal `json:"seal"`
	// Walk is the snapshot walk of the spare (snapshot.Walk), so that the
	// first capture of the session that claims it need not walk the tree.
	Walk *snapshot.Walk `json:"walk,omitempty"`
	// Shared holds the shared directories ([worktree] share) a prepared
	// spare got from the checkout, each with its shareStamp there; a claim
	// keeps those whose stamp the checkout still has.
	Shared map[string]string `json:"shared,omitempty"`
}

func writeRecord(spare string, r parkRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(spare+recordSuffix, b, 0o600); err != nil {
		return fmt.Errorf("worktree: write the parking record of %s: %w", spare, err)
	}
	return nil
}

func readRecord(spare string) (parkRecord, error) {
	var r parkRecord
	b, err := os.ReadFile(spare + recordSuffix)
	if err != nil {
		return r, fmt.Errorf("it has no parking record (%v)", err)
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Head == "" || r.GitDir == "" {
		return parkRecord{}, fmt.Errorf("its parking record %s is damaged", spare+recordSuffix)
	}
	return r, nil
}

// moveRecord renames the record of the spare at from to go with to.
func moveRecord(from, to string) error {
	if err := os.Rename(from+recordSuffix, to+recordSuffix); err != nil {
		return fmt.Errorf("worktree: move the parking record of %s: %w", from, err)
	}
	return nil
}

// dirsOf pins git runs on the worktree at path to its administrative
// directory admin and the repository common.
func dirsOf(path, admin, common string) git.Dirs {
	return git.Dirs{GitDir: admin, CommonDir: common, WorkTree: path}
}

// gitAdminFiles are the only entries an administrative directory of a
// spare may hold: git's own bookkeeping of a clean, detached worktree.
// Anything else (config.worktree, info/sparse-checkout, hooks, a lock, an
// operation in progress, notes of any tool) refuses the spare.
var gitAdminFiles = map[string]bool{"HEAD": true, "ORIG_HEAD": true, "commondir": true, "gitdir": true, "index": true, "logs": true}

// foreignAdminFile names an entry of admin that is not one of git's
// files of a clean worktree, "" when there is none.
func foreignAdminFile(admin string) (string, error) {
	ents, err := os.ReadDir(admin)
	if err != nil {
		return "", err
	}
	for _, e := range ents {
		if !gitAdminFiles[e.Name()] {
			return e.Name(), nil
		}
	}
	return "", nil
}

// busy says which processes of the session started for it still run, ""
// when none does (the session's process ledger in the data directory).
func (m *Manager) busy(sessionID string) string {
	if sessionID == "" {
		return ""
	}
	root, err := m.root()
	if err != nil {
		return ""
	}
	live, err := spawn.Living(filepath.Join(filepath.Dir(root), "sessions", sessionID, spawn.LedgerFile))
	if err != nil || len(live) == 0 {
		return ""
	}
	var pids []string
	for _, r := range live {
		pids = append(pids, fmt.Sprint(r.PID))
	}
	return fmt.Sprintf("processes of session %s still run (pid %s)", sessionID, strings.Join(pids, ", "))
}

// recycle moves the linked worktree at from (administrative directory
// admin, repository common) to the new directory to: to is made fresh and
// every top-level entry of from is renamed into it, and a fresh
// administrative directory is made for it (git's files only: HEAD detached
// at the worktree's commit, commondir, gitdir; no index, no config, no
// logs). from and admin are then removed. It returns the new
// administrative directory and the commit.
//
// Renaming the directory itself (git worktree move) would not do: Landlock
// rules are attached to directory inodes, so a process still running in
// the old session's sandbox (one that escaped every ledger) could write
// the directory wherever it is renamed to, the next session's worktree
// included. After recycle no directory of the old session's policy is an
// ancestor of the worktree or of its administrative directory. The
// repository's objects and the refs/heads/yolop/ directory stay shared by
// every session; they are what a session may write by design.
func recycle(ctx context.Context, common, from, admin, to string) (newAdmin, head string, err error) {
	out, err := dirsOf(from, admin, common).Runner().Run(ctx, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return "", "", fmt.Errorf("worktree: read the commit of %s: %w", from, err)
	}
	head = git.Trim(out)
	if err := os.Mkdir(to, 0o755); err != nil {
		return "", "", fmt.Errorf("worktree: %w", err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		return "", "", fmt.Errorf("worktree: %w", err)
	}
	for _, e := range ents {
		if e.Name() == ".git" {
			continue
		}
		if err := os.Rename(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return "", "", fmt.Errorf("worktree: move %s into %s: %w", e.Name(), to, err)
		}
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	newAdmin = filepath.Join(common, "worktrees", "yolop-"+hex.EncodeToString(b[:]))
	if err := os.Mkdir(newAdmin, 0o755); err != nil {
		return "", "", fmt.Errorf("worktree: %w", err)
	}
	files := []struct{ name, content string }{
		{"HEAD", head + "\n"},
		{"commondir", common + "\n"},
		{"gitdir", filepath.Join(to, ".git") + "\n"},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(newAdmin, f.name), []byte(f.content), 0o644); err != nil {
			return "", "", fmt.Errorf("worktree: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(to, ".git"), []byte("gitdir: "+newAdmin+"\n"), 0o644); err != nil {
		return "", "", fmt.Errorf("worktree: %w", err)
	}
	// What is left of the old directories may still be written by a
	// process of the old session, so removing them can fail: the old
	// worktree directory is first renamed out of the way (the next start's
	// sweep retries its removal), and git's stale record, whose gitdir then
	// names nothing, goes with `git worktree prune`.
	if err := os.RemoveAll(admin); err != nil {
		_ = pruneWorktrees(ctx, common)
	}
	trash := filepath.Join(filepath.Dir(from), trashPrefix+hex.EncodeToString(b[:]))
	if err := os.Rename(from, trash); err != nil {
		return "", "", fmt.Errorf("worktree: move %s out of the way: %w", from, err)
	}
	_ = os.RemoveAll(trash)
	return newAdmin, head, nil
}

// trashPrefix names what is left of a recycled worktree's old directory
// when it could not be removed at once; sweep removes it.
const trashPrefix = ".trash-"

// resetToKnown makes the recycled worktree at path (fresh administrative
// directory admin) what a spare is: the index rebuilt from HEAD (no
// skip-worktree or assume-unchanged flag, no extension carried over), every
// file equal to HEAD, every untracked and ignored file removed except the
// write-blocklisted dependency and build directories (unless keepNothing).
// The index is written whole, not split, so a claim can read its flags.
func resetToKnown(ctx context.Context, path, admin, common string, keepNothing bool) error {
	r := dirsOf(path, admin, common).Runner()
	pin := []string{"-c", "core.splitIndex=false", "-c", "core.untrackedCache=false", "-c", "core.sparseCheckout=false"}
	if _, err := r.Run(ctx, append(pin, "read-tree", "HEAD")...); err != nil {
		return err
	}
	// The new entries carry no stat data: refresh hashes each file once
	// and records the ones equal to HEAD (exit 1 lists the others, which
	// the reset writes).
	if _, err := r.Run(ctx, append(pin, "update-index", "-q", "--refresh")...); err != nil {
		var ge *git.Error
		if !errors.As(err, &ge) || ge.ExitCode != 1 {
			return err
		}
	}
	if _, err := r.Run(ctx, append(pin, "reset", "--quiet", "--hard")...); err != nil {
		return err
	}
	args := append(pin, "clean", "-ffdxq")
	if !keepNothing {
		for _, b := range blocklist.Dirs {
			if b != ".git" {
				args = append(args, "-e", b)
			}
		}
	}
	_, err := r.Run(ctx, args...)
	return err
}

// keptCache reports whether a status path (a directory ends in "/") lies
// at or under a kept dependency or build directory.
func keptCache(p string, keepNothing bool) bool {
	if keepNothing {
		return false
	}
	for _, c := range strings.Split(strings.TrimSuffix(p, "/"), "/") {
		if c != ".git" && blocklist.Contains(c) {
			return true
		}
	}
	return false
}

// flaggedEntries lists the index entries of admin that git does not
// compare with their files (assume-unchanged, skip-worktree).
func flaggedEntries(admin string) ([]string, error) {
	p := filepath.Join(admin, "index")
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var err error
	for _, size := range []int{20, 32} {
		var out []string
		if out, err = snapshot.FlaggedEntries(p, size); err == nil {
			return out, nil
		}
	}
	return nil, err
}
