package snapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/yolop-dev/yolop/internal/git"
)

// # What a capture holds, whatever the private index remembers
//
// A capture holds every file the repository tracks (its real index) and
// every untracked file no ignore rule matches: what `git add -A` on a copy
// of the worktree's index would stage. The private index is a cache and
// must not change that answer, yet status against it treats every entry it
// holds as tracked: a file captured before a rule matched it would stay in
// every later capture of the session (and of every print-mode process
// reusing the state dir), while a new session leaves it out; a file the
// repository starts tracking although ignored (`git add -f`) would stay out.
//
// So the engine reconciles the private index with the rules whenever they
// may have changed: the rules stamp covers the rules from outside the
// worktree (ignoreStamp), every .gitignore the walk found (path and
// content) and the set of paths the real index holds. When the stamp
// differs from the one recorded with the private index (<state>/index.rules,
// removed with the index), the walked capture lists the ignored entries of
// the private index and of the real index (`ls-files -c -i`, most of a
// status each on a big tree), drops from the private index those the
// repository does not track, and adds those it tracks that are on disk. A
// private index just copied from the real one needs none of it: the stamp
// is recorded as it is. The watched capture walks whenever the stamp may
// have changed (a .gitignore event, the outside rules, the real index).
//
// A folder outside git has no repository besides the session's own, so
// there the private index is what is tracked, and nothing is reconciled.
//
// Status would take a tracked ignored file deleted and later written back
// for an ignored untracked one, so the record also lists the tracked
// ignored paths gone from disk (the whole list after a reconcile, then each
// deletion a capture sees): a capture writes back those on disk again, and
// the watched capture counts them as tracked.

const rulesMagic = "yolop-rules 1"

// rulesState is what <state>/index.rules records.
type rulesState struct {
	stamp   string          // digest of the rules stamp the private index is reconciled with
	realKey string          // stat of the real index when realSet was computed
	realSet string          // digest of the paths the real index holds
	tracked map[string]bool // tracked ignored paths (known) -> on disk at the last capture
}

func (r *rulesState) clone() *rulesState {
	c := *r
	c.tracked = make(map[string]bool, len(r.tracked))
	for p, on := range r.tracked {
		c.tracked[p] = on
	}
	return &c
}

func (e *Engine) rulesFile() string { return e.privIndex + ".rules" }

// loadRules reads the recorded rules state (nil when there is none).
func (e *Engine) loadRules() *rulesState {
	b, err := os.ReadFile(e.rulesFile())
	if err != nil {
		return nil
	}
	head, rest, _ := bytes.Cut(b, []byte{0})
	f := strings.Split(string(head), "\n")
	if len(f) != 4 || f[0] != rulesMagic {
		return nil
	}
	r := &rulesState{stamp: f[1], realKey: f[2], realSet: f[3], tracked: map[string]bool{}}
	for _, rec := range git.SplitZ(rest) {
		if len(rec) < 3 || rec[1] != ' ' {
			return nil
		}
		r.tracked[rec[2:]] = rec[0] == '1'
	}
	return r
}

func (e *Engine) saveRules(r *rulesState) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%s\n%s\n%s\x00", rulesMagic, r.stamp, r.realKey, r.realSet)
	paths := make([]string, 0, len(r.tracked))
	for p := range r.tracked {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		on := "0"
		if r.tracked[p] {
			on = "1"
		}
		b.WriteString(on + " " + p + "\x00")
	}
	return writeIfChanged(e.rulesFile(), []byte(b.String()))
}

// realIndexSet identifies the set of paths the real index holds: the digest
// of its paths, recomputed only when the file's stat changed since prev.
func (e *Engine) realIndexSet(prev *rulesState) (key, set string) {
	snap := e.realSnap
	if snap != nil {
		key = snap.key
	} else {
		key = fileKey(e.realIndex)
	}
	if prev != nil && prev.realKey == key {
		return key, prev.realSet
	}
	hashSize := 20
	if e.objFormat == "sha256" {
		hashSize = 32
	}
	var ents []indexEntry
	var err error
	if snap != nil {
		ents, err = snap.entries, snap.err
	} else {
		ents, err = readIndexFile(e.realIndex, hashSize)
	}
	if err != nil {
		// A split or unknown index: its stat stands for its paths, which
		// only costs a reconcile more often.
		return key, "stat " + key
	}
	h := sha256.New()
	for _, ent := range ents {
		h.Write([]byte(ent.path))
		h.Write([]byte{0})
	}
	return key, hex.EncodeToString(h.Sum(nil))
}

// fileKey identifies an index file's content: its size, mtime and
// trailing checksum (which any write changes, even within one mtime tick).
func fileKey(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "none"
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "none"
	}
	tail := make([]byte, 32)
	n, _ := f.ReadAt(tail, max(st.Size()-32, 0)) // short: the key has what was read
	return fmt.Sprintf("%d.%d.%x", st.Size(), st.ModTime().UnixNano(), tail[:n])
}

