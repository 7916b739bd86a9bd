package snapshot

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/yolop-dev/yolop/internal/fault"
)

// fastMaxPaths bounds the tree edit that writes loose objects: beyond it,
// update-index and write-tree cost no more than rebuilding the directories
// one by one. A tree edit that writes a pack (packwrite.go) is bounded by
// fastMaxPackedPaths and packMaxBytes.
const (
	fastMaxPaths       = 64
	fastMaxPackedPaths = 20000
)

// errNotFast means the tree edit declined the change set; the caller takes
// the index path, which handles every case.
var errNotFast = fault.Plain("snapshot: change set not eligible for the tree edit")

// fastEntry is one entry of a tree being edited.
type fastEntry struct {
	mode string // octal, as in a tree object ("100644", "40000", ...)
	oid  []byte // raw object id
}

func (x fastEntry) isTree() bool { return x.mode == "40000" }

// fastChange is the new state of one listed path: deleted, or a blob with
// its mode.
type fastChange struct {
	path    string
	deleted bool
	mode    string // "100644", "100755" or "120000"
	link    string // symlink target when mode is 120000
	oid     []byte
	// stat is the stat data taken before the content was read, for the
	// private index (packed edits only; nil when not known).
	stat *indexStat
}

// fastTree builds the tree of the worktree by editing base, the tree the
// private index holds, at the listed paths only: no index is read. It
// declines (errNotFast) whatever the index path treats specially: a path
// that is now a directory or neither a file nor a symlink, a parent that is
// not a real directory or holds a nested repository, an entry whose kind
// would change between file and directory, a name git's batch protocols
// cannot carry. The tree it computes is checked against the one git writes.
//
// With lenient (the paths come from the watcher, not a status), a path
// deleted that base does not hold either is skipped (fastSkipped) instead
// of declining: it was created and removed between two captures.
func (e *Engine) fastTree(ctx context.Context, base string, paths []string, lenient bool) (string, error) {
	return e.fastTreeFrom(ctx, base, nil, nil, seedTrusted, paths, lenient)
}

// seedRule says what the seed given to fastTreeFrom must prove before the
// edit takes base's trees from it.
type seedRule int

const (
	// seedTrusted: a status showed no index-side difference, so the
	// seed holds base; its trees are still checked by computing base's
	// root, and read from git when they do not match.
	seedTrusted seedRule = iota
	// seedHint: base is only a hint of the commit's tree, which the
	// seed, or else git, must confirm.
	seedHint
	// seedOnly: nothing compared the seed with base (a first capture
	// without a status, seedstat.go): base's trees come from the seed
	// when its tree is base, and the edit declines otherwise.
	seedOnly
)

