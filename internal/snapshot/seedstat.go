package snapshot

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/yolop-dev/yolop/internal/git"
)

// The first capture of a checkout seeds the private index from the user's
// index and must then find what differs from it. A status does that by
// comparing every entry's stat data with the file's (one lstat each) and by
// reading every directory for untracked files, while the capture's own walk
// reads every directory and stats every file beside it: the same work twice
// on the same cores. When the seed is the user's index unchanged, the first
// capture instead compares the walk's stat data with the seed's entries
// itself, by git's rules as the engine pins them (core.fileMode,
// core.symlinks and core.trustctime true, core.checkStat default), and asks
// git only for the untracked files (`ls-files --others`, which applies the
// ignore rules as a status does and stats no tracked file).
//
// The comparison may only be stricter than git's: whatever it cannot vouch
// for is listed as changed, and the tree edit then hashes it. An entry is
// unchanged when its type, executable bit, mtime and ctime (to the
// nanosecond), inode number, owner, group and size (all as the index
// truncates them) are the file's, and its mtime is older than the second
// the index was written in (git's racy-git rule, at the coarser second: a
// file changed in that second may keep its size and times). Unmerged,
// sparse, assume-unchanged and skip-worktree entries, a split index and a
// pruned seed leave the capture to a status; so does a walk that could not
// read a directory, and a comparison that finds more changed files than one
// tree edit takes (an index written by a git that records no nanoseconds:
// git's own status then refreshes it).
//
// Whether the seed's staged content differs from the HEAD commit is what
// the tree edit settles: it takes base's trees from the seed only when the
// seed's tree is base (statusless), and declines to the index path
// otherwise. A worktree that differs from the seed nowhere is captured as
// the HEAD commit's tree only when the seed's cache tree names that tree
// at its root.

// seedStatOS: the comparison runs where the walk's stat data are lstat's
// and names are the bytes git reads (no Unicode precomposition).
const seedStatOS = runtime.GOOS == "linux"

// seedMax is the most changed files a comparison lists before it leaves
// the capture to a status.
const seedMax = 2000

// seedSource is what the comparison reads: the user's index as read, and
// its entries as the seed's clean-up kept them (all of them), with the
// root tree its cache tree names (hex; "" when not valid).
type seedSource struct {
	snap    *indexSnap
	entries []indexEntry
	root    string
}

// canCompareSeed reports whether the seed just written from snap may stand
// for the user's index in a comparison with the walk.
func canCompareSeed(snap *indexSnap, entries []indexEntry) bool {
	if snap == nil || snap.err != nil || len(entries) != len(snap.entries) {
		return false
	}
	for _, ent := range entries {
		if ent.stage != 0 || ent.assumed || ent.skipWorktree {
			return false
		}
		switch ent.mode {
		case 0o100644, 0o100755, 0o120000:
		default:
			return false
		}
	}
	return true
}

func anyIntentToAdd(entries []indexEntry) bool {
	for _, ent := range entries {
		if ent.intentToAdd {
			return true
		}
	}
	return false
}

// seedChanged lists the tracked paths whose worktree state may differ from
// the seed's entries (changed, deleted, not a file or symlink any more),
// and the pathspecs under which the walk found files the seed does not
// hold: untracked or ignored, which only git's rules tell apart
// (untrackedFiles). ok is false when the comparison cannot stand for a
// status. A file over maxSize (when positive) that the comparison cannot
// vouch for leaves the capture to a status too: the capture leaves out a
// changed file over that size, and only the status's hash tells whether it
// changed.
func seedChanged(snap *indexSnap, entries []indexEntry, w walkResult, maxSize int64) (paths, others []string, ok bool) {
	if w.files == nil || w.incomplete {
		return nil, nil, false
	}
	racy := snap.mtime.Unix()
	// Every directory that holds an entry, at any depth ("" always).
	tracked := map[string]bool{"": true}
	for _, ent := range entries {
		for d := parentDir(ent.path); !tracked[d]; d = parentDir(d) {
			tracked[d] = true
		}
		if ent.intentToAdd {
			paths = append(paths, ent.path)
			continue
		}
		f, found := w.file(ent.path)
		if !found || !sameStat(snap.data[ent.at:], ent.mode, f) || f.mtime/1e9 >= racy {
			if found && maxSize > 0 && f.size > maxSize {
				return nil, nil, false
			}
			paths = append(paths, ent.path)
			if len(paths) > seedMax {
				return nil, nil, false
			}
		}
	}
	// A file no entry names is listed by itself where its directory
	// holds entries, else by the topmost directory above it that holds
	// none: git then weighs that directory's ignore rules once.
	seen := map[string]bool{}
	for dir, wd := range w.files {
		for _, f := range wd.files {
			if f.matched {
				continue
			}
			spec := join(dir, f.name)
			if !tracked[dir] {
				spec = dir
				for !tracked[parentDir(spec)] {
					spec = parentDir(spec)
				}
			}
			if !seen[spec] {
				seen[spec] = true
				others = append(others, spec)
			}
			if !tracked[dir] {
				break // the rest of this directory has the same spec
			}
		}
	}
	sort.Strings(others)
	return paths, others, true
}