// rulesStamp digests what decides the ignored set: the rules from outside
// the worktree, the .gitignore files the walk found and the real index's
// paths.
func rulesStamp(outside, gitignores, realSet string) string {
	h := sha256.Sum256([]byte(outside + "\x00" + gitignores + "\x00" + realSet))
	return hex.EncodeToString(h[:])
}

// reconcileRules brings the private index in line with the rules (see
// above) and returns the paths update-index must add and those it dropped
// (which update-index must not look at again: it would add them back).
// The caller then writes the tree from the index.
func (e *Engine) reconcileRules(ctx context.Context, nested []string, r *rulesState) (add, drop []string, err error) {
	keep := func(p string) bool { return !excludedPath(p) && !underAny(p, nested) }
	privOut, err := e.runPriv(ctx, nil, "ls-files", "-z", "-c", "-i", "--exclude-standard")
	if err != nil {
		return nil, nil, e.captureErr(ctx, "cannot list ignored files", err)
	}
	realOut, err := e.repo.Run(ctx, append(e.privConfig(), "ls-files", "-z", "-c", "-i", "--exclude-standard")...)
	if err != nil {
		return nil, nil, e.captureErr(ctx, "cannot list the repository's ignored files", err)
	}
	priv := map[string]bool{}
	for _, p := range git.SplitZ(privOut) {
		priv[p] = true
	}
	r.tracked = map[string]bool{}
	for _, p := range git.SplitZ(realOut) {
		if !keep(p) || checkPath(p) != nil {
			continue
		}
		_, lerr := os.Lstat(filepath.Join(e.root, filepath.FromSlash(p)))
		r.tracked[p] = lerr == nil
		if !priv[p] && lerr == nil {
			add = append(add, p)
		}
	}
	for p := range priv {
		if _, ok := r.tracked[p]; !ok {
			drop = append(drop, p)
		}
	}
	sort.Strings(drop)
	sort.Strings(add)
	if len(drop) > 0 {
		in := strings.Join(drop, "\x00") + "\x00"
		if _, err := e.runPriv(ctx, []byte(in), "update-index", "--force-remove", "-z", "--stdin"); err != nil {
			return nil, nil, e.captureErr(ctx, "cannot drop files the rules now ignore", err)
		}
	}
	return add, drop, nil
}

// noteTrackedGone records, among the paths a walked capture looks at, the
// ones gone from disk that the rules ignore: they are entries of the
// private index (status listed them), so the repository tracks them, and
// status would not list them again once written back.
func (e *Engine) noteTrackedGone(ctx context.Context, r *rulesState, paths []string) error {
	var gone []string
	for _, p := range paths {
		if _, known := r.tracked[p]; known {
			continue
		}
		if _, err := os.Lstat(filepath.Join(e.root, filepath.FromSlash(p))); err != nil {
			gone = append(gone, p)
		}
	}
	ign, err := e.ignoredOf(ctx, gone)
	if err != nil {
		return err
	}
	for _, p := range ign {
		r.tracked[p] = false
	}
	return nil
}

// ignoredOf returns the paths the rules ignore. A path beyond a symbolic
// link (or a file) is not asked about: git refuses it, and no file is
// there.
func (e *Engine) ignoredOf(ctx context.Context, paths []string) ([]string, error) {
	var ask []string
	for _, p := range paths {
		if !e.beyondSymlink(p) {
			ask = append(ask, p)
		}
	}
	paths = ask
	if len(paths) == 0 {
		return nil, nil
	}
	out, err := e.runPriv(ctx, []byte(strings.Join(paths, "\x00")+"\x00"), "check-ignore", "--no-index", "-z", "--stdin")
	if err != nil {
		var ge *git.Error
		if !errors.As(err, &ge) || ge.ExitCode != 1 { // 1: nothing ignored
			return nil, e.captureErr(ctx, "cannot check ignored files", err)
		}
	}
	return git.SplitZ(out), nil
}

// entryGitignores is the walk's .gitignore digest for a worktree known to
// hold exactly the index entries.
func entryGitignores(root string, entries []indexEntry) string {
	var recs []string
	for _, ent := range entries {
		if ent.path == ".gitignore" || strings.HasSuffix(ent.path, "/.gitignore") {
			recs = append(recs, ent.path+"\x00"+gitignoreDigest(filepath.Join(root, filepath.FromSlash(ent.path))))
		}
	}
	sort.Strings(recs)
	return strings.Join(recs, "\x00")
}

// recreatedTracked lists the tracked ignored paths that were gone at the
// last capture and are on disk again, and records which are there now.
func (e *Engine) recreatedTracked(r *rulesState) []string {
	var back []string
	for p, was := range r.tracked {
		_, err := os.Lstat(filepath.Join(e.root, filepath.FromSlash(p)))
		if err == nil && !was {
			back = append(back, p)
		}
		r.tracked[p] = err == nil
	}
	sort.Strings(back)
	return back
}
