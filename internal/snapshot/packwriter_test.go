package snapshot

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// TestPackWriterObjectsReadByGit: a pack written here, with objects stored
// by hand (every size around the 65,535-byte stored block and the empty
// one, trees of any size) and compressed ones, written again or not, is
// one git verifies and reads back byte for byte under the ids computed
// here.
func TestPackWriterObjectsReadByGit(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t)
	gittest.WriteFile(t, repo, "a", "a\n")
	gittest.Commit(t, repo, "base")
	r := rand.New(rand.NewPCG(7, 8))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return b
	}
	type obj struct {
		typ  int
		data []byte
	}
	var objs []obj
	for _, n := range []int{0, 1, 1023, 1024, 65534, 65535, 65536, 65537, 140000} {
		objs = append(objs, obj{packBlob, random(n)}, obj{packBlob, bytes.Repeat([]byte("compressible "), n/13+1)})
	}
	// A tree is stored whatever its size.
	var tree bytes.Buffer
	for i := range 3000 {
		fmt.Fprintf(&tree, "100644 f%05d\x00", i)
		tree.Write(random(sha1.Size))
	}
	objs = append(objs, obj{packTree, tree.Bytes()}, obj{packBlob, []byte("twice\n")}, obj{packBlob, []byte("twice\n")}, obj{packBlob, nil})

	pw, err := newPackWriter(filepath.Join(repo, ".git", "objects"))
	if err != nil {
		t.Fatal(err)
	}
	pw.perm = 0o444
	want := map[string][]byte{}
	for _, o := range objs {
		oid, err := pw.addBytes(o.typ, o.data)
		if err != nil {
			t.Fatal(err)
		}
		name := map[int]string{packBlob: "blob", packTree: "tree"}[o.typ]
		if got := objectID(sha1.New, name, o.data); !bytes.Equal(got, oid[:]) {
			t.Fatalf("%s of %d bytes: id %x, want %x", name, len(o.data), oid, got)
		}
		want[hex.EncodeToString(oid[:])] = o.data
	}
	if len(pw.objs) != len(want) {
		t.Errorf("%d objects in the pack, %d distinct ones added", len(pw.objs), len(want))
	}
	finishAndReadBack(t, pw, repo, want)
}

// finishAndReadBack finishes the pack pw writes into repo, has git verify
// it, and checks that git reads each object of want (by id) back byte for
// byte.
func finishAndReadBack(t *testing.T, pw *packWriter, repo string, want map[string][]byte) {
	t.Helper()
	if err := pw.finish(); err != nil {
		t.Fatal(err)
	}
	idx, _ := filepath.Glob(filepath.Join(repo, ".git", "objects", "pack", "pack-*.idx"))
	if len(idx) != 1 {
		t.Fatalf("packs: %v", idx)
	}
	gittest.Git(t, repo, "verify-pack", idx[0])
	for oid, data := range want {
		typ := gittest.Git(t, repo, "cat-file", "-t", oid)
		cmd := exec.Command("git", "cat-file", typ, oid)
		cmd.Dir = repo
		got, err := cmd.Output()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("git reads %s %s as %d bytes (%v), want %d", typ, oid, len(got), err, len(data))
		}
	}
}

// TestStoredStreamIsZlib: the stored stream made by hand is one a zlib
// reader takes, at every size around the stored block's.
func TestStoredStreamIsZlib(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 65535, 65536, 131070, 131071, 200001} {
		data := bytes.Repeat([]byte{byte(n)}, n)
		pw := &packWriter{seen: map[[sha1.Size]byte]bool{}}
		var out bytes.Buffer
		pw.w = bufio.NewWriter(&out)
		if _, err := pw.addStored(packBlob, data); err != nil {
			t.Fatal(err)
		}
		pw.w.Flush()
		b := out.Bytes()
		// Past the pack entry's header (the high bit marks more bytes).
		i := 0
		for b[i]&0x80 != 0 {
			i++
		}
		zr, err := zlib.NewReader(bytes.NewReader(b[i+1:]))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%d bytes: read back %d (%v)", n, len(got), err)
		}
	}
}

// TestPackWriterStoredBetweenCuts: stored objects written between streamed
// ones that are cut off again (a repeat, a file that shrank while read)
// land at the offsets and with the checksums the index says: git verifies
// the pack and reads every object back.
func TestPackWriterStoredBetweenCuts(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t)
	gittest.WriteFile(t, repo, "a", "a\n")
	gittest.Commit(t, repo, "base")
	pw, err := newPackWriter(filepath.Join(repo, ".git", "objects"))
	if err != nil {
		t.Fatal(err)
	}
	pw.perm = 0o444
	big := bytes.Repeat([]byte("0123456789"), 300)
	want := map[string][]byte{}
	stream := func(data []byte, size int) {
		t.Helper()
		oid, err := pw.addBlob(bytes.NewReader(data), int64(size))
		if len(data) < size {
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("a short file: %v", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		want[hex.EncodeToString(oid[:])] = data
	}
	stored := func(data string) {
		t.Helper()
		oid, err := pw.addBytes(packBlob, []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		want[hex.EncodeToString(oid[:])] = []byte(data)
	}
	stream(big, len(big))
	stored("small one\n")
	stream(big, len(big)) // a repeat: cut off
	stored("small one\n") // a repeat: not written
	stored("small two\n")
	stream(big[:100], len(big)) // shrank while read: cut off
	stored("small three\n")
	stream([]byte("tiny"), 4)
	if len(pw.objs) != len(want) || len(want) != 5 {
		t.Fatalf("%d objects in the pack, %d distinct ones added", len(pw.objs), len(want))
	}
	finishAndReadBack(t, pw, repo, want)
}

// TestPackNamesSyncedBeforeTheEdit: the sync that makes a written pack's
// names durable runs beside git's check, and the tree edit waits for it: a
// failed sync declines to the index path, whose tree is the same.
func TestPackNamesSyncedBeforeTheEdit(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	sh(t, wt, `for d in 0 1 2 3 4 5; do mkdir -p d$d; for f in 0 1 2 3 4 5; do echo $d$f > d$d/f$f; done; done; git add -A; git commit -qm base
for d in 0 1 2 3 4 5; do for f in 0 1 2 3 4 5; do echo changed >> d$d/f$f; done; done`)
	e := openEngine(t, wt)
	synced := false
	e.onPackNamed = func(named func() error) func() error {
		return func() error {
			time.Sleep(50 * time.Millisecond) // later than git's check
			synced = named() == nil
			return errors.New("the disk is gone")
		}
	}
	got := capture(t, e, "").Tree
	if !synced {
		t.Fatalf("the pack's names were not synced")
	}
	if e.treeEdits != 0 {
		t.Fatalf("the tree edit went on after its pack's names failed to sync")
	}
	if want := oracle(t, wt); got != want {
		t.Fatalf("capture %s, a fresh engine %s", got, want)
	}
}
