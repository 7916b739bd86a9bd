package search

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/session/jsonl"
)

// MaxQuery is the longest query accepted, in bytes.
const MaxQuery = 1024

// Branch labels.
const (
	BranchActive    = "active"
	BranchAbandoned = "abandoned"
)

// Hit kinds: which part of the history matched.
const (
	KindPrompt    = "prompt"
	KindAssistant = "assistant"
	KindTool      = "tool"
	KindNotice    = "notice"
	KindError     = "error"
	KindPath      = "path"
)

var (
	// ErrEmptyQuery is returned for a query with nothing to search for.
	ErrEmptyQuery = fault.Plain("search: empty query")
	// ErrQueryTooLong is returned for a query over MaxQuery bytes.
	ErrQueryTooLong = fault.Plain("search: query too long")
	// ErrBadRegex is returned when a --regex query does not compile.
	ErrBadRegex = fault.Plain("search: bad regular expression")
)

// Options select what to search.
type Options struct {
	DataDir string
	Query   string
	// Regex makes Query an RE2 regular expression; otherwise it is plain
	// text (metacharacters match themselves).
	Regex bool
	// Repo limits the search to sessions started from this repository root
	// (or, outside a repository, from this directory); "" searches all.
	Repo string
	// AbandonedOnly keeps only hits on abandoned branches.
	AbandonedOnly bool
	// Limit caps the hits returned (newest first); 0 returns all.
	Limit int
}

// Hit is one matching event (or changed path) of one session.
type Hit struct {
	SessionID  string `json:"session_id"`
	Checkpoint string `json:"checkpoint"` // turn the event belongs to ("" before the first turn)
	Branch     string `json:"branch"`     // active or abandoned
	// BranchID is the id of the branch the hit lies on ("b3", as
	// /branches lists it): for an abandoned hit, the branch to switch to;
	// "" when no listed branch holds it.
	BranchID string    `json:"branch_id,omitempty"`
	Time     time.Time `json:"ts"`
	Snippet  string    `json:"snippet"`
	Kind     string    `json:"kind"` // prompt, assistant, tool, notice, error, path
	Seq      int64     `json:"seq,omitempty"`
}

// Result is a search's answer.
type Result struct {
	Query string `json:"query"`
	Hits  []Hit  `json:"hits"`
	// More counts hits beyond Limit.
	More int `json:"more,omitempty"`
	// Sessions is the number of sessions searched.
	Sessions int `json:"sessions"`
	// Problems lists sessions that could only be searched in part (or not
	// at all) and why.
	Problems []string `json:"problems,omitempty"`
}

// matcher verifies a decoded string and locates the match.
type matcher struct {
	re *regexp.Regexp
	// needle is the prefilter (lowercased when fold); nil = every line.
	needle []byte
	// kNeedle is the needle to use in a file holding the Kelvin sign or
	// the long s, which fold to k and s but are not ASCII.
	kNeedle []byte
	fold    bool
	// lit is the plain query (lowercased when fold); nil for a regex.
	lit []byte
	// litASCII says lit is ASCII, so ASCII lowercasing finds it.
	litASCII bool
	// needleFinder and litFinder find needle and lit ignoring case
	// (when fold and they are ASCII).
	needleFinder, litFinder *foldFinder
	// litKS says lit has a k or an s, the letters the Kelvin sign and the
	// long s fold to; without one, neither rune can be part of a match.
	litKS bool
	// needleKS says the same of needle: without one, kNeedle is needle
	// and files need not be checked for those runes.
	needleKS bool
}

// find locates the first match of the query in a decoded string.
func (m *matcher) find(s []byte) (int, int, bool) {
	if m.lit != nil && m.litASCII {
		var i int
		if m.fold {
			i = m.litFinder.first(s)
		} else {
			i = bytes.Index(s, m.lit)
		}
		// The Kelvin sign and the long s fold to k and s: where they are,
		// only the regular expression finds the first match.
		if !m.fold || !m.litKS || !hasKelvinOrLongS(s) {
			if i < 0 {
				return 0, 0, false
			}
			return i, i + len(m.lit), true
		}
	}
	loc := m.re.FindIndex(s)
	if loc == nil {
		return 0, 0, false
	}
	return loc[0], loc[1], true
}

func hasKelvinOrLongS(s []byte) bool {
	return bytes.Contains(s, kelvin) || bytes.Contains(s, longS)
}

