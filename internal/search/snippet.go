package search

import (
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
	for i := 0; i < len(p); {
		c := p[i]
		if c < utf8.RuneSelf {
			switch c {
			case ' ', '\t', '\n', '\v', '\f', '\r':
				o.space = true
			default:
				o.char(p[i : i+1])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(p[i:])
		if unicode.IsSpace(r) {
			o.space = true
		} else {
			o.char(p[i : i+size])
		}
		i += size
	}
}

func (o *oneLiner) char(c []byte) {
	if o.space && len(o.dst) > o.start {
		o.dst = append(o.dst, ' ')
	}
	o.space = false
	o.dst = append(o.dst, c...)
}
