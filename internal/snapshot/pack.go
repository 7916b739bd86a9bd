package snapshot

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/adler32"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/yolop-dev/yolop/internal/fsutil"
)

// packWriter writes objects into one pack file (version 2, no deltas, zlib
// at its fastest level, small objects and trees stored) and its index
// (version 2) in a repository's objects/pack directory: the bulk path of a
// folder's first capture and of a checkout's first tree edit, one file for
// all its objects instead of a loose object per file or an index-pack that
// inflates and hashes them all again. Git reads the result as any fetched
// pack. Only SHA-1 repositories are written.
type packWriter struct {
	dir  string // objects/pack
	perm os.FileMode
	f    *os.File
	w    *bufio.Writer
	off  int64 // bytes written so far (the offset of the next object)
	objs []packObj
	seen map[[sha1.Size]byte]bool
	zw   *zlib.Writer
	zs   *zlib.Writer // stores: no compression
	// For objects held in memory and stored (addStored): the entry
	// being built, and a digest used again for each.
	entry []byte
	sum   hash.Hash
}

type packObj struct {
	oid [sha1.Size]byte
	crc uint32
	off int64
}

// Object types in a pack entry's header.
const (
	packCommit = 1
	packTree   = 2
	packBlob   = 3
)

var packTypeName = map[int]string{packCommit: "commit", packTree: "tree", packBlob: "blob"}

// packEntryHeader appends a pack entry's header to b: its type and size,
// 4 bits then 7 per byte, little end first, the high bit saying more
// follow.
func packEntryHeader(b []byte, typ int, size uint64) []byte {
	c := byte(typ<<4) | byte(size&0x0f)
	size >>= 4
	for size > 0 {
		b = append(b, c|0x80)
		c = byte(size & 0x7f)
		size >>= 7
	}
	return append(b, c)
}

// packStoreBelow is the size under which an object is stored, not
// compressed: a dynamic Huffman table per tiny zlib stream costs more CPU
// than it saves. Trees are stored whatever their size (their object ids,
// two fifths of them, do not compress).
const packStoreBelow = 1024

// newPackWriter starts a pack in objects/pack whose files will be readable
// by their owner only (a folder's own repository); set perm before finish
// for a repository the user's git reads.
func newPackWriter(objects string) (*packWriter, error) {
	dir := filepath.Join(objects, "pack")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, "tmp_pack_yolop_")
	if err != nil {
		return nil, err
	}
	p := &packWriter{dir: dir, perm: 0o400, f: f, w: bufio.NewWriterSize(f, 1<<20), seen: map[[sha1.Size]byte]bool{}}
	// The object count is written at the end.
	p.w.Write([]byte{'P', 'A', 'C', 'K', 0, 0, 0, 2, 0, 0, 0, 0})
	p.off = 12
	return p, nil
}

// countingCRC counts and checksums what goes through it.
type countingCRC struct {
	w   io.Writer
	crc hash.Hash32
	n   int64
}

func (c *countingCRC) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.crc.Write(b[:n])
	c.n += int64(n)
	return n, err
}

// addBlob writes a blob of size bytes read from r, and returns its id. An
// object already in the pack is written once: the repeat is cut off again.
// A reader giving fewer than size bytes is an error (io.ErrUnexpectedEOF).
func (p *packWriter) addBlob(r io.Reader, size int64) ([sha1.Size]byte, error) {
	return p.add(packBlob, r, size)
}

// addBytes writes an object held in memory (a tree, a commit, a small
// file).
func (p *packWriter) addBytes(typ int, data []byte) ([sha1.Size]byte, error) {
	if typ == packTree || len(data) < packStoreBelow {
		return p.addStored(typ, data)
	}
	return p.add(typ, bytes.NewReader(data), int64(len(data)))
}

// addStored writes an object held in memory as a stored zlib stream, made
// here (RFC 1950 and 1951: a header, stored blocks of at most 65,535
// bytes, the data's Adler-32): no compressor state to reset for each of a
// first capture's hundreds of small objects. An object already in the
// pack is not written again.
func (p *packWriter) addStored(typ int, data []byte) ([sha1.Size]byte, error) {
	var oid [sha1.Size]byte
	if p.sum == nil {
		p.sum = sha1.New()
	}
	p.sum.Reset()
	b := append(p.entry[:0], packTypeName[typ]...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(data)), 10)
	b = append(b, 0)
	p.sum.Write(b)
	p.sum.Write(data)
	p.sum.Sum(oid[:0])
	if p.seen[oid] {
		p.entry = b
		return oid, nil
	}
	b = packEntryHeader(b[:0], typ, uint64(len(data)))
	b = append(b, 0x78, 0x01) // deflate, 32K window, no dictionary, fastest
	rest := data
	for {
		n := min(len(rest), 65535)
		final := byte(0)
		if n == len(rest) {
			final = 1
		}
		b = append(b, final, byte(n), byte(n>>8), ^byte(n), ^byte(n>>8))
		b = append(b, rest[:n]...)
		rest = rest[n:]
		if final == 1 {
			break
		}
	}
	b = binary.BigEndian.AppendUint32(b, adler32.Checksum(data))
	p.entry = b
	if _, err := p.w.Write(b); err != nil {
		return oid, err
	}
	p.seen[oid] = true
	p.objs = append(p.objs, packObj{oid: oid, crc: crc32.ChecksumIEEE(b), off: p.off})
	p.off += int64(len(b))
	return oid, nil
}

