package search

import (
	"encoding/binary"
	"slices"
	"unicode"
	"unicode/utf8"
)

// snippet sizes, in runes.
const (
	before = 30
	after  = 50
	// maxMatch is the longest match shown whole.
	maxMatch = 120
)

const ellipsis = "…"

// appendSnippet appends the text around s[a:b] on one line to dst, with
// "…" where it was shortened and every run of white space (newlines
// included) collapsed to one space, none at either end. It only looks at
// the bytes it keeps: tool output can be megabytes. s is valid UTF-8.
func appendSnippet(dst, s []byte, a, b int) []byte {
	lo := a
	for n := 0; lo > 0 && n < before; n++ {
		if s[lo-1] < utf8.RuneSelf {
			lo--
			continue
		}
		_, size := utf8.DecodeLastRune(s[:lo])
		lo -= size
	}
	match := s[a:b]
	long := false
	if utf8.RuneCount(match) > maxMatch {
		end := 0
		for n := 0; n < maxMatch; n++ {
			_, size := utf8.DecodeRune(match[end:])
			end += size
		}
		match, b, long = match[:end], len(s), true
	}
	hi := b
	for n := 0; hi < len(s) && n < after; n++ {
		if s[hi] < utf8.RuneSelf {
			hi++
			continue
		}
		_, size := utf8.DecodeRune(s[hi:])
		hi += size
	}
	end := hi
	if long {
		end = a + len(match)
	}
	// A space at either end stays only next to an ellipsis.
	if oneLineAlready(s[lo:end]) && (lo == end || (lo > 0 || s[lo] != ' ') && (long || hi < len(s) || s[end-1] != ' ')) {
		// Nothing to collapse: copy (most snippets of prose).
		if lo > 0 {
			dst = append(dst, ellipsis...)
		}
		dst = append(dst, s[lo:end]...)
		if long || hi < len(s) {
			dst = append(dst, ellipsis...)
		}
		return dst
	}
	o := oneLiner{dst: dst, start: len(dst)}
	if lo > 0 {
		o.write([]byte(ellipsis))
	}
	o.write(s[lo:a])
	o.write(match)
	if long {
		o.write([]byte(ellipsis))
	}
	o.write(s[b:hi])
	if hi < len(s) {
		o.write([]byte(ellipsis))
	}
	return o.dst
}

// oneLiner appends text with runs of white space collapsed to one space
// and none at either end.
type oneLiner struct {
	dst   []byte
	start int
	space bool // white space is pending
}

func (o *oneLiner) write(p []byte) {
	// The output is at most p and one pending space: write by index.
	dst := slices.Grow(o.dst, len(p)+1)
	n := len(dst)
	dst = dst[:cap(dst)]
	for i := 0; i < len(p); {
		c := p[i]
		size := 1
		if c < utf8.RuneSelf {
			if asciiSpace[c] {
				o.space = true
				i++
				continue
			}
		} else {
			var r rune
			r, size = utf8.DecodeRune(p[i:])
			if unicode.IsSpace(r) {
				o.space = true
				i += size
				continue
			}
		}
		if o.space {
			if n > o.start {
				dst[n] = ' '
				n++
			}
			o.space = false
		}
		if size == 1 {
			dst[n] = c
			n++
		} else {
			n += copy(dst[n:], p[i:i+size])
		}
		i += size
	}
	o.dst = dst[:n]
}

var asciiSpace = [utf8.RuneSelf]bool{' ': true, '\t': true, '\n': true, '\v': true, '\f': true, '\r': true}

// oneLineAlready reports whether b is ASCII without control characters
// and without two spaces in a row. It may say no for some text that is
// (a space followed by "!"), never yes for text that is not.
func oneLineAlready(b []byte) bool {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	prevSpace := false
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if ((x-ones*0x20)&^x|x)&high != 0 {
			return false // a control character or not ASCII
		}
		sp := x ^ (ones * ' ')
		z := (sp - ones) &^ sp & high // spaces (and maybe a byte after one)
		if z&(z<<8) != 0 || prevSpace && z&0x80 != 0 {
			return false
		}
		prevSpace = b[i+7] == ' '
	}
	for ; i < len(b); i++ {
		c := b[i]
		if c < ' ' || c >= utf8.RuneSelf || c == ' ' && prevSpace {
			return false
		}
		prevSpace = c == ' '
	}
	return true
}