// parentDir is the directory of the worktree-relative path p ("" for the
// root).
func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// file is the stat data the walk found of the file at p, which it marks as
// named by an entry. The entries of a directory are asked for in sorted
// order (an index's order), so each directory's sorted names are read
// once, from a cursor.
func (w walkResult) file(p string) (walkedFile, bool) {
	dir, name := "", p
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		dir, name = p[:i], p[i+1:]
	}
	wd := w.files[dir]
	if wd == nil {
		return walkedFile{}, false
	}
	for wd.next < len(wd.files) && wd.files[wd.next].name < name {
		wd.next++
	}
	if wd.next < len(wd.files) && wd.files[wd.next].name == name {
		wd.files[wd.next].matched = true
		return wd.files[wd.next].st, true
	}
	return walkedFile{}, false
}

// sameStat reports whether the stat data of an index entry (sd, its first
// 40 bytes; mode its mode) are those of the walked file f, as git compares
// them with the engine's pinned settings: the device is not compared (git
// does not by default).
func sameStat(sd []byte, mode uint32, f walkedFile) bool {
	switch mode {
	case 0o100644, 0o100755:
		if f.mode&modeTypeMask != modeRegular || (mode^f.mode)&0o100 != 0 {
			return false
		}
	case 0o120000:
		if f.mode&modeTypeMask != modeSymlink {
			return false
		}
	default:
		return false
	}
	u := func(i int) uint32 { return binary.BigEndian.Uint32(sd[i*4:]) }
	return u(0) == uint32(f.ctime/1e9) && u(1) == uint32(f.ctime%1e9) &&
		u(2) == uint32(f.mtime/1e9) && u(3) == uint32(f.mtime%1e9) &&
		u(5) == uint32(f.ino) && u(7) == f.uid && u(8) == f.gid &&
		u(9) == uint32(f.size)
}

// maxOtherSpecs bounds the pathspecs untrackedFiles passes on its command
// line; beyond, it lists the whole worktree.
const (
	maxOtherSpecs     = 1000
	maxOtherSpecBytes = 64 << 10
)

// untrackedFiles lists the untracked files a status would list, by the
// same ignore rules (`ls-files --others` against the private index), under
// specs only (literal paths) when they are few enough. It records them as
// the last capture's untracked files.
//
// specs name no tracked path (seedChanged): under them an empty index
// answers as the private one does, without git reading an entry of it
// (at 10,000 files, half of what ls-files costs). The only rules git takes
// from an index, a skip-worktree .gitignore's, are not in the private one
// either (cleanSeed clears the flag), and a seed with such entries is
// never compared (flagged).
func (e *Engine) untrackedFiles(ctx context.Context, specs []string) ([]string, error) {
	args := []string{"--literal-pathspecs", "ls-files", "--others", "--exclude-standard", "-z"}
	size := 0
	for _, p := range specs {
		size += len(p) + 1
	}
	run := e.runPriv
	if len(specs) <= maxOtherSpecs && size <= maxOtherSpecBytes {
		args = append(append(args, "--"), specs...)
		run = e.runEmptyIndex
	}
	out, err := run(ctx, nil, args...)
	if err != nil {
		return nil, e.captureErr(ctx, "cannot list untracked files", err)
	}
	e.lastUntracked = nil
	if e.maxFileSize > 0 {
		e.lastUntracked = map[string]bool{}
	}
	var paths []string
	for _, p := range git.SplitZ(out) {
		if p == "" || strings.HasSuffix(p, "/") || excludedPath(p) {
			// A directory is a nested repository: left alone.
			continue
		}
		paths = append(paths, p)
		if e.lastUntracked != nil {
			e.lastUntracked[p] = true
		}
	}
	return paths, nil
}

// runEmptyIndex runs git as runPriv does, with an empty index in place of
// the private one: a path in the state dir that is never written (git
// reads a missing index as an empty one), removed first should anything
// be there.
func (e *Engine) runEmptyIndex(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	p := filepath.Join(e.stateDir, "empty.index")
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return e.runPriv(ctx, stdin, args...)
	}
	if e.onPriv != nil {
		e.onPriv(args)
	}
	e.emptyIndexRuns++
	return e.priv.With("GIT_INDEX_FILE="+p).RunInput(ctx, stdin, append(e.privConfig(), args...)...)
}
