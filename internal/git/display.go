package git

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DisplayPath returns p for a person to read in a text listing: as it is
// when it is valid UTF-8 made of printable characters (spaces and
// non-ASCII letters included), otherwise quoted with Go's escapes, like
// git's quoted paths ("new\nline", "bad\xffname", "\x1b[2J"). A file name a
// command chose can then neither split a listing's line nor send escape
// sequences to the user's terminal. JSON output carries the exact bytes.
func DisplayPath(p string) string {
	if Printable(p) && !strings.HasPrefix(p, `"`) {
		return p
	}
	return strconv.Quote(p)
}

// Printable reports whether s is valid UTF-8 made only of printable
// characters (and spaces).
func Printable(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// DisplayText returns free text (a snippet of a command's output, a
// prompt) safe to print on a terminal: control characters other than tab
// and invalid bytes are shown as escapes (\x1b, \r, \xff), newlines
// included, so the result is one line.
func DisplayText(s string) string {
	if Printable(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case r == '\t' || unicode.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// ShortOID is a commit or tree id as a person is shown it: its first 12
// hex digits.
func ShortOID(oid string) string {
	if len(oid) > 12 {
		return oid[:12]
	}
	return oid
}