// fastTreeFrom is fastTree with base's trees computed from seed, the
// entries of an index whose tree is base (the private index just seeded,
// where status showed no index-side difference), instead of read with
// cat-file: base's tree ids are then checked by computing its root
// (with the tree ids of the seed's cache tree, cached, where they hold).
// rule says what the seed must prove (seedRule).
func (e *Engine) fastTreeFrom(ctx context.Context, base string, seed []indexEntry, cached map[string]cachedTree, rule seedRule, paths []string, lenient bool) (string, error) {
	e.waitEditedIndex()
	if len(paths) == 0 || len(paths) > fastMaxPackedPaths {
		return "", errNotFast
	}
	// The index must be able to catch up; a held lock is reported by the
	// index path.
	if _, err := os.Lstat(e.privIndex + ".lock"); !errors.Is(err, os.ErrNotExist) {
		return "", errNotFast
	}
	var newHash func() hash.Hash
	switch e.objFormat {
	case "sha1", "":
		newHash = sha1.New
	case "sha256":
		newHash = sha256.New
	default:
		return "", errNotFast
	}
	changes := make([]*fastChange, 0, len(paths))
	dirs := map[string]bool{"": true}
	checked := map[string]bool{}
	for _, p := range paths {
		// hash-object --stdin-paths and cat-file --batch read lines: they
		// cannot carry a newline, drop a trailing CR, and hash-object
		// unquotes a line that starts with a double quote.
		if p == "" || strings.ContainsAny(p, "\n\r\x00") || strings.HasPrefix(p, `"`) || path.Clean(p) != p || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "/") {
			return "", errNotFast
		}
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			dirs[d] = true
			if checked[d] {
				continue
			}
			checked[d] = true
			st, err := os.Lstat(filepath.Join(e.root, d))
			if err != nil {
				if errors.Is(err, os.ErrNotExist) {
					continue // p is deleted with its directory
				}
				return "", errNotFast
			}
			if !st.IsDir() {
				return "", errNotFast
			}
			if _, err := os.Lstat(filepath.Join(e.root, d, ".git")); !errors.Is(err, os.ErrNotExist) {
				return "", errNotFast // a nested repository, or unknown
			}
		}
		c := &fastChange{path: p}
		st, err := os.Lstat(filepath.Join(e.root, p))
		switch {
		case errors.Is(err, os.ErrNotExist):
			c.deleted = true
		case err != nil:
			return "", errNotFast
		case st.Mode().IsRegular():
			c.mode = "100644"
			if st.Mode().Perm()&0o100 != 0 {
				c.mode = "100755"
			}
		case st.Mode()&os.ModeSymlink != 0:
			t, err := os.Readlink(filepath.Join(e.root, p))
			if err != nil {
				return "", errNotFast
			}
			c.mode, c.link = "120000", t
			if sd, ok := statData(st); ok {
				c.stat = &sd
			}
		default:
			return "", errNotFast
		}
		changes = append(changes, c)
	}
	// Many new objects go into one pack, few stay loose.
	packed := len(changes)+len(dirs) >= packMinObjects
	if !packed && len(paths) > fastMaxPaths {
		return "", errNotFast
	}
	var check *objectCheck
	if packed {
		// git's check of the pack starts now, beside the reading and
		// the trees (writePack); an edit that declines first lets it go.
		check = e.startObjectCheck(ctx)
		defer check.abandon()
	}
	// base's trees are computed from the seed while the changed files
	// are read: neither needs the other, and both take tens of
	// milliseconds on a big tree.
	type seeded struct {
		root  []byte
		trees map[string]map[string]fastEntry
		err   error
	}
	var fromSeed chan seeded
	if seed != nil {
		fromSeed = make(chan seeded, 1)
		go func() {
			root, trees, err := seedTrees(seed, newHash, dirs, cached)
			fromSeed <- seeded{root, trees, err}
		}()
	}
	// A few new objects are written loose here, unless the repository
	// is shared (git gives its files the group's permissions) or the
	// changed files are too big to hold: then git hashes them.
	loose := !packed && !sharedRepository(e.sharedRepo)
	var objs []packObject
	var err error
	if packed || loose {
		objs, err = e.readChanged(changes, newHash)
		if loose && errors.Is(err, errChangedTooBig) {
			loose, objs = false, nil
			err = e.fastBlobs(ctx, changes)
		}
	} else {
		err = e.fastBlobs(ctx, changes)
	}
	var old map[string]map[string]fastEntry
	if fromSeed != nil {
		s := <-fromSeed
		if s.err == nil && hex.EncodeToString(s.root) == base {
			old = s.trees
			e.seedTrees++
		}
	}
	if err != nil {
		return "", err
	}
	if rule == seedOnly && old == nil {
		// The seed may hold staged changes that base lacks, at paths
		// the edit does not touch: only the index path is right.
		return "", errNotFast
	}
	if rule == seedHint && old == nil && e.headCommitTree(ctx) != base {
		// base came from a look that may have paired HEAD's commit with
		// a later HEAD's tree, and the seed could not confirm it (a
		// submodule, or the race itself), nor git.
		return "", errNotFast
	}
	if old == nil {
		var err error
		if old, err = e.fastOldTrees(ctx, base, dirs); err != nil {
			return "", err
		}
	}

	// Apply the changes to each directory's entries, noting what differs
	// from base (what diff-tree -r would list between base and the edit).
	var skipped []string
	var diff []Change
	entries := map[string]map[string]fastEntry{}
	for d := range dirs {
		entries[d] = old[d]
		if entries[d] == nil {
			entries[d] = map[string]fastEntry{}
		}
	}
	for _, c := range changes {
		d, name := path.Split(c.path)
		d = strings.TrimSuffix(d, "/")
		m := entries[d]
		prev, had := m[name]
		if had && prev.isTree() {
			return "", errNotFast // a directory becomes a file: the index path handles it
		}
		if had && prev.mode == "160000" {
			return "", errNotFast
		}
		if c.deleted {
			if !had && lenient {
				skipped = append(skipped, c.path)
				continue
			}
			if !had {
				return "", errNotFast // status saw a tracked path the tree lacks
			}
			delete(m, name)
			diff = append(diff, Change{Path: c.path, Kind: Deleted, OldMode: prev.mode, OldOID: hex.EncodeToString(prev.oid)})
			continue
		}
		if dirs[c.path] {
			return "", errNotFast // a file with the name of a directory being edited
		}
		m[name] = fastEntry{mode: c.mode, oid: c.oid}
		if ch, differs := editChange(c, prev, had); differs {
			diff = append(diff, ch)
		}
	}
	// Build the trees bottom-up: children before parents.
	order := make([]string, 0, len(dirs))
	for d := range dirs {
		order = append(order, d)
	}
	sort.Slice(order, func(i, j int) bool {
		di, dj := depth(order[i]), depth(order[j])
		if di != dj {
			return di > dj
		}
		return order[i] < order[j]
	})
	var batch bytes.Buffer
	var want []string
	var root string
	for _, d := range order {
		m := entries[d]
		if d != "" {
			parent, name := path.Split(d)
			pm := entries[strings.TrimSuffix(parent, "/")]
			prev, had := pm[name]
			if had && !prev.isTree() {
				return "", errNotFast // a file becomes a directory
			}
			if len(m) == 0 {
				delete(pm, name) // git never records an empty directory
				continue
			}
		}
		var content []byte
		if packed || loose {
			content = treeBody(m)
		} else {
			var mk []byte
			content, mk = treeContent(m)
			batch.Write(mk)
			batch.WriteByte(0)
		}
		oid := objectID(newHash, "tree", content)
		if packed || loose {
			objs = append(objs, packObject{typ: 2, data: content, oid: oid})
		} else {
			want = append(want, hex.EncodeToString(oid))
		}
		if d == "" {
			root = hex.EncodeToString(oid)
		} else {
			parent, name := path.Split(d)
			entries[strings.TrimSuffix(parent, "/")][name] = fastEntry{mode: "40000", oid: oid}
		}
	}
	if packed {
		// The private index that goes with the edit is written
		// meanwhile (indexwrite.go), and replaces the old one once
		// the pack is stored.
		var pending *pendingIndex
		if rawRoot, err := hex.DecodeString(root); err == nil {
			pending = e.startEditedIndex(&editedIndex{changes: changes, root: rawRoot, newHash: newHash})
		}
		err := e.writePack(ctx, newHash, objs, check)
		if pending != nil {
			pending.commit <- err
			if err != nil {
				<-pending.done // it holds the index lock until then
			}
		}
		if err != nil {
			return "", err
		}
		e.fastEdit = pending
	} else if loose {
		if err := writeLoose(e.objects, objs); err != nil {
			// git's index path writes them, or says why it cannot.
			return "", errNotFast
		}
	} else if err := e.fastMktree(ctx, batch.Bytes(), want); err != nil {
		return "", err
	}
	sort.Slice(diff, func(a, b int) bool { return diff[a].Path < diff[b].Path })
	e.editMu.Lock()
	e.lastEdit = treeEdit{from: base, to: root, changes: diff}
	e.editMu.Unlock()
	e.fastPacked = packed
	e.fastDeleted = e.fastDeleted[:0]
	e.fastSkipped = skipped
	gone := map[string]bool{}
	for _, p := range skipped {
		gone[p] = true
	}
	for _, c := range changes {
		if c.deleted && !gone[c.path] {
			e.fastDeleted = append(e.fastDeleted, c.path)
		}
	}
	return root, nil
}

