// Package binenc is the one binary codec of yolop's derived caches
// (resume.bin, and the timeline state and the model context fold it
// holds): unsigned varints, zigzag varints, uvarint-prefixed strings,
// one-byte flags and fixed-size byte fields, as encoding/binary writes
// them. Nothing here is a durable format on its own: each cache puts its
// format number first and is rebuilt from the logs when it does not
// decode.
package binenc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Writer appends to B.
type Writer struct{ B []byte }

// Uint appends v as an unsigned varint.
func (w *Writer) Uint(v uint64) { w.B = binary.AppendUvarint(w.B, v) }

// Int appends v as a zigzag varint.
func (w *Writer) Int(v int64) { w.B = binary.AppendVarint(w.B, v) }

// Str appends s, prefixed with its length.
func (w *Writer) Str(s string) {
	w.Uint(uint64(len(s)))
	w.B = append(w.B, s...)
}

// Raw appends b as it is: a field whose size its reader knows (a hash).
func (w *Writer) Raw(b []byte) { w.B = append(w.B, b...) }

// Bool appends 1 or 0.
func (w *Writer) Bool(v bool) {
	if v {
		w.B = append(w.B, 1)
	} else {
		w.B = append(w.B, 0)
	}
}

// Reader reads what a Writer wrote from S, the bytes not read yet; the
// strings it returns are substrings of S (no copy). The first error sticks
// in Err, S is then empty, and every later read returns a zero value.
type Reader struct {
	S   string
	Err error
}

// Fail records err (the first one sticks) and stops reading.
func (r *Reader) Fail(err error) {
	if r.Err == nil {
		r.Err = err
	}
	r.S = ""
}

// Uint reads an unsigned varint of at most 10 bytes.
func (r *Reader) Uint() uint64 {
	if r.Err != nil {
		return 0
	}
	var v uint64
	for i := 0; i < len(r.S) && i < binary.MaxVarintLen64; i++ {
		c := r.S[i]
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			r.S = r.S[i+1:]
			return v
		}
	}
	r.Fail(errors.New("bad number"))
	return 0
}

// Int reads a zigzag varint.
func (r *Reader) Int() int64 {
	u := r.Uint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

// Count reads a count of items that each take at least one byte: it is
// bounded by the bytes left.
func (r *Reader) Count() int {
	n := r.Uint()
	if n > uint64(len(r.S)) || n > math.MaxInt32 {
		r.Fail(fmt.Errorf("count %d beyond the data", n))
		return 0
	}
	return int(n)
}

// Str reads a length-prefixed string.
func (r *Reader) Str() string {
	n := r.Uint()
	if n > uint64(len(r.S)) {
		r.Fail(fmt.Errorf("string of %d bytes beyond the data", n))
		return ""
	}
	v := r.S[:n]
	r.S = r.S[n:]
	return v
}

// Raw reads n bytes as they are (what Writer.Raw wrote).
func (r *Reader) Raw(n int) string {
	if r.Err != nil {
		return ""
	}
	if n > len(r.S) {
		r.Fail(fmt.Errorf("field of %d bytes beyond the data", n))
		return ""
	}
	v := r.S[:n]
	r.S = r.S[n:]
	return v
}

// Bool reads a flag: 0 or 1, anything else is an error.
func (r *Reader) Bool() bool {
	if r.Err != nil {
		return false
	}
	if len(r.S) == 0 || r.S[0] > 1 {
		r.Fail(errors.New("bad flag"))
		return false
	}
	v := r.S[0] == 1
	r.S = r.S[1:]
	return v
}
