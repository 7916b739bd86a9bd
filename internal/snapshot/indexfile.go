package snapshot

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/yolop-dev/yolop/internal/fault"
)

// indexEntry is what the capture needs of one entry of a git index file.
type indexEntry struct {
	path         string
	oid          string // raw object id
	ctime        int64  // nanoseconds since the epoch
	mode         uint32
	stage        int
	assumed      bool // assume-unchanged ("valid")
	skipWorktree bool
	intentToAdd  bool // `git add -N`: no blob yet, left out of the index's tree
	extended     bool // carries extended flags (version 3 and up)
	at           int  // offset of the entry in the file: its stat data come first
}

// errIndexFormat: an index file this reader does not handle (a split
// index, an unknown version); the caller asks git instead.
var errIndexFormat = fault.Plain("snapshot: index format not handled")

// readIndexFile parses the entries of the git index at path (versions 2 to
// 4; hashSize 20 for SHA-1, 32 for SHA-256). An index that depends on a
// shared index (split index) is errIndexFormat: its entries are elsewhere.
// Reading the file directly costs a fraction of `git ls-files -s -v` on a
// big tree, which formats and pipes every entry.
func readIndexFile(path string, hashSize int) ([]indexEntry, error) {
	if hashSize == 0 {
		return nil, errIndexFormat
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseIndex(path, b, hashSize)
}

// parseIndex is readIndexFile of an index file's bytes b, read from path.
func parseIndex(path string, b []byte, hashSize int) ([]indexEntry, error) {
	entries, _, err := parseIndexExt(path, b, hashSize)
	return entries, err
}

// parseIndexExt is parseIndex, which also returns where the extensions
// start in b.
func parseIndexExt(path string, b []byte, hashSize int) ([]indexEntry, int, error) {
	if hashSize == 0 {
		return nil, 0, errIndexFormat
	}
	if len(b) < 12+hashSize || string(b[:4]) != "DIRC" {
		return nil, 0, fmt.Errorf("%s is not a git index", path)
	}
	version := binary.BigEndian.Uint32(b[4:8])
	if version < 2 || version > 4 {
		return nil, 0, errIndexFormat
	}
	n := int(binary.BigEndian.Uint32(b[8:12]))
	end := len(b) - hashSize // the trailing checksum
	if n > (end-12)/(40+hashSize+2) {
		return nil, 0, fmt.Errorf("%s: %d entries cannot fit in it", path, n)
	}
	// One string holds every path and object id, so that the entries
	// cost no allocation each (a big tree's index has 100,000 and more).
	str := string(b)
	entries := make([]indexEntry, 0, n)
	off := 12
	prev := ""
	for i := 0; i < n; i++ {
		head := 40 + hashSize + 2
		if off+head > end {
			return nil, 0, fmt.Errorf("%s: entry %d is cut short", path, i)
		}
		e := b[off:]
		flags := binary.BigEndian.Uint16(e[40+hashSize:])
		ent := indexEntry{
			ctime:   int64(binary.BigEndian.Uint32(e[0:4]))*1e9 + int64(binary.BigEndian.Uint32(e[4:8])),
			mode:    binary.BigEndian.Uint32(e[24:28]),
			stage:   int(flags>>12) & 3,
			assumed: flags&0x8000 != 0,
			oid:     str[off+40 : off+40+hashSize],
			at:      off,
		}
		if flags&0x4000 != 0 {
			if version < 3 || off+head+2 > end {
				return nil, 0, fmt.Errorf("%s: entry %d: bad extended flags", path, i)
			}
			ext := binary.BigEndian.Uint16(e[head:])
			ent.skipWorktree = ext&0x4000 != 0
			ent.intentToAdd = ext&0x2000 != 0
			ent.extended = true
			head += 2
		}
		p := off + head
		if version == 4 {
			// The path is the previous one less its last strip bytes,
			// followed by a NUL-terminated suffix; no padding.
			strip, k, ok := varint(b[p:end])
			if !ok || strip > len(prev) {
				return nil, 0, fmt.Errorf("%s: entry %d: bad path prefix", path, i)
			}
			p += k
			z := bytes.IndexByte(b[p:end], 0)
			if z < 0 {
				return nil, 0, fmt.Errorf("%s: entry %d: unterminated path", path, i)
			}
			ent.path = prev[:len(prev)-strip] + string(b[p:p+z])
			off = p + z + 1
		} else {
			z := bytes.IndexByte(b[p:end], 0)
			if z < 0 {
				return nil, 0, fmt.Errorf("%s: entry %d: unterminated path", path, i)
			}
			ent.path = str[p : p+z]
			// Entries are NUL-padded to a multiple of 8 bytes.
			off += (head + z + 8) &^ 7
		}
		prev = ent.path
		entries = append(entries, ent)
	}
	// Extensions follow: a "link" extension means the entries above are
	// only the changes over a shared index.
	ext := off
	for off+8 <= end {
		sig := string(b[off : off+4])
		size := int(binary.BigEndian.Uint32(b[off+4 : off+8]))
		if sig == "link" {
			return nil, 0, errIndexFormat
		}
		off += 8 + size
	}
	return entries, ext, nil
}

// varint decodes git's offset varint (each continuation adds one before
// shifting).
func varint(b []byte) (val, n int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	c := b[0]
	n = 1
	val = int(c & 127)
	for c&128 != 0 {
		if n >= len(b) || n > 8 {
			return 0, 0, false
		}
		c = b[n]
		n++
		val = ((val + 1) << 7) | int(c&127)
	}
	return val, n, true
}

// hashSize is the object id length of the repository in bytes (0 when
// the format is unknown: readIndexFile then refuses the file).
func (e *Engine) hashSize() int {
	switch e.objFormat {
	case "sha1", "":
		return 20
	case "sha256":
		return 32
	}
	return 0
}

// FlaggedEntries returns the paths of the entries of the git index at path
// that carry the assume-unchanged or the skip-worktree flag: entries whose
// files git no longer compares with the index, so a status or a checkout
// does not see or undo an edit of them. hashSize is 20 for SHA-1, 32 for
// SHA-256. A split index, or one this reader does not handle, is an error.
func FlaggedEntries(path string, hashSize int) ([]string, error) {
	entries, err := readIndexFile(path, hashSize)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.assumed || e.skipWorktree {
			out = append(out, e.path)
		}
	}
	return out, nil
}