// treeEdit is what the last tree edit changed: the changes that take
// from to to, as Diff gives them.
type treeEdit struct {
	from, to string
	changes  []Change
}

// editChange is the change a tree edit makes at c's path, which held prev
// in the base tree (when had); differs is false when it holds the same.
func editChange(c *fastChange, prev fastEntry, had bool) (ch Change, differs bool) {
	ch = Change{Path: c.path, NewMode: c.mode, NewOID: hex.EncodeToString(c.oid)}
	switch {
	case !had:
		ch.Kind = Added
		return ch, true
	case prev.mode == c.mode && bytes.Equal(prev.oid, c.oid):
		return ch, false
	}
	ch.OldMode, ch.OldOID = prev.mode, hex.EncodeToString(prev.oid)
	switch {
	case (prev.mode == "120000") != (c.mode == "120000"):
		ch.Kind = TypeChanged // a file became a symlink, or back
	case ch.OldOID == ch.NewOID:
		ch.Kind = ModeChanged
	default:
		ch.Kind = Modified
	}
	return ch, true
}

// fastMktree writes the trees of a tree edit with one mktree --batch and
// checks git's ids against the ones computed in Go.
func (e *Engine) fastMktree(ctx context.Context, batch []byte, want []string) error {
	out, err := e.runPriv(ctx, batch, "mktree", "-z", "--batch")
	if err != nil {
		if ctx.Err() != nil {
			return e.captureErr(ctx, "cannot write the snapshot tree", err)
		}
		return errNotFast
	}
	got := strings.Fields(string(out))
	if len(got) != len(want) {
		return errNotFast
	}
	for i := range want {
		if got[i] != want[i] {
			return errNotFast
		}
	}
	return nil
}