func (p *packWriter) add(typ int, r io.Reader, size int64) ([sha1.Size]byte, error) {
	var oid [sha1.Size]byte
	start := p.off
	cw := &countingCRC{w: p.w, crc: crc32.NewIEEE()}
	var hdr [16]byte
	if _, err := cw.Write(packEntryHeader(hdr[:0], typ, uint64(size))); err != nil {
		return oid, err
	}
	h := sha1.New()
	fmt.Fprintf(h, "%s %d\x00", packTypeName[typ], size)
	zw, err := p.zlib(cw, typ == packTree || size < packStoreBelow)
	if err != nil {
		return oid, err
	}
	got, err := io.Copy(io.MultiWriter(zw, h), io.LimitReader(r, size))
	if err == nil && got < size {
		// Shorter than its size said (it shrank while read): take the
		// partial entry off again; the caller leaves the file out.
		if err := p.cut(start); err != nil {
			return oid, err
		}
		return oid, io.ErrUnexpectedEOF
	}
	if err != nil {
		return oid, err
	}
	if err := zw.Close(); err != nil {
		return oid, err
	}
	copy(oid[:], h.Sum(nil))
	p.off += cw.n
	if p.seen[oid] {
		return oid, p.cut(start)
	}
	p.seen[oid] = true
	p.objs = append(p.objs, packObj{oid: oid, crc: cw.crc.Sum32(), off: start})
	return oid, nil
}

// zlib returns the writer (compressing, or storing) reset onto w.
func (p *packWriter) zlib(w io.Writer, store bool) (*zlib.Writer, error) {
	z, level := &p.zw, zlib.BestSpeed
	if store {
		z, level = &p.zs, zlib.NoCompression
	}
	if *z == nil {
		zw, err := zlib.NewWriterLevel(w, level)
		if err != nil {
			return nil, err
		}
		*z = zw
		return zw, nil
	}
	(*z).Reset(w)
	return *z, nil
}

// writeTrees writes the trees of entries (sorted by path, as in an index)
// and returns the root tree's id. A tree lists its entries in git's order:
// by name, a directory's name compared as if it ended in '/'.
func (p *packWriter) writeTrees(entries []indexEntryOut) ([sha1.Size]byte, error) {
	type item struct {
		name string
		mode uint32
		oid  [sha1.Size]byte
	}
	var build func(prefix string, ents []indexEntryOut) ([sha1.Size]byte, error)
	build = func(prefix string, ents []indexEntryOut) ([sha1.Size]byte, error) {
		var items []item
		for i := 0; i < len(ents); {
			rest := ents[i].path[len(prefix):]
			j := strings.IndexByte(rest, '/')
			if j < 0 {
				items = append(items, item{rest, ents[i].mode, ents[i].oid})
				i++
				continue
			}
			dir := rest[:j+1]
			k := i
			for k < len(ents) && strings.HasPrefix(ents[k].path[len(prefix):], dir) {
				k++
			}
			oid, err := build(prefix+dir, ents[i:k])
			if err != nil {
				return oid, err
			}
			items = append(items, item{dir, 0o40000, oid})
			i = k
		}
		sort.Slice(items, func(a, b int) bool { return items[a].name < items[b].name })
		var b bytes.Buffer
		for _, it := range items {
			fmt.Fprintf(&b, "%o %s\x00", it.mode, strings.TrimSuffix(it.name, "/"))
			b.Write(it.oid[:])
		}
		return p.addBytes(packTree, b.Bytes())
	}
	return build("", entries)
}

// cut takes everything from start on off the pack again.
func (p *packWriter) cut(start int64) error {
	if err := p.w.Flush(); err != nil {
		return err
	}
	if err := p.f.Truncate(start); err != nil {
		return err
	}
	if _, err := p.f.Seek(start, io.SeekStart); err != nil {
		return err
	}
	p.off = start
	return nil
}