// indexSnap is the user's index as one read saw it, for the first capture:
// the private index is seeded from these bytes, and the entries parsed once
// serve both what the rules compare (realIndexSet) and the seed's clean-up,
// instead of the file being read and parsed three times.
type indexSnap struct {
	data    []byte
	mtime   time.Time
	key     string // fileKey's, of these bytes
	entries []indexEntry
	ext     int   // where the extensions start in data
	err     error // parseIndex's
}

// readIndexSnap reads the index at path through one open file, so its
// bytes, mtime and key belong to the same version (git replaces an index
// by renaming a new file over it).
func readIndexSnap(path string, hashSize int) (*indexSnap, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	data, err := readAllSized(f, st.Size())
	if err != nil {
		return nil, err
	}
	tail := data[max(len(data)-32, 0):]
	s := &indexSnap{data: data, mtime: st.ModTime(), key: fmt.Sprintf("%d.%d.%x", st.Size(), st.ModTime().UnixNano(), tail)}
	s.entries, s.ext, s.err = parseIndexExt(path, data, hashSize)
	return s, nil
}

// cachedTree is a valid entry of an index's cache tree: the id of the tree
// that the count entries under its directory make.
type cachedTree struct {
	count int
	oid   string // raw bytes
}

// parseCacheTree returns the valid entries of the cache tree (the TREE
// extension) of the index data b, whose extensions start at off, by
// directory ("" is the root); nil when it has none or it cannot be read
// whole. Git keeps each entry valid only while it names the tree of the
// index entries under it, which git's own write-tree and diff against
// HEAD take on trust.
func parseCacheTree(b []byte, off, hashSize int) map[string]cachedTree {
	end := len(b) - hashSize
	for off >= 0 && off+8 <= end {
		sig := string(b[off : off+4])
		size := int(binary.BigEndian.Uint32(b[off+4 : off+8]))
		if size < 0 || size > end-off-8 {
			return nil
		}
		if sig == "TREE" {
			return readCacheTree(b[off+8:off+8+size], hashSize)
		}
		off += 8 + size
	}
	return nil
}

// readCacheTree reads a TREE extension's body: for each directory, its
// name, its entry count (-1: invalid) and number of subdirectories listed,
// its tree id when valid, then those subdirectories the same way.
func readCacheTree(b []byte, hashSize int) map[string]cachedTree {
	m := map[string]cachedTree{}
	var node func(dir string, root bool) bool
	node = func(dir string, root bool) bool {
		z := bytes.IndexByte(b, 0)
		if z < 0 {
			return false
		}
		name := string(b[:z])
		if root != (name == "") || strings.Contains(name, "/") || name == "." || name == ".." {
			return false
		}
		b = b[z+1:]
		nl := bytes.IndexByte(b, '\n')
		if nl < 0 {
			return false
		}
		c, s, ok := strings.Cut(string(b[:nl]), " ")
		count, cerr := strconv.Atoi(c)
		subs, serr := strconv.Atoi(s)
		if !ok || cerr != nil || serr != nil || count < -1 || subs < 0 || subs > len(b) {
			return false
		}
		b = b[nl+1:]
		if !root {
			dir = path.Join(dir, name)
		}
		if count >= 0 {
			if len(b) < hashSize {
				return false
			}
			m[dir] = cachedTree{count: count, oid: string(b[:hashSize])}
			b = b[hashSize:]
		}
		for range subs {
			if !node(dir, false) {
				return false
			}
		}
		return true
	}
	if !node("", true) || len(b) != 0 {
		return nil
	}
	return m
}

// readAllSized reads f to its end into a buffer of the size its stat gave
// (one allocation, where io.ReadAll doubles its way up to a big index's
// megabytes), and on if the file grew since.
func readAllSized(f *os.File, size int64) ([]byte, error) {
	b := make([]byte, 0, size+1)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow
		}
	}
}