// errChangedTooBig is readChanged declining files too big to hold in
// memory together (more than packMaxBytes).
var errChangedTooBig = fmt.Errorf("%w: the changed files are too big to hold", errNotFast)

// readChanged reads the changed files' bytes (raw, as hash-object
// --no-filters stores them) and symlinks' targets, and computes their ids,
// for a packed tree edit. More than packMaxBytes in all declines.
func (e *Engine) readChanged(changes []*fastChange, newHash func() hash.Hash) ([]packObject, error) {
	var objs []packObject
	total := 0
	for _, c := range changes {
		if c.deleted {
			continue
		}
		data := []byte(c.link)
		if c.mode != "120000" {
			// Not followed, not waited on: the path was a regular file
			// when the capture looked, but whatever runs in the worktree
			// may have put a symlink (to a file outside it) or a FIFO
			// there since; the stat below then declines it.
			f, err := os.OpenFile(filepath.Join(e.root, c.path), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
			if err != nil {
				return nil, errNotFast
			}
			st, err := f.Stat()
			if err != nil || !st.Mode().IsRegular() {
				f.Close()
				return nil, errNotFast
			}
			if int64(total)+st.Size() > packMaxBytes {
				f.Close()
				return nil, errChangedTooBig
			}
			c.stat = nil
			if sd, ok := statData(st); ok {
				c.stat = &sd
			}
			data, err = readAllSized(f, st.Size())
			f.Close()
			if err != nil {
				return nil, errNotFast
			}
		}
		total += len(data)
		if total > packMaxBytes {
			return nil, errChangedTooBig
		}
		c.oid = objectID(newHash, "blob", data)
		objs = append(objs, packObject{typ: 3, data: data, oid: c.oid})
	}
	return objs, nil
}

func depth(d string) int {
	if d == "" {
		return 0
	}
	return strings.Count(d, "/") + 1
}

// treeContent returns a tree object's body with m's entries in git's order
// (a directory sorts as if its name ended in '/'), and the same entries as
// `mktree -z` input.
func treeContent(m map[string]fastEntry) (content, mktree []byte) {
	content = treeBody(m)
	var mk bytes.Buffer
	for _, n := range treeOrder(m) {
		x := m[n]
		typ := "blob"
		if x.isTree() {
			typ = "tree"
		}
		mk.WriteString(x.mode + " " + typ + " " + hex.EncodeToString(x.oid) + "\t" + n + "\x00")
	}
	return content, mk.Bytes()
}

// treeBody is a tree object's body with m's entries in git's order.
func treeBody(m map[string]fastEntry) []byte {
	names := treeOrder(m)
	size := 0
	for _, n := range names {
		size += len(m[n].mode) + len(n) + 2 + len(m[n].oid)
	}
	b := make([]byte, 0, size)
	for _, n := range names {
		x := m[n]
		b = append(b, x.mode...)
		b = append(b, ' ')
		b = append(b, n...)
		b = append(b, 0)
		b = append(b, x.oid...)
	}
	return b
}

// treeOrder is m's names in git's tree order: by name, a directory's name
// compared as if it ended in '/'.
func treeOrder(m map[string]fastEntry) []string {
	keys := make([]string, 0, len(m))
	for n, x := range m {
		if x.isTree() {
			n += "/"
		}
		keys = append(keys, n)
	}
	sort.Strings(keys)
	for i, k := range keys {
		// A name holds no '/': a trailing one is a directory's key.
		keys[i] = strings.TrimSuffix(k, "/")
	}
	return keys
}

// fastBlobs writes the blobs of the changed files and symlinks with one
// hash-object: files as their raw bytes (no conversion, as the index path
// stores them under the private attributes), symlinks as their target.
func (e *Engine) fastBlobs(ctx context.Context, changes []*fastChange) error {
	var in strings.Builder
	var need []*fastChange
	var tmpDir string
	for _, c := range changes {
		if c.deleted {
			continue
		}
		name := c.path
		if c.mode == "120000" {
			if tmpDir == "" {
				d, err := os.MkdirTemp(e.stateDir, "links-")
				if err != nil {
					return errNotFast
				}
				tmpDir = d
				defer os.RemoveAll(d)
			}
			name = filepath.Join(tmpDir, strconv.Itoa(len(need)))
			if err := os.WriteFile(name, []byte(c.link), 0o600); err != nil {
				return errNotFast
			}
		}
		in.WriteString(name + "\n")
		need = append(need, c)
	}
	if len(need) == 0 {
		return nil
	}
	out, err := e.runPriv(ctx, []byte(in.String()), "hash-object", "-w", "--no-filters", "--stdin-paths")
	if err != nil {
		if ctx.Err() != nil {
			return e.captureErr(ctx, "cannot record changed files", err)
		}
		return errNotFast
	}
	oids := strings.Fields(string(out))
	if len(oids) != len(need) {
		return errNotFast
	}
	for i, c := range need {
		raw, err := hex.DecodeString(oids[i])
		if err != nil {
			return errNotFast
		}
		c.oid = raw
	}
	return nil
}

// seedTrees computes the tree of the index entries (sorted by path, as an
// index holds them) as write-tree would: its root's id, and the entries of
// the trees at dirs (a directory it does not hold maps to nil). An entry git
// does not put in a tree as it is (a submodule, a sparse directory, an
// unmerged stage) is an error; an intent-to-add entry is left out, as
// write-tree leaves it out.
//
// cached is the index's cache tree (parseCacheTree), nil for none: a
// directory not in dirs whose valid entry counts exactly its entries here
// takes the tree id it gives instead of hashing its trees (at 100,000
// files, tens of milliseconds). dirs must hold every ancestor of each of
// its directories.
func seedTrees(entries []indexEntry, newHash func() hash.Hash, dirs map[string]bool, cached map[string]cachedTree) ([]byte, map[string]map[string]fastEntry, error) {
	trees := map[string]map[string]fastEntry{}
	var build func(prefix string, ents []indexEntry) ([]byte, error)
	build = func(prefix string, ents []indexEntry) ([]byte, error) {
		dir := strings.TrimSuffix(prefix, "/")
		if c, ok := cached[dir]; ok && !dirs[dir] && c.count == len(ents) && len(ents) > 0 {
			return []byte(c.oid), nil
		}
		var m map[string]fastEntry
		if dirs[dir] {
			m = map[string]fastEntry{}
		}
		var body []byte
		add := func(mode, name, oid string) {
			body = append(body, mode...)
			body = append(body, ' ')
			body = append(body, name...)
			body = append(body, 0)
			body = append(body, oid...)
			if m != nil {
				m[name] = fastEntry{mode: mode, oid: []byte(oid)}
			}
		}
		for i := 0; i < len(ents); {
			x := ents[i]
			if !strings.HasPrefix(x.path, prefix) {
				return nil, fmt.Errorf("index entry %q out of order", x.path)
			}
			rest := x.path[len(prefix):]
			slash := strings.IndexByte(rest, '/')
			if slash < 0 {
				i++
				if x.intentToAdd {
					continue
				}
				if x.stage != 0 || rest == "" {
					return nil, fmt.Errorf("index entry %q: stage %d", x.path, x.stage)
				}
				mode, ok := treeMode(x.mode)
				if !ok {
					return nil, fmt.Errorf("index entry %q: mode %o", x.path, x.mode)
				}
				add(mode, rest, x.oid)
				continue
			}
			name := rest[:slash]
			sub := prefix + name + "/"
			k := i + 1
			for k < len(ents) && strings.HasPrefix(ents[k].path, sub) {
				k++
			}
			oid, err := build(sub, ents[i:k])
			if err != nil {
				return nil, err
			}
			i = k
			if oid != nil {
				add("40000", name, string(oid))
			}
		}
		if m != nil {
			trees[dir] = m
		}
		if len(body) == 0 && prefix != "" {
			return nil, nil // git records no empty directory
		}
		return objectID(newHash, "tree", body), nil
	}
	root, err := build("", entries)
	if err != nil {
		return nil, nil, err
	}
	return root, trees, nil
}

// treeMode is how a tree writes the mode of an index entry of a file or a
// symlink; false for any other (a submodule, a sparse directory).
func treeMode(mode uint32) (string, bool) {
	switch mode {
	case 0o100644:
		return "100644", true
	case 0o100755:
		return "100755", true
	case 0o120000:
		return "120000", true
	}
	return "", false
}

// fastOldTrees reads base's trees at dirs with one cat-file --batch. A
// directory missing from base maps to nil.
func (e *Engine) fastOldTrees(ctx context.Context, base string, dirs map[string]bool) (map[string]map[string]fastEntry, error) {
	list := make([]string, 0, len(dirs))
	var in strings.Builder
	for d := range dirs {
		list = append(list, d)
		in.WriteString(base + ":" + d + "\n")
	}
	out, err := e.runPriv(ctx, []byte(in.String()), "cat-file", "--batch")
	if err != nil {
		if ctx.Err() != nil {
			return nil, e.captureErr(ctx, "cannot read the previous tree", err)
		}
		return nil, errNotFast
	}
	r := bufio.NewReader(bytes.NewReader(out))
	res := map[string]map[string]fastEntry{}
	for _, d := range list {
		hdr, err := r.ReadString('\n')
		if err != nil {
			return nil, errNotFast
		}
		f := strings.Fields(hdr)
		if len(f) == 2 && f[1] == "missing" {
			continue
		}
		if len(f) != 3 {
			return nil, errNotFast
		}
		size, err := strconv.Atoi(f[2])
		if err != nil || size < 0 {
			return nil, errNotFast
		}
		body := make([]byte, size+1)
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, errNotFast
		}
		if f[1] != "tree" {
			return nil, errNotFast // a file where a directory now is
		}
		m, err := parseTree(body[:size], len(f[0])/2)
		if err != nil {
			return nil, errNotFast
		}
		res[d] = m
	}
	return res, nil
}

