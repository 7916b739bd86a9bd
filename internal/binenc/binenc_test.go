package binenc

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	var w Writer
	uints := []uint64{0, 1, 127, 128, 300, math.MaxUint32, math.MaxUint64}
	ints := []int64{0, -1, 1, -64, 64, math.MinInt64, math.MaxInt64}
	strs := []string{"", "a", strings.Repeat("é", 100), "\x00\xff"}
	for _, v := range uints {
		w.Uint(v)
	}
	for _, v := range ints {
		w.Int(v)
	}
	for _, s := range strs {
		w.Str(s)
	}
	w.Bool(true)
	w.Bool(false)
	w.Raw([]byte("\x00raw"))
	w.Uint(2)
	w.B = append(w.B, 'x', 'y')

	r := Reader{S: string(w.B)}
	for _, want := range uints {
		if got := r.Uint(); got != want {
			t.Errorf("Uint = %d, want %d", got, want)
		}
	}
	for _, want := range ints {
		if got := r.Int(); got != want {
			t.Errorf("Int = %d, want %d", got, want)
		}
	}
	for _, want := range strs {
		if got := r.Str(); got != want {
			t.Errorf("Str = %q, want %q", got, want)
		}
	}
	if !r.Bool() || r.Bool() {
		t.Error("Bool: want true, false")
	}
	if got := r.Raw(4); got != "\x00raw" {
		t.Errorf("Raw = %q", got)
	}
	if n := r.Count(); n != 2 || r.S != "xy" || r.Err != nil {
		t.Errorf("Count = %d, rest %q, err %v", n, r.S, r.Err)
	}
}

// The varints are encoding/binary's.
func TestSameAsEncodingBinary(t *testing.T) {
	t.Parallel()
	for _, v := range []uint64{0, 5, 1 << 20, math.MaxUint64} {
		var w Writer
		w.Uint(v)
		if string(w.B) != string(binary.AppendUvarint(nil, v)) {
			t.Errorf("Uint(%d) = %x", v, w.B)
		}
		r := Reader{S: string(binary.AppendUvarint(nil, v))}
		if got := r.Uint(); got != v || r.Err != nil {
			t.Errorf("reading %d: %d, %v", v, got, r.Err)
		}
	}
}

// Damaged input fails once, and every later read is zero.
func TestErrorsStick(t *testing.T) {
	t.Parallel()
	cases := map[string]func(r *Reader){
		"\x80":    func(r *Reader) { r.Uint() },
		"\x05ab":  func(r *Reader) { r.Str() },
		"\x05ab ": func(r *Reader) { r.Count() },
		"\x02":    func(r *Reader) { r.Bool() },
		"":        func(r *Reader) { r.Bool() },
		"ab":      func(r *Reader) { r.Raw(3) },
		"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01": func(r *Reader) { r.Uint() },
	}
	for in, read := range cases {
		r := Reader{S: in}
		read(&r)
		if r.Err == nil {
			t.Errorf("%q: no error", in)
			continue
		}
		first := r.Err
		if r.Uint() != 0 || r.Str() != "" || r.Bool() || r.Count() != 0 || r.Raw(0) != "" || r.Err != first || r.S != "" {
			t.Errorf("%q: reads after the error are not zero or the error changed", in)
		}
	}
}
