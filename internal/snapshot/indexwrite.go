package snapshot

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/yolop-dev/yolop/internal/fault"
)

// After a tree edit that wrote a pack (a first capture's, or a watched
// capture of many paths) the private index catches up with the captured
// tree. git would do it with update-index, which hashes every changed file
// again, then write-tree, which reads the index once more to rebuild the
// cache tree. The capture already holds all of it: each changed path's
// object id, mode and the stat data taken before its bytes were read, and
// the entries of the index it edited. writeEditedIndex writes that index
// in one pass, in the split form git keeps the private index in (a shared
// index with the entries, and a small index naming it with the cache
// tree), and declines, for git to do the update, whatever it does not
// handle.
//
// What it writes is what git would: the entries of the index it read, the
// changed ones replaced, added or removed; their stat data as git records
// it; a cache tree whose root it checks against the captured tree. An
// entry racily clean with respect to the index it read (modified in the
// same second as that index was written) is smudged, as git's own index
// write does: the next status compares its content instead of trusting
// its stat data.

// indexStat is the stat data git keeps of a file in an index entry.
type indexStat struct {
	ctimeSec, ctimeNsec, mtimeSec, mtimeNsec uint32
	dev, ino, uid, gid, size                 uint32
}

// errIndexByGit: the Go writer declined; git updates the index.
var errIndexByGit = fault.Plain("snapshot: the private index is left to git")

// editedIndex is what a packed tree edit leaves for the private index.
type editedIndex struct {
	changes []*fastChange // each with its stat data, unless deleted
	root    []byte        // the captured tree
	newHash func() hash.Hash
}

// indexRecord is one entry of the index being written: its path, and its
// stat data, mode, object id and flags as they go on disk.
type indexRecord struct {
	path  string
	fixed []byte // 40 bytes of stat data and mode, then the object id
}

// pendingIndex is a private index being written in Go beside the pack of
// the tree edit it follows.
type pendingIndex struct {
	// commit receives the pack's outcome: only once the objects the
	// index names are stored may it replace the old one.
	commit chan error
	done   chan error // writeEditedIndex's
}

// startEditedIndex starts writing the private index of ed's tree edit; the
// caller sends the pack's outcome to commit.
func (e *Engine) startEditedIndex(ed *editedIndex) *pendingIndex {
	p := &pendingIndex{commit: make(chan error, 1), done: make(chan error, 1)}
	go func() { p.done <- e.writeEditedIndex(ed, p.commit) }()
	return p
}

