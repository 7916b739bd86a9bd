package search

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/session/jsonl"
	"github.com/yolop-dev/yolop/internal/timeline"
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
	ErrEmptyQuery = errors.New("search: empty query")
	// ErrQueryTooLong is returned for a query over MaxQuery bytes.
	ErrQueryTooLong = errors.New("search: query too long")
	// ErrBadRegex is returned when a --regex query does not compile.
	ErrBadRegex = errors.New("search: bad regular expression")
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
	SessionID  string    `json:"session_id"`
	Checkpoint string    `json:"checkpoint"` // turn the event belongs to ("" before the first turn)
	Branch     string    `json:"branch"`     // active or abandoned
	Time       time.Time `json:"ts"`
	Snippet    string    `json:"snippet"`
	Kind       string    `json:"kind"` // prompt, assistant, tool, notice, error, path
	Seq        int64     `json:"seq,omitempty"`
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
}

// find locates the query in a decoded string.
func (m *matcher) find(s string, scratch *[]byte) (int, int, bool) {
	if m.lit != nil && m.litASCII {
		var i int
		if m.fold {
			*scratch = lowerASCII(*scratch, []byte(s))
			i = bytes.Index(*scratch, m.lit)
		} else {
			i = strings.Index(s, string(m.lit))
		}
		if i >= 0 {
			return i, i + len(m.lit), true
		}
		if !m.fold || !hasKelvinOrLongS(s) {
			return 0, 0, false
		}
	}
	loc := m.re.FindStringIndex(s)
	if loc == nil {
		return 0, 0, false
	}
	return loc[0], loc[1], true
}