// compile checks the query and builds its matcher.
func compile(q string, isRegex bool) (*matcher, error) {
	if strings.TrimSpace(q) == "" {
		return nil, fmt.Errorf("%w: give the text to look for, e.g. yolop sessions search 'parser'", ErrEmptyQuery)
	}
	if len(q) > MaxQuery {
		return nil, fmt.Errorf("%w: the query is %d bytes, the limit is %d; search for a shorter, distinctive part of it", ErrQueryTooLong, len(q), MaxQuery)
	}
	if !utf8.ValidString(q) {
		return nil, fmt.Errorf("%w: the query is not valid UTF-8", ErrEmptyQuery)
	}
	m := &matcher{}
	if isRegex {
		parsed, err := syntax.Parse(q, syntax.Perl)
		if err != nil {
			return nil, fmt.Errorf("%w: %v (without --regex the query is plain text)", ErrBadRegex, err)
		}
		m.fold = !regexHasUpper(parsed)
		pat := q
		if m.fold {
			pat = "(?i)" + q
		}
		re, err := regexp.Compile(pat)
		if err != nil {
			return nil, fmt.Errorf("%w: %v (without --regex the query is plain text)", ErrBadRegex, err)
		}
		m.re = re
		return m, nil
	}
	m.fold = !hasUpper(q)
	pat := regexp.QuoteMeta(q)
	if m.fold {
		pat = "(?i)" + pat
	}
	m.re = regexp.MustCompile(pat)
	m.needle = prefilterNeedle(q, m.fold, false)
	m.kNeedle = prefilterNeedle(q, m.fold, true)
	m.lit, m.litASCII = []byte(q), isASCII(q)
	m.litKS = bytes.ContainsAny(m.lit, "kKsS")
	m.needleKS = bytes.ContainsAny(m.needle, "kKsS")
	if m.fold {
		m.lit = lowerASCII(nil, m.lit)
		if m.litASCII {
			m.litFinder = newFoldFinder(m.lit)
		}
		if m.needle != nil {
			m.needleFinder = newFoldFinder(m.needle)
		}
	}
	return m, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func hasUpper(s string) bool {
	for _, r := range s {
		if unicode.IsUpper(r) {
			return true
		}
	}
	return false
}

// regexHasUpper reports whether a literal of the pattern has an upper-case
// letter (escapes like \W are not literals).
func regexHasUpper(re *syntax.Regexp) bool {
	if re.Op == syntax.OpLiteral || re.Op == syntax.OpCharClass {
		for _, r := range re.Rune {
			if unicode.IsUpper(r) {
				return true
			}
		}
		if re.Op == syntax.OpLiteral {
			return false
		}
	}
	for _, sub := range re.Sub {
		if regexHasUpper(sub) {
			return true
		}
	}
	return false
}

// selfEscaping reports whether encoding/json writes r as itself at every
// nesting level, and (when folding) whether ASCII lowercasing folds it.
func selfEscaping(r rune, fold bool) bool {
	switch {
	case r == '"' || r == '\\' || r == '<' || r == '>' || r == '&':
		return false
	case r >= 0x20 && r < 0x7f:
		return true
	case r < 0x20 || r == 0x7f || r == utf8.RuneError || r == '\u2028' || r == '\u2029':
		return false
	}
	// Other UTF-8 is written raw; ASCII lowercasing cannot fold it, so it
	// is only usable when case matters.
	return !fold
}

// prefilterNeedle returns the longest run of q that appears verbatim in the
// escaped file whenever q appears in a decoded field (lowercased when
// fold), or nil when there is none. With kelvin, the letters that also
// fold to non-ASCII runes (k to the Kelvin sign, s to the long s) end a
// run too: that needle is used for files that hold either rune.
func prefilterNeedle(q string, fold, kelvin bool) []byte {
	best, start := "", -1
	flush := func(end int) {
		if start >= 0 && end-start > len(best) {
			best = q[start:end]
		}
		start = -1
	}
	for i, r := range q {
		ok := selfEscaping(r, fold)
		if fold && kelvin && (r == 'k' || r == 'K' || r == 's' || r == 'S') {
			ok = false
		}
		if !ok {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
		}
	}
	flush(len(q))
	if best == "" {
		return nil
	}
	if fold {
		return lowerASCII(nil, []byte(best))
	}
	return []byte(best)
}

// lowerASCII writes src lowercased (ASCII only) into dst's storage. It
// works eight bytes at a time: the case-insensitive prefilter lowercases
// every byte of every log, and a byte loop was most of its cost.
func lowerASCII(dst, src []byte) []byte {
	dst = slices.Grow(dst[:0], len(src))[:len(src)]
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(src); i += 8 {
		x := binary.LittleEndian.Uint64(src[i:])
		h := x &^ high // low seven bits of each byte
		geA := h + ones*(0x80-'A')
		gtZ := h + ones*(0x80-'Z'-1)
		upper := geA &^ gtZ &^ x & high // 'A'..'Z', and not a byte >= 0x80
		binary.LittleEndian.PutUint64(dst[i:], x|upper>>2)
	}
	for ; i < len(src); i++ {
		c := src[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst[i] = c
	}
	return dst
}

// sessionDirs lists the session directories (ids that look like sessions).
func sessionDirs(dataDir string) ([]string, error) {
	parent := session.SessionsDir(dataDir)
	entries, err := os.ReadDir(parent)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, filepath.Join(parent, e.Name()))
		}
	}
	return out, nil
}

// InRepo reports whether a session belongs to root: started from that
// repository, or from that directory outside any repository.
func InRepo(ws session.Workspace, root string) bool {
	return ws.RepoRoot == root || (ws.RepoRoot == "" && ws.ActiveRoot == root)
}

var (
	kelvin = []byte("\u212a")
	longS  = []byte("\u017f")
)

// readWorkspace decodes workspace.json without the session package's
// checks (a search must read damaged sessions too).
func readWorkspace(dir string) (session.Workspace, error) {
	var ws session.Workspace
	b, err := jsonl.ReadFile(filepath.Join(dir, session.WorkspaceFile))
	if err != nil {
		return ws, err
	}
	return ws, json.Unmarshal(b, &ws)
}