// finish completes the pack (object count, trailer), writes its index,
// makes both durable and renames them into place: the index last, as git
// only looks at packs through their index. An empty pack is removed.
func (p *packWriter) finish() error {
	named, err := p.place()
	if err != nil || named == nil {
		return err
	}
	return named()
}

// place is finish but for the sync of the names: the pack and its index
// are durable and in place, readable by git, and named (nil for an empty
// pack) makes their names durable.
func (p *packWriter) place() (func() error, error) {
	if err := p.w.Flush(); err != nil {
		return nil, p.abort(err)
	}
	if len(p.objs) == 0 {
		return nil, p.abort(nil)
	}
	var cnt [4]byte
	binary.BigEndian.PutUint32(cnt[:], uint32(len(p.objs)))
	if _, err := p.f.WriteAt(cnt[:], 8); err != nil {
		return nil, p.abort(err)
	}
	// The trailer is the SHA-1 of everything before it, read back once.
	if _, err := p.f.Seek(0, io.SeekStart); err != nil {
		return nil, p.abort(err)
	}
	h := sha1.New()
	if _, err := io.Copy(h, bufio.NewReaderSize(p.f, 1<<20)); err != nil {
		return nil, p.abort(err)
	}
	sum := h.Sum(nil)
	if _, err := p.f.Write(sum); err != nil {
		return nil, p.abort(err)
	}
	// Through the descriptor, not the path: whatever can write the pack
	// directory could have put a symlink there by now.
	if err := p.f.Chmod(p.perm); err != nil {
		return nil, p.abort(err)
	}
	// The index is written and synced beside the pack's own sync: two
	// fsyncs at once share the file system's journal commit.
	type synced struct {
		path string
		err  error
	}
	idx := make(chan synced, 1)
	go func() {
		path, err := writeSynced(p.dir, "tmp_idx_yolop_", p.index(sum), p.perm)
		idx <- synced{path, err}
	}()
	err := p.f.Sync()
	ix := <-idx
	if err != nil || ix.err != nil {
		if ix.err == nil {
			os.Remove(ix.path)
		}
		return nil, p.abort(errors.Join(err, ix.err))
	}
	tmp := p.f.Name()
	if err := p.f.Close(); err != nil {
		os.Remove(tmp)
		os.Remove(ix.path)
		return nil, err
	}
	// The pack first: git finds a pack by its index.
	name := filepath.Join(p.dir, "pack-"+hex.EncodeToString(sum))
	if err := os.Rename(tmp, name+".pack"); err != nil {
		os.Remove(tmp)
		os.Remove(ix.path)
		return nil, err
	}
	if err := os.Rename(ix.path, name+".idx"); err != nil {
		os.Remove(ix.path)
		return nil, err
	}
	// One directory sync makes both names durable.
	return func() error { return fsutil.SyncDir(p.dir) }, nil
}

// writeSynced writes data to a new temporary file in dir (named after
// pattern, as os.CreateTemp does) with perm, synced, and returns its path.
func writeSynced(dir, pattern string, data []byte, perm os.FileMode) (string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// abort removes the unfinished pack and returns err.
func (p *packWriter) abort(err error) error {
	name := p.f.Name()
	p.f.Close()
	return errors.Join(err, os.Remove(name))
}

// index is the version 2 pack index of the objects written.
func (p *packWriter) index(packSum []byte) []byte {
	objs := append([]packObj(nil), p.objs...)
	sort.Slice(objs, func(i, j int) bool { return bytes.Compare(objs[i].oid[:], objs[j].oid[:]) < 0 })
	var b bytes.Buffer
	b.Write([]byte{0xff, 't', 'O', 'c', 0, 0, 0, 2})
	var fan [256]uint32
	for _, o := range objs {
		fan[o.oid[0]]++
	}
	var total uint32
	for i := range fan {
		total += fan[i]
		_ = binary.Write(&b, binary.BigEndian, total)
	}
	for _, o := range objs {
		b.Write(o.oid[:])
	}
	for _, o := range objs {
		_ = binary.Write(&b, binary.BigEndian, o.crc)
	}
	var large []int64
	for _, o := range objs {
		if o.off < 1<<31 {
			_ = binary.Write(&b, binary.BigEndian, uint32(o.off))
			continue
		}
		_ = binary.Write(&b, binary.BigEndian, uint32(1<<31|len(large)))
		large = append(large, o.off)
	}
	for _, off := range large {
		_ = binary.Write(&b, binary.BigEndian, uint64(off))
	}
	b.Write(packSum)
	sum := sha1.Sum(b.Bytes())
	b.Write(sum[:])
	return b.Bytes()
}