// writeEditedIndex writes the private index as ed's tree edit leaves it,
// once commit says the edit's objects are stored, or returns an error
// (errIndexByGit when it declines) having changed nothing.
func (e *Engine) writeEditedIndex(ed *editedIndex, commit <-chan error) (err error) {
	hashSize := ed.newHash().Size()
	if hashSize != e.hashSize() {
		return errIndexByGit
	}
	// git's lock protocol: whoever creates index.lock may replace the
	// index by renaming it over; a held lock is git's to report.
	lockPath := e.privIndex + ".lock"
	lock, err := os.OpenFile(lockPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return errIndexByGit
	}
	renamed := false
	defer func() {
		if !renamed {
			lock.Close() // after the Close below, only says it is closed
			os.Remove(lockPath)
		}
	}()
	f, err := os.Open(e.privIndex)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	data, err := readAllSized(f, st.Size())
	f.Close()
	if err != nil {
		return err
	}
	old, ok := statData(st)
	if !ok || len(data) < 12+hashSize {
		return errIndexByGit
	}
	body, sum := data[:len(data)-hashSize], data[len(data)-hashSize:]
	h := ed.newHash()
	h.Write(body)
	if !bytes.Equal(h.Sum(nil), sum) {
		return errIndexByGit // damaged, or written without its checksum
	}
	entries, extAt, err := parseIndexExt(e.privIndex, data, hashSize)
	if err != nil || !plainExtensions(data, extAt, hashSize) {
		return errIndexByGit
	}
	recs := make([]indexRecord, 0, len(entries)+len(ed.changes))
	changes := make([]*fastChange, 0, len(ed.changes))
	for _, c := range ed.changes {
		if !c.deleted && c.stat == nil {
			return errIndexByGit
		}
		changes = append(changes, c)
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].path < changes[j].path })
	fixedLen := 40 + hashSize
	existing := func(x indexEntry) (indexRecord, error) {
		if x.extended || x.assumed || x.stage != 0 {
			return indexRecord{}, errIndexByGit
		}
		if _, ok := treeMode(x.mode); !ok {
			return indexRecord{}, errIndexByGit
		}
		// Every version stores the stat data, mode and object id
		// alike; version 4 only compresses the path.
		fixed := data[x.at : x.at+fixedLen]
		if mtime := binary.BigEndian.Uint32(fixed[8:12]); mtime >= old.mtimeSec {
			// Racily clean with respect to the index read: the
			// file may have changed within the second its stat data
			// were taken, so its size no longer vouches for it.
			fixed = append([]byte(nil), fixed...)
			binary.BigEndian.PutUint32(fixed[36:40], 0)
		}
		return indexRecord{path: x.path, fixed: fixed}, nil
	}
	i := 0
	for _, c := range changes {
		for i < len(entries) && entries[i].path < c.path {
			r, err := existing(entries[i])
			if err != nil {
				return err
			}
			recs = append(recs, r)
			i++
		}
		if i < len(entries) && entries[i].path == c.path {
			if _, err := existing(entries[i]); err != nil {
				return err
			}
			i++ // replaced, or removed
		}
		if c.deleted {
			continue
		}
		mode, err := strconv.ParseUint(c.mode, 8, 32)
		if err != nil || len(c.oid) != hashSize {
			return errIndexByGit
		}
		fixed := make([]byte, fixedLen)
		s := c.stat
		for k, v := range []uint32{s.ctimeSec, s.ctimeNsec, s.mtimeSec, s.mtimeNsec, s.dev, s.ino, uint32(mode), s.uid, s.gid, s.size} {
			binary.BigEndian.PutUint32(fixed[4*k:], v)
		}
		copy(fixed[40:], c.oid)
		recs = append(recs, indexRecord{path: c.path, fixed: fixed})
	}
	for ; i < len(entries); i++ {
		r, err := existing(entries[i])
		if err != nil {
			return err
		}
		recs = append(recs, r)
	}
	root, ext, err := cacheTree(recs, hashSize, ed.newHash)
	if err != nil || !bytes.Equal(root, ed.root) {
		return errIndexByGit // the index did not hold the edited tree
	}
	shared, err := e.writeSharedIndex(recs, ed.newHash)
	if err != nil {
		return err
	}
	sharedName := "sharedindex." + hex.EncodeToString(shared)
	defer func() {
		if err != nil {
			// No index names it.
			os.Remove(filepath.Join(e.privDir, sharedName))
		}
	}()
	// The index itself: no entries of its own; its link extension names
	// the shared index and says that nothing of it is deleted or
	// replaced (two empty bitmaps: git reads a link without them as
	// incomplete); then the cache tree.
	var b bytes.Buffer
	b.WriteString("DIRC")
	b.Write([]byte{0, 0, 0, 2, 0, 0, 0, 0})
	writeExtension(&b, "link", append(append(shared, emptyEWAH...), emptyEWAH...))
	writeExtension(&b, "TREE", ext)
	h = ed.newHash()
	h.Write(b.Bytes())
	b.Write(h.Sum(nil))
	if _, err := lock.Write(b.Bytes()); err != nil {
		return err
	}
	if err := lock.Close(); err != nil {
		return err
	}
	if err := <-commit; err != nil {
		return err
	}
	if err := os.Rename(lockPath, e.privIndex); err != nil {
		return err
	}
	renamed = true
	e.dropSharedIndexes(sharedName)
	return nil
}

// plainExtensions reports whether the extensions of the index data,
// starting at off, are only ones a rewrite may drop (caches git rebuilds):
// no split or sparse index, nothing git requires to read the entries.
func plainExtensions(data []byte, off, hashSize int) bool {
	end := len(data) - hashSize
	for off+8 <= end {
		sig := data[off : off+4]
		size := int(binary.BigEndian.Uint32(data[off+4 : off+8]))
		// An extension whose signature starts with a capital letter
		// is optional (a cache); the others (link, sdir) are not.
		if sig[0] < 'A' || sig[0] > 'Z' || size > end-off-8 {
			return false
		}
		off += 8 + size
	}
	return off == end
}

// emptyEWAH is an empty EWAH bitmap as git serializes one: no bits, one
// 64-bit word (a running-length word of nothing), that word's position.
var emptyEWAH = []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}

func writeExtension(b *bytes.Buffer, sig string, data []byte) {
	b.WriteString(sig)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	b.Write(n[:])
	b.Write(data)
}