func parseTree(b []byte, oidLen int) (map[string]fastEntry, error) {
	m := map[string]fastEntry{}
	for len(b) > 0 {
		sp := bytes.IndexByte(b, ' ')
		nul := bytes.IndexByte(b, 0)
		if sp <= 0 || nul < sp || len(b) < nul+1+oidLen {
			return nil, errors.New("malformed tree")
		}
		mode, name := string(b[:sp]), string(b[sp+1:nul])
		switch mode {
		case "100644", "100755", "120000", "40000":
		default:
			return nil, errors.New("unexpected mode " + mode)
		}
		if name == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("malformed tree entry name %q", name)
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("duplicate tree entry %q", name)
		}
		m[name] = fastEntry{mode: mode, oid: append([]byte(nil), b[nul+1:nul+1+oidLen]...)}
		b = b[nul+1+oidLen:]
	}
	return m, nil
}

// startIndexUpdate brings the private index up to date with paths after a
// tree edit, in the background; waitIndexUpdate must be called (under e.mu)
// before anything else uses the private index. Whatever it records, the next
// status compares the index with the private HEAD: an entry that does not
// match the captured tree (the file changed again, or the update failed)
// shows up as an index-side difference and that capture takes the index
// path, so the update is an optimisation, never trusted.
//
// A path the tree edit found deleted is only removed from the index, never
// added back from what is on disk by the time the update runs: a file
// recreated there meanwhile is untracked again, so the next status applies
// the ignore rules to it (--add would track it, and an ignored file would
// then be captured).
func (e *Engine) startIndexUpdate(paths, deleted []string) {
	gone := map[string]bool{}
	for _, p := range deleted {
		gone[p] = true
	}
	var present []string
	for _, p := range paths {
		if !gone[p] {
			present = append(present, p)
		}
	}
	type step struct {
		args  []string
		paths []string
	}
	var steps []step
	add := []string{"update-index", "--add", "--remove", "--replace", "-z", "--stdin"}
	if args, ok := removeArgs(append(append([]string(nil), deleted...), present...)); ok && len(present) > 0 {
		// One index read and write instead of two: update-index takes
		// its options and paths in order, the paths on the command line
		// before the present ones on stdin. Every path leaves the
		// index first: update-index keeps an entry whose stat data
		// match the file by git's own comparison (to the second, in a
		// git built without nanosecond stat data), while the tree edit
		// hashed what the file holds; added back, it is hashed again.
		steps = append(steps, step{append(args, add[1:]...), present})
	} else {
		for _, st := range []step{
			{[]string{"update-index", "--force-remove", "-z", "--stdin"}, deleted},
			{add, present},
		} {
			if len(st.paths) > 0 {
				steps = append(steps, st)
			}
		}
	}
	if e.fastPacked && len(steps) > 0 {
		// After many paths (a first capture's), update-index leaves the
		// index's cache tree invalid in most directories, and the next
		// status would compare the index with the private HEAD by reading
		// all their trees. write-tree rebuilds the cache tree and writes
		// it back; the trees it names are already stored, so it writes
		// none unless a file changed again since the capture.
		// --missing-ok spares it a lookup of every blob of those
		// directories (two thirds of its time): the entries' blobs are
		// the ones the capture trusted, or update-index just wrote them.
		steps = append(steps, step{args: []string{"write-tree", "--missing-ok"}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.budget)
	cmds := make([]*exec.Cmd, len(steps))
	errs := make([]*bytes.Buffer, len(steps))
	for i, st := range steps {
		if e.onPriv != nil {
			e.onPriv(st.args)
		}
		cmds[i], errs[i] = e.priv.Command(ctx, append(e.privConfig(), st.args...)...)
		if st.paths != nil {
			cmds[i].Stdin = strings.NewReader(strings.Join(st.paths, "\x00") + "\x00")
		}
		// The update must not outlive the process: another engine opened
		// on this state dir removes a lock it finds, taking it for a dead
		// one.
		dieWithParent(cmds[i])
	}
	// A packed edit's index is being written in Go when it can be (see
	// indexwrite.go): the steps are what git does otherwise.
	pending := e.fastEdit
	e.fastEdit = nil
	done := make(chan struct{})
	e.indexUpdate = done
	go func() {
		defer close(done)
		defer cancel()
		if pending != nil {
			err := <-pending.done
			if err == nil {
				e.indexWrites++
				e.settled() // a new index, its racy entries smudged
				ownerOnly(e.privIndex, e.privDir)
				return
			}
		}
		// One after the other: both take the index lock.
		ok := true
		for i, st := range steps {
			if e.priv.WrapError(st.args, cmds[i].Run(), errs[i]) != nil {
				// Nothing it leaves is trusted: the next status sees
				// it, and the watcher does not vouch for the index.
				e.indexUpdateFailed = true
				ok = false
				break
			}
		}
		if ok {
			e.settled() // the update wrote the index
		}
		ownerOnly(e.privIndex, e.privDir)
	}()
}

// removeArgs are update-index arguments that remove the deleted paths
// from the index and then stop removing: "./" keeps a path that starts with
// '-' from being taken for an option. A list too long for a command line
// (well below the kernel's limit of its arguments) stays on stdin.
func removeArgs(deleted []string) ([]string, bool) {
	if len(deleted) == 0 || len(deleted) > 4096 {
		return nil, false
	}
	args := []string{"update-index", "--force-remove"}
	size := 0
	for _, p := range deleted {
		size += len(p) + 3
		if size > 256<<10 || strings.ContainsRune(p, 0) {
			return nil, false
		}
		args = append(args, "./"+p)
	}
	return append(args, "--no-force-remove"), true
}

// waitEditedIndex waits for the private index written after the last
// packed tree edit, when no index update took it over.
func (e *Engine) waitEditedIndex() {
	if e.fastEdit != nil {
		<-e.fastEdit.done
		e.fastEdit = nil
	}
}

// waitIndexUpdate waits for a background index update to finish.
func (e *Engine) waitIndexUpdate() {
	e.waitEditedIndex()
	if e.indexUpdate != nil {
		<-e.indexUpdate
		e.indexUpdate = nil
		if e.indexUpdateFailed {
			e.indexStale, e.indexUpdateFailed = true, false
		}
	}
}

// Wait returns once the background work of the last capture (the private
// index catching up with a tree edit) has finished. The engine stays usable;
// call Wait before another Engine opens the same state dir, or before the
// process exits if the next capture should not pay for that work again.
func (e *Engine) Wait() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.waitIndexUpdate()
}
