package search

import "bytes"

// freqOrder lists bytes from most to least frequent in session logs
// (JSON punctuation, English and code text); bytes not listed are rarer
// than all of these.
const freqOrder = ` e"tao:insr,hlducm.pfgwy_b/vk-{}0\1x2j3qz[]456789`

var byteRank = func() [256]int {
	var r [256]int
	for i := range r {
		r[i] = 0 // rarest
	}
	for i := 0; i < len(freqOrder); i++ {
		c := freqOrder[i]
		r[c] = len(freqOrder) - i
		if 'a' <= c && c <= 'z' {
			r[c-'a'+'A'] = len(freqOrder) - i - 1
		}
	}
	return r
}()

// foldFinder finds an ASCII-lowercased needle in text of any case without
// lowercasing the text: it scans for the needle's rarest byte (both cases
// of a letter) with bytes.IndexByte and compares around each candidate.
type foldFinder struct {
	needle []byte // lowercase
	k      int    // offset of the rare byte in needle
	lo, up byte   // its two cases (equal for a non-letter)
	// nextLo and nextUp cache the next occurrence at or after the last
	// scan start (len(text) when none).
	nextLo, nextUp int
	fromLo, fromUp int
}

func newFoldFinder(needle []byte) *foldFinder {
	f := &foldFinder{needle: needle}
	best := 1 << 30
	for i, c := range needle {
		if r := byteRank[c]; r < best {
			best, f.k = r, i
		}
	}
	f.lo = needle[f.k]
	f.up = f.lo
	if 'a' <= f.lo && f.lo <= 'z' {
		f.up = f.lo - 'a' + 'A'
	}
	return f
}

// reset prepares for a new text.
func (f *foldFinder) reset() {
	f.nextLo, f.nextUp, f.fromLo, f.fromUp = -1, -1, -1, -1
}

func nextByte(h []byte, c byte, from int) int {
	if from >= len(h) {
		return len(h)
	}
	i := bytes.IndexByte(h[from:], c)
	if i < 0 {
		return len(h)
	}
	return from + i
}

// index returns the first match starting at or after from, or -1.
func (f *foldFinder) index(h []byte, from int) int {
	n := len(f.needle)
	for at := from + f.k; ; {
		if f.nextLo < at {
			f.nextLo = nextByte(h, f.lo, at)
		}
		if f.up == f.lo {
			f.nextUp = f.nextLo
		} else if f.nextUp < at {
			f.nextUp = nextByte(h, f.up, at)
		}
		c := min(f.nextLo, f.nextUp)
		if c >= len(h) {
			return -1
		}
		start := c - f.k
		if start >= 0 && start+n <= len(h) && equalFoldASCII(h[start:start+n], f.needle) {
			return start
		}
		at = c + 1
	}
}

// equalFoldASCII compares text with a lowercase needle, folding ASCII
// letters of text.
func equalFoldASCII(text, lower []byte) bool {
	for i, c := range text {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// first returns the first match in h, or -1. Unlike index it keeps no
// state: it is for the short strings of one line.
func (f *foldFinder) first(h []byte) int {
	best := -1
	for _, c := range [2]byte{f.lo, f.up} {
		if at := f.firstWith(h, c, best); at >= 0 {
			best = at
		}
		if f.up == f.lo {
			break
		}
	}
	return best
}

// firstWith returns the first match whose rare byte is c and that starts
// before limit (anywhere when limit < 0), or -1.
func (f *foldFinder) firstWith(h []byte, c byte, limit int) int {
	n := len(f.needle)
	last := len(h) - n + f.k // the last place the rare byte can be
	if limit >= 0 {
		last = min(last, limit+f.k-1)
	}
	for i := f.k; i <= last; {
		j := bytes.IndexByte(h[i:last+1], c)
		if j < 0 {
			return -1
		}
		i += j
		if equalFoldASCII(h[i-f.k:i-f.k+n], f.needle) {
			return i - f.k
		}
		i++
	}
	return -1
}
