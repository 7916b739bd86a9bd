package git

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
)

// Input that fits a pipe reaches git through a pipe filled beforehand,
// more through a copy; either way git reads all of it, to the byte.
func TestInputThroughAFilledPipe(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	capacity := pipeCapacity(r)
	r.Close()
	w.Close()
	if capacity < pipeAtomic {
		t.Fatalf("pipe capacity %d", capacity)
	}
	dir := t.TempDir()
	g := New(dir)
	ctx := context.Background()
	if _, err := g.Run(ctx, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, pipeAtomic, capacity - 1, capacity, capacity + 1, 4*capacity + 3} {
		in := bytes.Repeat([]byte("0123456789abcdef\n"), n/17+1)[:n]
		f, err := filledPipe(in)
		if err != nil {
			t.Fatal(err)
		}
		if (f != nil) != (n <= capacity) {
			t.Errorf("%d bytes: filled pipe %v, capacity %d", n, f != nil, capacity)
		}
		if f != nil {
			f.Close()
		}
		out, err := g.RunInput(ctx, in, "hash-object", "--stdin")
		if err != nil {
			t.Fatal(err)
		}
		h := sha1.New()
		fmt.Fprintf(h, "blob %d\x00", n)
		h.Write(in)
		if got, want := Trim(out), hex.EncodeToString(h.Sum(nil)); got != want {
			t.Errorf("%d bytes: git hashed %s, want %s", n, got, want)
		}
	}
}
