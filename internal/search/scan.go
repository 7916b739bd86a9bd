package search

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// The event scanner reads an events.jsonl line without building a tree:
// it finds the top-level fields search needs and visits the string values
// of "data" with their keys, unescaping only strings whose escaped bytes
// hold the prefilter needle. Decoding every candidate line into a map was
// measured at 10x grep on hit-heavy queries (docs/benchmarks.md).

type lineScanner struct {
	b   []byte
	pos int
}

// next ends an element of an object or array: after blanks, a comma
// means another element follows (more); close ends the container (ok);
// anything else is malformed.
func (s *lineScanner) next(close byte) (more, ok bool) {
	s.ws()
	if s.pos >= len(s.b) {
		return false, false
	}
	switch s.b[s.pos] {
	case ',':
		s.pos++
		return true, true
	case close:
		s.pos++
		return false, true
	}
	return false, false
}

func (s *lineScanner) ws() {
	for s.pos < len(s.b) {
		switch s.b[s.pos] {
		case ' ', '\t', '\r', '\n':
			s.pos++
		default:
			return
		}
	}
}

// str reads a string token and returns its escaped contents (without the
// quotes).
func (s *lineScanner) str() ([]byte, bool) {
	raw, _, ok := s.strEsc()
	return raw, ok
}

// strEsc is str that also says whether the contents hold an escape.
func (s *lineScanner) strEsc() ([]byte, bool, bool) {
	if s.pos >= len(s.b) || s.b[s.pos] != '"' {
		return nil, false, false
	}
	end, esc, ok := scanString(s.b, s.pos+1)
	if !ok {
		return nil, false, false
	}
	raw := s.b[s.pos+1 : end]
	s.pos = end + 1
	return raw, esc, true
}

// scanString finds the closing quote of a string token whose contents
// start at b[i]. It accepts only what encoding/json accepts (JSON's
// escapes, no control characters) and looks at eight bytes at a time:
// string contents are most of every line a search verifies.
func scanString(b []byte, i int) (end int, esc, ok bool) {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	for {
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			q := x ^ (ones * '"')
			bs := x ^ (ones * '\\')
			// The lowest flagged byte is exact: a quote, a backslash or a
			// control character.
			t := ((q - ones) &^ q) | ((bs - ones) &^ bs) | ((x - ones*0x20) &^ x)
			if t &= high; t != 0 {
				i += bits.TrailingZeros64(t) / 8
				break
			}
			i += 8
		}
		for ; i < len(b); i++ {
			if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
				break
			}
		}
		if i >= len(b) {
			return 0, false, false
		}
		switch c := b[i]; {
		case c == '"':
			return i, esc, true
		case c < 0x20:
			return 0, false, false
		}
		// A backslash: only JSON's escapes.
		esc = true
		if i+1 >= len(b) {
			return 0, false, false
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if _, n := hex4(b[i+2:]); n == 0 {
				return 0, false, false
			}
			i += 6
		default:
			return 0, false, false
		}
	}
}

// skip steps over one value.
func (s *lineScanner) skip(depth int) bool {
	return s.value(nil, depth, nil)
}

// value reads one value; string values are passed to visit with the key
// of the innermost object member (array elements keep it). visit returns
// true to stop. value returns false on malformed input or a stop.
func (s *lineScanner) value(key []byte, depth int, visit func(key, raw []byte) bool) bool {
	if depth > 64 {
		return false
	}
	s.ws()
	if s.pos >= len(s.b) {
		return false
	}
	switch s.b[s.pos] {
	case '"':
		raw, ok := s.str()
		if !ok {
			return false
		}
		if visit != nil && visit(key, raw) {
			return false
		}
		return true
	case '{':
		s.pos++
		s.ws()
		if s.pos < len(s.b) && s.b[s.pos] == '}' {
			s.pos++
			return true
		}
		for {
			s.ws()
			k, ok := s.str()
			if !ok {
				return false
			}
			s.ws()
			if s.pos >= len(s.b) || s.b[s.pos] != ':' {
				return false
			}
			s.pos++
			if !s.value(k, depth+1, visit) {
				return false
			}
			if more, ok := s.next('}'); !more {
				return ok
			}
		}
	case '[':
		s.pos++
		s.ws()
		if s.pos < len(s.b) && s.b[s.pos] == ']' {
			s.pos++
			return true
		}
		for {
			if !s.value(key, depth+1, visit) {
				return false
			}
			if more, ok := s.next(']'); !more {
				return ok
			}
		}
	default:
		start := s.pos
		for s.pos < len(s.b) {
			c := s.b[s.pos]
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\t' || c == '\r' {
				break
			}
			s.pos++
		}
		return s.pos > start
	}
}