func hasKelvinOrLongS(s string) bool {
	return strings.Contains(s, "\u212a") || strings.Contains(s, "\u017f")
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
	if m.fold {
		m.lit = lowerASCII(nil, m.lit)
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

// Search runs a search over every session of o.DataDir (or of o.Repo).
func Search(o Options) (*Result, error) {
	m, err := compile(o.Query, o.Regex)
	if err != nil {
		return nil, err
	}
	dirs, err := sessionDirs(o.DataDir)
	if err != nil {
		return nil, err
	}
	res := &Result{Query: o.Query, Hits: []Hit{}}
	type out struct {
		hits    []Hit
		problem string
		skipped bool
	}
	outs := make([]out, len(dirs))
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < max(1, min(runtime.GOMAXPROCS(0), len(dirs))); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var bufs buffers
			for i := range next {
				hits, problem, skipped := searchSession(dirs[i], o, m, &bufs)
				outs[i] = out{hits, problem, skipped}
			}
		}()
	}
	for i := range dirs {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, r := range outs {
		if r.skipped {
			continue
		}
		res.Sessions++
		res.Hits = append(res.Hits, r.hits...)
		if r.problem != "" {
			res.Problems = append(res.Problems, r.problem)
		}
	}
	slices.SortFunc(res.Hits, func(a, b Hit) int {
		if c := b.Time.Compare(a.Time); c != 0 {
			return c
		}
		if c := strings.Compare(b.SessionID, a.SessionID); c != 0 {
			return c
		}
		if a.Seq != b.Seq {
			return int(b.Seq - a.Seq)
		}
		if c := strings.Compare(a.Checkpoint, b.Checkpoint); c != 0 {
			return c
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	if o.Limit > 0 && len(res.Hits) > o.Limit {
		res.More = len(res.Hits) - o.Limit
		res.Hits = res.Hits[:o.Limit]
	}
	return res, nil
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

// buffers are a worker's reusable memory.
type buffers struct {
	read []byte
}

// readInto reads a regular file (not through a symlink) into buf.
func readInto(buf []byte, path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return buf, err
	}
	if !fi.Mode().IsRegular() {
		return buf, fmt.Errorf("%s is not a regular file", path)
	}
	buf = slices.Grow(buf[:0], int(fi.Size())+1)
	for {
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF || n == 0 && err == nil {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, 4096)
		}
	}
}

func searchSession(dir string, o Options, m *matcher, bufs *buffers) (hits []Hit, problem string, skipped bool) {
	id := filepath.Base(dir)
	var problems []string
	if o.Repo != "" {
		ws, err := readWorkspace(dir)
		if err != nil {
			// Which repository it belongs to is unknown: say so rather
			// than search it or drop it silently.
			return nil, fmt.Sprintf("%s: not searched: %s is unreadable (%v)", id, session.WorkspaceFile, err), false
		}
		if !InRepo(ws, o.Repo) {
			return nil, "", true
		}
	}
	var st *timeline.State
	state := func() *timeline.State {
		if st == nil {
			var err error
			st, err = readTimeline(dir)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				problems = append(problems, fmt.Sprintf("timeline unreadable (%v); every hit is labeled abandoned", err))
			}
			if st.ReadOnly {
				problems = append(problems, "timeline damaged ("+st.ReadOnlyReason+"); branches are labeled by its valid prefix")
			}
		}
		return st
	}
	data, err := readInto(bufs.read[:0], filepath.Join(dir, session.EventsFile))
	bufs.read = data
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		problems = append(problems, fmt.Sprintf("%s unreadable: %v", session.EventsFile, err))
	}
	if m.fold && m.needle != nil && (bytes.Contains(data, kelvin) || bytes.Contains(data, longS)) {
		fm := *m
		fm.needle = m.kNeedle
		m = &fm
	}
	var ff *foldFinder
	if m.fold && m.needle != nil {
		ff = newFoldFinder(m.needle)
		ff.reset()
	}
	var scratch []byte
	for pos := 0; pos < len(data); {
		start := pos
		if m.needle != nil {
			var at int
			if ff != nil {
				at = ff.index(data, pos)
			} else if i := bytes.Index(data[pos:], m.needle); i >= 0 {
				at = pos + i
			} else {
				at = -1
			}
			if at < 0 {
				break
			}
			if nl := bytes.LastIndexByte(data[pos:at], '\n'); nl >= 0 {
				start = pos + nl + 1
			}
		}
		end := len(data)
		if nl := bytes.IndexByte(data[start:], '\n'); nl >= 0 {
			end = start + nl
		}
		pos = end + 1
		h, ok := parseHeader(data[start:end])
		if !ok || len(h.data) == 0 {
			continue // a torn or damaged line: nothing trustworthy to show
		}
		snippet, ok := m.matchData(h.data, &scratch)
		if !ok {
			continue
		}
		active := state().InActiveRange(h.turn, h.seq)
		if o.AbandonedOnly && active {
			continue
		}
		hits = append(hits, Hit{SessionID: id, Checkpoint: h.turn, Branch: branchLabel(active), Time: h.ts.UTC(), Snippet: snippet, Kind: kindOf(h.typ), Seq: h.seq})
	}
	// Paths changed by shell commands are in no event; the timeline keeps
	// each turn's changed paths. Its bytes are prefiltered like the
	// events' before it is decoded.
	if st != nil || m.needle == nil || timelineHas(dir, m) {
		hits = append(hits, pathHits(id, state(), o, m, &scratch)...)
	}
	if len(problems) > 0 {
		problem = id + ": " + strings.Join(problems, "; ")
	}
	return hits, problem, false
}

// timelineHas reports whether the timeline's bytes hold the needle.
func timelineHas(dir string, m *matcher) bool {
	tl, err := jsonl.ReadFile(filepath.Join(dir, session.TimelineFile))
	if err != nil {
		return false
	}
	if !m.fold {
		return bytes.Contains(tl, m.needle)
	}
	f := newFoldFinder(m.needle)
	f.reset()
	return f.index(tl, 0) >= 0
}

// pathHits matches the paths each turn changed.
func pathHits(id string, s *timeline.State, o Options, m *matcher, scratch *[]byte) []Hit {
	var hits []Hit
	for _, cid := range s.Order {
		cp := s.Checkpoints[cid]
		active := s.Active(cid)
		if o.AbandonedOnly && active {
			continue
		}
		for _, p := range cp.Paths {
			if a, b, ok := m.find(p, scratch); ok {
				hits = append(hits, Hit{SessionID: id, Checkpoint: cid, Branch: branchLabel(active), Time: cp.Created.UTC(), Snippet: "changed " + cut(p, a, b), Kind: KindPath})
				break
			}
		}
	}
	return hits
}

func branchLabel(active bool) string {
	if active {
		return BranchActive
	}
	return BranchAbandoned
}

// keys whose string values are never searched: ids, names of the
// provider and model, roles, and opaque reasoning blobs.
var skipKeys = map[string]bool{
	"provider": true, "model": true, "id": true, "call_id": true, "tool_call_id": true,
	"role": true, "stop_reason": true, "signature": true, "redacted": true, "status": true, "kind": true,
}

// kindOf names the part of the history an event type holds.
func kindOf(typ string) string {
	switch typ {
	case "user.message":
		return KindPrompt
	case "assistant.message":
		return KindAssistant
	case "tool.result":
		return KindTool
	case "notice":
		return KindNotice
	case "turn.error":
		return KindError
	}
	return typ
}

// matchData matches the string values of an event's data, in document
// order, and returns the snippet of the first match.
func (m *matcher) matchData(data []byte, scratch *[]byte) (string, bool) {
	found := ""
	var visit func(key, raw []byte) bool
	depth := 0
	visit = func(key, raw []byte) bool {
		if skipKeys[string(key)] {
			return false
		}
		if m.needle != nil && !m.rawHas(raw, scratch) {
			return false
		}
		str := unescape(raw)
		if (string(key) == "arguments" || string(key) == "args") && depth < 2 && strings.HasPrefix(strings.TrimSpace(str), "{") {
			// Tool-call arguments are JSON text: match their values, not
			// their quoting. Malformed arguments are matched as text.
			depth++
			sc := &lineScanner{b: []byte(str)}
			complete := sc.value(nil, 0, visit)
			depth--
			if found != "" || complete {
				return found != ""
			}
		}
		if a, b, ok := m.find(str, scratch); ok {
			found = cut(str, a, b)
			return true
		}
		return false
	}
	sc := &lineScanner{b: data}
	sc.value(nil, 0, visit)
	return found, found != ""
}

// rawHas reports whether escaped bytes hold the prefilter needle.
func (m *matcher) rawHas(raw []byte, scratch *[]byte) bool {
	if !m.fold {
		return bytes.Contains(raw, m.needle)
	}
	*scratch = lowerASCII(*scratch, raw)
	return bytes.Contains(*scratch, m.needle)
}

// snippet sizes, in runes.
const (
	before = 30
	after  = 50
)

// cut returns the text around s[a:b] on one line, with "…" where it was
// shortened. It only looks at the bytes it keeps: tool output can be
// megabytes.
func cut(s string, a, b int) string {
	lo := a
	for n := 0; lo > 0 && n < before; n++ {
		_, size := utf8.DecodeLastRuneInString(s[:lo])
		lo -= size
	}
	match := s[a:b]
	if utf8.RuneCountInString(match) > 120 {
		end := 0
		for n := 0; n < 120; n++ {
			_, size := utf8.DecodeRuneInString(match[end:])
			end += size
		}
		match, b = match[:end]+"…", len(s)
	}
	hi := b
	for n := 0; hi < len(s) && n < after; n++ {
		_, size := utf8.DecodeRuneInString(s[hi:])
		hi += size
	}
	out := s[lo:a] + match + s[min(b, len(s)):hi]
	if lo > 0 {
		out = "…" + out
	}
	if hi < len(s) {
		out += "…"
	}
	return oneLine(out)
}

// oneLine collapses runs of white space (newlines included) to one space.
func oneLine(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f' || c == ' ' && (i == 0 || i == len(s)-1 || s[i+1] == ' ') {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}