// writeSharedIndex writes recs as a shared index (a version 2 index with
// no extensions, named after its checksum) and returns that checksum.
func (e *Engine) writeSharedIndex(recs []indexRecord, newHash func() hash.Hash) ([]byte, error) {
	tmp, err := os.CreateTemp(e.privDir, "sharedindex_")
	if err != nil {
		return nil, err
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := newHash()
	w := bufio.NewWriterSize(io.MultiWriter(tmp, h), 1<<20)
	var head [12]byte
	copy(head[:], "DIRC")
	binary.BigEndian.PutUint32(head[4:], 2)
	binary.BigEndian.PutUint32(head[8:], uint32(len(recs)))
	w.Write(head[:])
	var pad [8]byte
	for _, r := range recs {
		w.Write(r.fixed)
		n := len(r.path)
		if n > 0xfff {
			n = 0xfff
		}
		w.Write([]byte{byte(n >> 8), byte(n)})
		w.WriteString(r.path)
		// NUL-padded to a multiple of 8 bytes, at least one NUL.
		size := (len(r.fixed) + 2 + len(r.path) + 8) &^ 7
		w.Write(pad[:size-len(r.fixed)-2-len(r.path)])
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	sum := h.Sum(nil)
	if _, err := tmp.Write(sum); err != nil {
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		done = true
		return nil, err
	}
	done = true
	if err := os.Rename(tmp.Name(), filepath.Join(e.privDir, "sharedindex."+hex.EncodeToString(sum))); err != nil {
		os.Remove(tmp.Name())
		return nil, err
	}
	return sum, nil
}

// dropSharedIndexes removes the shared indexes other than keep, and those
// a writer killed midway left half written: only one index lives in the
// private git directory, and it names keep. git removes the former on its
// next write too (splitIndex.sharedIndexExpire=now); one left behind costs
// only space.
func (e *Engine) dropSharedIndexes(keep string) {
	m, err := filepath.Glob(filepath.Join(e.privDir, "sharedindex[._]*"))
	if err != nil {
		return
	}
	for _, p := range m {
		if filepath.Base(p) != keep {
			_ = os.Remove(p) // best effort, as above
		}
	}
}

// cacheNode is one directory of a cache tree.
type cacheNode struct {
	name  string
	count int // index entries under it
	oid   []byte
	subs  []*cacheNode
}

// cacheTree computes the tree of recs (sorted by path, stage 0, files and
// symlinks) as write-tree would, and the index's TREE extension recording
// every directory's tree: its root id and the extension's bytes.
func cacheTree(recs []indexRecord, hashSize int, newHash func() hash.Hash) ([]byte, []byte, error) {
	var build func(prefix string, recs []indexRecord) (*cacheNode, error)
	build = func(prefix string, recs []indexRecord) (*cacheNode, error) {
		n := &cacheNode{count: len(recs)}
		var body []byte
		for i := 0; i < len(recs); {
			r := recs[i]
			if !strings.HasPrefix(r.path, prefix) {
				return nil, fmt.Errorf("index entry %q out of order", r.path)
			}
			rest := r.path[len(prefix):]
			slash := strings.IndexByte(rest, '/')
			if slash < 0 {
				i++
				if rest == "" {
					return nil, fmt.Errorf("index entry %q has no name", r.path)
				}
				mode, ok := treeMode(binary.BigEndian.Uint32(r.fixed[24:28]))
				if !ok {
					return nil, fmt.Errorf("index entry %q: unexpected mode", r.path)
				}
				body = append(body, mode...)
				body = append(body, ' ')
				body = append(body, rest...)
				body = append(body, 0)
				body = append(body, r.fixed[40:40+hashSize]...)
				continue
			}
			name := rest[:slash]
			sub := prefix + name + "/"
			k := i + 1
			for k < len(recs) && strings.HasPrefix(recs[k].path, sub) {
				k++
			}
			child, err := build(sub, recs[i:k])
			if err != nil {
				return nil, err
			}
			child.name = name
			n.subs = append(n.subs, child)
			i = k
			body = append(body, "40000 "...)
			body = append(body, name...)
			body = append(body, 0)
			body = append(body, child.oid...)
		}
		n.oid = objectID(newHash, "tree", body)
		return n, nil
	}
	root, err := build("", recs)
	if err != nil {
		return nil, nil, err
	}
	var ext []byte
	var write func(n *cacheNode)
	write = func(n *cacheNode) {
		ext = append(ext, n.name...)
		ext = append(ext, 0)
		ext = strconv.AppendInt(ext, int64(n.count), 10)
		ext = append(ext, ' ')
		ext = strconv.AppendInt(ext, int64(len(n.subs)), 10)
		ext = append(ext, '\n')
		ext = append(ext, n.oid...)
		// git keeps a directory's subtrees ordered by name length,
		// then by name.
		sort.Slice(n.subs, func(i, j int) bool {
			a, b := n.subs[i].name, n.subs[j].name
			if len(a) != len(b) {
				return len(a) < len(b)
			}
			return a < b
		})
		for _, s := range n.subs {
			write(s)
		}
	}
	write(root)
	return root.oid, ext, nil
}