// unescape decodes the contents of a JSON string token. Invalid escapes
// are kept as they are and invalid UTF-8 becomes U+FFFD, as
// encoding/json would decode it.
func unescape(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw)
	}
	return string(appendUnescaped(nil, raw))
}

// appendUnescaped appends the decoded contents of a JSON string token to
// dst, with unescape's rules.
func appendUnescaped(dst, raw []byte) []byte {
	start := len(dst)
	dst = slices.Grow(dst, len(raw))
	for len(raw) > 0 {
		i := indexBackslash(raw)
		if i < 0 {
			dst = append(dst, raw...)
			break
		}
		dst = append(dst, raw[:i]...)
		raw = raw[i:]
		if len(raw) == 1 {
			dst = append(dst, '\\')
			break
		}
		n := 2
		switch raw[1] {
		case '"', '\\', '/':
			dst = append(dst, raw[1])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, m := hex4(raw[2:])
			if m == 0 {
				dst = append(dst, '\\', 'u')
				break
			}
			n += m
			if utf16.IsSurrogate(r) {
				if len(raw) >= n+2 && raw[n] == '\\' && raw[n+1] == 'u' {
					if r2, m2 := hex4(raw[n+2:]); m2 > 0 {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							r = d
							n += 2 + m2
						}
					}
				}
				if utf16.IsSurrogate(r) {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
		default:
			dst = append(dst, '\\', raw[1])
		}
		raw = raw[n:]
	}
	if !utf8.Valid(dst[start:]) {
		fixed := appendValidUTF8(nil, dst[start:])
		dst = append(dst[:start], fixed...)
	}
	return dst
}

// indexBackslash is bytes.IndexByte(b, '\\') for the short runs between
// escapes, eight bytes at a time without a call.
func indexBackslash(b []byte) int {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:]) ^ (ones * '\\')
		if t := (x - ones) &^ x & high; t != 0 {
			return i + bits.TrailingZeros64(t)/8
		}
	}
	for ; i < len(b); i++ {
		if b[i] == '\\' {
			return i
		}
	}
	return -1
}

// appendValidUTF8 appends b with each invalid byte replaced by U+FFFD, as
// encoding/json decodes it.
func appendValidUTF8(dst, b []byte) []byte {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, b[:n]...)
		}
		b = b[n:]
	}
	return dst
}

func hex4(b []byte) (rune, int) {
	if len(b) < 4 {
		return 0, 0
	}
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, 0
		}
	}
	return r, 4
}

