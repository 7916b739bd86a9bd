package snapshot

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os/exec"
	"strings"
)

// A tree edit that writes many objects (the first capture of a checkout
// with a few hundred changed files) writes them as one pack: one
// `index-pack --stdin` instead of a loose file, a rename and a directory
// entry per object, which on a busy disk costs ~1-2 ms each. Small edits
// (a turn's few files) stay loose, so packs do not pile up.
const (
	// packMinObjects is the number of new objects from which a tree edit
	// writes a pack.
	packMinObjects = 24
	// packMaxBytes bounds the file content a packed tree edit holds in
	// memory; beyond it the edit declines to the index path.
	packMaxBytes = 64 << 20
)

// packObject is one object of a pack being written.
type packObject struct {
	typ  byte // 2 tree, 3 blob
	data []byte
	oid  []byte
}

// objectID is git's id of an object of type typ ("blob", "tree").
func objectID(newHash func() hash.Hash, typ string, data []byte) []byte {
	h := newHash()
	fmt.Fprintf(h, "%s %d\x00", typ, len(data))
	h.Write(data)
	return h.Sum(nil)
}

// encodePack is a version 2 pack of objs, undeltified, with its trailing
// checksum.
func encodePack(newHash func() hash.Hash, objs []packObject) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("PACK")
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], 2)
	b.Write(n[:])
	binary.BigEndian.PutUint32(n[:], uint32(len(objs)))
	b.Write(n[:])
	// Small objects (most trees, small files) are stored, not compressed:
	// a dynamic Huffman table per tiny stream costs more CPU than it saves.
	zw, err := zlib.NewWriterLevel(&b, zlib.BestSpeed)
	if err != nil {
		return nil, err
	}
	zs, err := zlib.NewWriterLevel(&b, zlib.NoCompression)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		var hdr [16]byte
		b.Write(packEntryHeader(hdr[:0], int(o.typ), uint64(len(o.data))))
		w := zw
		if len(o.data) < 1024 {
			w = zs
		}
		w.Reset(&b)
		if _, err := w.Write(o.data); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
	}
	h := newHash()
	h.Write(b.Bytes())
	b.Write(h.Sum(nil))
	return b.Bytes(), nil
}

// writePack stores objs in the repository as one pack and checks that git
// has every one of them under the id computed here, through check when
// one was started (nil: a cat-file of its own). Any failure declines to
// the index path (errNotFast) unless the capture was cancelled.
func (e *Engine) writePack(ctx context.Context, newHash func() hash.Hash, objs []packObject, check *objectCheck) (err error) {
	if e.hashSize() == sha1.Size && !sharedRepository(e.sharedRepo) {
		// The pack and its index written here (pack.go): index-pack
		// would only inflate and hash every object again. A shared
		// repository's packs get their permissions from git.
		named, werr := writeOwnPack(e.objects, objs)
		if werr != nil {
			return errNotFast
		}
		// The sync that makes their names durable runs beside git's
		// check, which reads them in place already.
		if e.onPackNamed != nil {
			named = e.onPackNamed(named)
		}
		synced := make(chan error, 1)
		go func() { synced <- named() }()
		defer func() {
			if serr := <-synced; serr != nil && err == nil {
				err = errNotFast
			}
		}()
	} else {
		pack, err := encodePack(newHash, objs)
		if err != nil {
			return errNotFast
		}
		if _, err := e.runPriv(ctx, pack, "index-pack", "--stdin"); err != nil {
			if ctx.Err() != nil {
				return e.captureErr(ctx, "cannot record changed files", err)
			}
			return errNotFast
		}
	}
	// Git itself must find every object under the id computed here.
	var in strings.Builder
	for _, o := range objs {
		in.WriteString(hex.EncodeToString(o.oid) + "\n")
	}
	var out []byte
	if check != nil {
		out, err = check.ask([]byte(in.String()))
	} else {
		out, err = e.runPriv(ctx, []byte(in.String()), checkArgs...)
	}
	if err != nil {
		if ctx.Err() != nil {
			return e.captureErr(ctx, "cannot record changed files", err)
		}
		return errNotFast
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(objs) {
		return errNotFast
	}
	for i, o := range objs {
		typ := "blob"
		if o.typ == 2 {
			typ = "tree"
		}
		if lines[i] != hex.EncodeToString(o.oid)+" "+typ {
			return errNotFast
		}
	}
	return nil
}

// writeOwnPack stores objs (SHA-1) as one durable pack with its index in
// the repository's objects directory, readable by everyone who can reach
// it, as git's own packs are; named makes their names durable (packWriter.place).
// An object whose id is not the one computed for it declines.
func writeOwnPack(objects string, objs []packObject) (named func() error, err error) {
	pw, err := newPackWriter(objects)
	if err != nil {
		return nil, err
	}
	pw.perm = 0o444
	for _, o := range objs {
		oid, err := pw.addBytes(int(o.typ), o.data)
		if err == nil && !bytes.Equal(oid[:], o.oid) {
			err = fmt.Errorf("object %x was computed as %x", oid, o.oid)
		}
		if err != nil {
			return nil, pw.abort(err)
		}
	}
	named, err = pw.place()
	if err == nil && named == nil {
		err = errors.New("no object to write")
	}
	return named, err
}

// checkArgs are the git arguments of the pack's check.
var checkArgs = []string{"cat-file", "--batch-check=%(objectname) %(objecttype)"}

// objectCheck is git's check of a pack, started before the pack is
// written so that starting a process is not on the capture's path: git
// reads the pack directory when it is first asked for an object, and
// again when it does not find one.
type objectCheck struct {
	e      *Engine
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout bytes.Buffer
	stderr *bytes.Buffer
	args   []string
	done   bool
}

// startObjectCheck starts the check; nil when git could not be started
// (writePack then runs a check of its own).
func (e *Engine) startObjectCheck(ctx context.Context) *objectCheck {
	if e.onPriv != nil {
		e.onPriv(checkArgs)
	}
	c := &objectCheck{e: e, args: append(e.privConfig(), checkArgs...)}
	c.cmd, c.stderr = e.priv.Command(ctx, c.args...)
	c.cmd.Stdout = &c.stdout
	stdin, err := c.cmd.StdinPipe()
	if err != nil {
		return nil
	}
	if err := c.cmd.Start(); err != nil {
		return nil
	}
	c.stdin = stdin
	return c
}

// ask writes in (one object id per line) and returns what git answered.
func (c *objectCheck) ask(in []byte) ([]byte, error) {
	c.done = true
	_, werr := c.stdin.Write(in)
	cerr := c.stdin.Close()
	err := c.e.priv.WrapError(c.args, c.cmd.Wait(), c.stderr)
	if err == nil {
		err = errors.Join(werr, cerr)
	}
	return c.stdout.Bytes(), err
}

// abandon lets a check that was not asked end (its input closed, it
// exits having read nothing). Safe on nil and after ask.
func (c *objectCheck) abandon() {
	if c == nil || c.done {
		return
	}
	c.done = true
	_ = c.stdin.Close() // the process's exit is what matters
	_ = c.cmd.Wait()    // nothing was asked of it: no answer to report
}
