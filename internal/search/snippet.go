package search

import (
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