func onlySpace(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

// header is the top level of an event line. String fields are their
// escaped contents.
type header struct {
	seq             int64
	typ, turn, ts   []byte
	typEsc, turnEsc bool
	tsEsc           bool
	data            []byte
	dataAt          int // offset of data in the line
}

// time returns the event's time in UTC (zero when it is not RFC 3339).
func (h *header) time() time.Time {
	if !h.tsEsc {
		if t, ok := parseRFC3339UTC(h.ts); ok {
			return t
		}
	}
	t, err := time.Parse(time.RFC3339Nano, unescape(h.ts))
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// parseHeader reads an event line's top-level members.
func parseHeader(line []byte) (header, bool) {
	var h header
	s := &lineScanner{b: line}
	s.ws()
	if s.pos >= len(s.b) || s.b[s.pos] != '{' {
		return h, false
	}
	s.pos++
	hasType := false
	for {
		s.ws()
		if s.pos < len(s.b) && s.b[s.pos] == '}' {
			break
		}
		k, ok := s.str()
		if !ok {
			return h, false
		}
		s.ws()
		if s.pos >= len(s.b) || s.b[s.pos] != ':' {
			return h, false
		}
		s.pos++
		s.ws()
		start := s.pos
		var (
			raw []byte
			esc bool
		)
		switch string(k) {
		case "data":
			if start < len(s.b) && s.b[start] == '{' {
				// yolop writes data last: take the rest of the object
				// without scanning it twice (verify scans it, and finds
				// nothing after a damage).
				if end := bytes.LastIndexByte(s.b, '}'); end > start && onlySpace(s.b[end+1:]) {
					if d := bytes.TrimRight(s.b[start:end], " \t\r\n"); len(d) > 1 && d[len(d)-1] == '}' {
						h.data, h.dataAt = d, start
						return h, h.seq > 0 && hasType
					}
				}
			}
			if !s.skip(0) {
				return h, false
			}
			h.data, h.dataAt = s.b[start:s.pos], start
		case "seq":
			if !s.skip(0) {
				return h, false
			}
			n, ok := parseSeq(s.b[start:s.pos])
			if !ok {
				return h, false
			}
			h.seq = n
		case "type", "turn", "ts":
			if start < len(s.b) && s.b[start] == '"' {
				raw, esc, ok = s.strEsc()
			} else {
				// Not a string: step over it; a type that is no string
				// makes the line unusable, a turn or time is left empty.
				ok = s.skip(0)
				raw, esc = nil, false
				if ok && string(k) == "type" {
					return h, false
				}
			}
			if !ok {
				return h, false
			}
			switch string(k) {
			case "type":
				h.typ, h.typEsc, hasType = raw, esc, len(raw) > 0
			case "turn":
				h.turn, h.turnEsc = raw, esc
			case "ts":
				h.ts, h.tsEsc = raw, esc
			}
		default:
			if !s.skip(0) {
				return h, false
			}
		}
		s.ws()
		if s.pos < len(s.b) && s.b[s.pos] == ',' {
			s.pos++
			continue
		}
		if s.pos < len(s.b) && s.b[s.pos] == '}' {
			break
		}
		return h, false
	}
	return h, h.seq > 0 && hasType
}

// parseSeq parses a JSON integer.
func parseSeq(b []byte) (int64, bool) {
	if len(b) > 0 && len(b) <= 18 && (b[0] != '0' || len(b) == 1) {
		var n int64
		for _, c := range b {
			if c < '0' || c > '9' {
				return jsonInt(b)
			}
			n = n*10 + int64(c-'0')
		}
		return n, true
	}
	return jsonInt(b)
}

// parseRFC3339UTC parses the form yolop writes, 2006-01-02T15:04:05Z with
// an optional fraction of up to nine digits, as time.Parse would; ok is
// false for anything else (the caller then uses time.Parse).
func parseRFC3339UTC(b []byte) (time.Time, bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[len(b)-1] != 'Z' {
		return time.Time{}, false
	}
	num := func(b []byte) int {
		n := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				return -1
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	year, month, day := num(b[0:4]), num(b[5:7]), num(b[8:10])
	hour, minute, sec := num(b[11:13]), num(b[14:16]), num(b[17:19])
	if year < 0 || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return time.Time{}, false
	}
	nsec := 0
	if frac := b[19 : len(b)-1]; len(frac) > 0 {
		if len(frac) < 2 || len(frac) > 10 || frac[0] != '.' {
			return time.Time{}, false
		}
		n := num(frac[1:])
		if n < 0 {
			return time.Time{}, false
		}
		for i := len(frac) - 1; i < 9; i++ {
			n *= 10
		}
		nsec = n
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

func jsonInt(v []byte) (int64, bool) {
	// JSON's integer syntax only: ParseInt also takes "00" and "+1".
	d := v
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || d[0] == '0' && len(d) > 1 {
		return 0, false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil
}
