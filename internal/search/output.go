package search

import (
	"errors"
	"io"
	"math/bits"
	"strconv"
	"time"
	"unicode/utf8"
)

// WriteJSON writes r as one line of JSON: the bytes encoding/json writes
// for it with HTML escaping off, followed by a newline. It appends into a
// small buffer and writes it out as it fills: a search with --limit 0 can
// return hundreds of thousands of hits, and encoding them through
// reflection cost more than finding them.
func (r *Result) WriteJSON(w io.Writer) error {
	const flushAt = 64 << 10
	buf := make([]byte, 0, flushAt+4096)
	flush := func() error {
		_, err := w.Write(buf)
		buf = buf[:0]
		return err
	}
	buf = append(buf, `{"query":`...)
	buf = appendJSONString(buf, r.Query)
	buf = append(buf, `,"hits":`...)
	if r.Hits == nil {
		buf = append(buf, "null"...)
	} else {
		buf = append(buf, '[')
		for i := range r.Hits {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = appendHitJSON(buf, &r.Hits[i]); err != nil {
				return err
			}
			if len(buf) >= flushAt {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		buf = append(buf, ']')
	}
	if r.More != 0 {
		buf = append(buf, `,"more":`...)
		buf = strconv.AppendInt(buf, int64(r.More), 10)
	}
	buf = append(buf, `,"sessions":`...)
	buf = strconv.AppendInt(buf, int64(r.Sessions), 10)
	if len(r.Problems) > 0 {
		buf = append(buf, `,"problems":[`...)
		for i, p := range r.Problems {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSONString(buf, p)
		}
		buf = append(buf, ']')
	}
	buf = append(buf, "}\n"...)
	return flush()
}

func appendHitJSON(buf []byte, h *Hit) ([]byte, error) {
	buf = append(buf, `{"session_id":`...)
	buf = appendJSONString(buf, h.SessionID)
	buf = append(buf, `,"checkpoint":`...)
	buf = appendJSONString(buf, h.Checkpoint)
	buf = append(buf, `,"branch":`...)
	buf = appendJSONString(buf, h.Branch)
	if h.BranchID != "" {
		buf = append(buf, `,"branch_id":`...)
		buf = appendJSONString(buf, h.BranchID)
	}
	buf = append(buf, `,"ts":`...)
	var err error
	if buf, err = appendJSONTime(buf, h.Time); err != nil {
		return buf, err
	}
	buf = append(buf, `,"snippet":`...)
	buf = appendJSONString(buf, h.Snippet)
	buf = append(buf, `,"kind":`...)
	buf = appendJSONString(buf, h.Kind)
	if h.Seq != 0 {
		buf = append(buf, `,"seq":`...)
		buf = strconv.AppendInt(buf, h.Seq, 10)
	}
	return append(buf, '}'), nil
}

// appendJSONTime writes t as time.Time.MarshalJSON does (RFC 3339 with
// the fraction's trailing zeros dropped), with a fast path for UTC.
func appendJSONTime(buf []byte, t time.Time) ([]byte, error) {
	year := t.Year()
	if year < 0 || year > 9999 {
		return buf, errors.New("search: hit time year outside of range [0,9999]")
	}
	if t.Location() != time.UTC {
		buf = append(buf, '"')
		buf = t.AppendFormat(buf, time.RFC3339Nano)
		return append(buf, '"'), nil
	}
	month, day := t.Month(), t.Day()
	hour, minute, sec := t.Clock()
	buf = append(buf, '"',
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+month/10), byte('0'+month%10), '-',
		byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':',
		byte('0'+minute/10), byte('0'+minute%10), ':',
		byte('0'+sec/10), byte('0'+sec%10))
	if ns := t.Nanosecond(); ns != 0 {
		var digits [9]byte
		for i := 8; i >= 0; i-- {
			digits[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := 9
		for digits[n-1] == '0' {
			n--
		}
		buf = append(buf, '.')
		buf = append(buf, digits[:n]...)
	}
	return append(buf, 'Z', '"'), nil
}

const (
	hexDigits = "0123456789abcdef"
	ones      = 0x0101010101010101
	high      = 0x8080808080808080
)

// appendJSONString writes s as encoding/json does with HTML escaping off:
// invalid UTF-8 becomes \ufffd, U+2028 and U+2029 are escaped.
func appendJSONString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while none needs escaping (a quote, a
		// backslash, a control character or anything not ASCII).
		for i+8 <= len(s) {
			x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			q := x ^ (ones * '"')
			bs := x ^ (ones * '\\')
			if t := ((q-ones)&^q | (bs-ones)&^bs | (x-ones*0x20)&^x | x) & high; t != 0 {
				// The lowest flagged byte is exact.
				i += bits.TrailingZeros64(t) / 8
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}
