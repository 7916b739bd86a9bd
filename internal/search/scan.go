package search

import (
	"bytes"
	"strconv"
	"strings"
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
	if s.pos >= len(s.b) || s.b[s.pos] != '"' {
		return nil, false
	}
	start := s.pos + 1
	for i := start; i < len(s.b); i++ {
		switch c := s.b[i]; {
		case c == '\\':
			// Only JSON's escapes: anything else is not a string
			// encoding/json would accept.
			if i+1 >= len(s.b) {
				return nil, false
			}
			i++
			switch s.b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if _, n := hex4(s.b[i+1:]); n == 0 {
					return nil, false
				}
				i += 4
			default:
				return nil, false
			}
		case c == '"':
			s.pos = i + 1
			return s.b[start:i], true
		case c < 0x20:
			return nil, false
		}
	}
	return nil, false
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
			s.ws()
			if s.pos >= len(s.b) {
				return false
			}
			if s.b[s.pos] == ',' {
				s.pos++
				continue
			}
			if s.b[s.pos] == '}' {
				s.pos++
				return true
			}
			return false
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
			s.ws()
			if s.pos >= len(s.b) {
				return false
			}
			if s.b[s.pos] == ',' {
				s.pos++
				continue
			}
			if s.b[s.pos] == ']' {
				s.pos++
				return true
			}
			return false
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

func keyString(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	return unescape(raw)
}

// unescape decodes the contents of a JSON string token. Invalid escapes
// are kept as they are and invalid UTF-8 becomes U+FFFD, as
// encoding/json would decode it.
func unescape(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		if utf8.Valid(raw) {
			return string(raw)
		}
		return validUTF8(raw)
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			out = append(out, c)
			continue
		}
		i++
		switch raw[i] {
		case '"', '\\', '/':
			out = append(out, raw[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, n := hex4(raw[i+1:])
			if n == 0 {
				out = append(out, '\\', 'u')
				continue
			}
			i += n
			if utf16.IsSurrogate(r) {
				if i+2 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
					if r2, n2 := hex4(raw[i+3:]); n2 > 0 {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							r = d
							i += 2 + n2
						}
					}
				}
				if utf16.IsSurrogate(r) {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			out = append(out, '\\', raw[i])
		}
	}
	if !utf8.Valid(out) {
		return validUTF8(out)
	}
	return string(out)
}

// validUTF8 replaces each invalid byte with U+FFFD, as encoding/json does.
func validUTF8(b []byte) string {
	var sb strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(b[:n])
		}
		b = b[n:]
	}
	return sb.String()
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

// header is the top level of an event line.
type header struct {
	seq  int64
	typ  string
	ts   time.Time
	turn string
	data []byte
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
		if string(k) == "data" && start < len(s.b) && s.b[start] == '{' {
			// yolop writes data last: take the rest of the object without
			// scanning it twice (matchData scans it, and finds nothing in
			// a malformed one).
			if end := bytes.LastIndexByte(s.b, '}'); end > start && onlySpace(s.b[end+1:]) {
				if d := bytes.TrimRight(s.b[start:end], " \t\r\n"); len(d) > 1 && d[len(d)-1] == '}' {
					h.data = d
					break
				}
			}
		}
		if !s.skip(0) {
			return h, false
		}
		v := s.b[start:s.pos]
		switch string(k) {
		case "seq":
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				return h, false
			}
			h.seq = n
		case "type":
			h.typ = unescape(bytes.Trim(v, `"`))
		case "turn":
			h.turn = unescape(bytes.Trim(v, `"`))
		case "ts":
			t, err := time.Parse(time.RFC3339Nano, string(bytes.Trim(v, `"`)))
			if err == nil {
				h.ts = t
			}
		case "data":
			h.data = v
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
	return h, h.seq > 0 && h.typ != ""
}
