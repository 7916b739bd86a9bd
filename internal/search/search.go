package search

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"runtime"
	"slices"
	"strings"
	"sync"
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
	fold   bool
}

func (m *matcher) find(s string) (int, int, bool) {
	loc := m.re.FindStringIndex(s)
	if loc == nil {
		return 0, 0, false
	}
	return loc[0], loc[1], true
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
	m.needle = prefilterNeedle(q, m.fold)
	return m, nil
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
// fold), or nil when there is none. ASCII letters that fold to non-ASCII
// (k to the Kelvin sign, s to the long s) end a run too.
func prefilterNeedle(q string, fold bool) []byte {
	best, start := "", -1
	flush := func(end int) {
		if start >= 0 && end-start > len(best) {
			best = q[start:end]
		}
		start = -1
	}
	for i, r := range q {
		ok := selfEscaping(r, fold)
		if fold && (r == 'k' || r == 'K' || r == 's' || r == 'S') {
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

// lowerASCII writes src lowercased (ASCII only) into dst's storage.
func lowerASCII(dst, src []byte) []byte {
	dst = slices.Grow(dst[:0], len(src))[:len(src)]
	for i, c := range src {
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
			var buf []byte
			for i := range next {
				hits, problem, skipped, b := searchSession(dirs[i], o, m, buf)
				buf = b
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
	slices.SortStableFunc(res.Hits, func(a, b Hit) int {
		if c := b.Time.Compare(a.Time); c != 0 {
			return c
		}
		if c := strings.Compare(b.SessionID, a.SessionID); c != 0 {
			return c
		}
		return int(b.Seq - a.Seq)
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

// sessionEvent is the part of an event line search reads.
type sessionEvent struct {
	Seq  int64           `json:"seq"`
	Type string          `json:"type"`
	Time time.Time       `json:"ts"`
	Turn string          `json:"turn"`
	Data json.RawMessage `json:"data"`
}

func searchSession(dir string, o Options, m *matcher, buf []byte) (hits []Hit, problem string, skipped bool, _ []byte) {
	id := filepath.Base(dir)
	var problems []string
	if o.Repo != "" {
		ws, err := readWorkspace(dir)
		if err != nil {
			// Which repository it belongs to is unknown: say so rather
			// than search it or drop it silently.
			return nil, fmt.Sprintf("%s: not searched: %s is unreadable (%v)", id, session.WorkspaceFile, err), false, buf
		}
		if !InRepo(ws, o.Repo) {
			return nil, "", true, buf
		}
	}
	var st *timeline.State
	state := func() *timeline.State {
		if st == nil {
			recs, err := timeline.ReadRecords(filepath.Join(dir, session.TimelineFile))
			if err != nil {
				problems = append(problems, fmt.Sprintf("timeline unreadable (%v); every hit is labeled abandoned", err))
			}
			st = timeline.Build(recs)
			if st.ReadOnly {
				problems = append(problems, "timeline damaged ("+st.ReadOnlyReason+"); branches are labeled by its valid prefix")
			}
		}
		return st
	}
	branch := func(active bool) string {
		if active {
			return BranchActive
		}
		return BranchAbandoned
	}
	data, err := jsonl.ReadFile(filepath.Join(dir, session.EventsFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		problems = append(problems, fmt.Sprintf("%s unreadable: %v", session.EventsFile, err))
	}
	hay := data
	if m.fold && m.needle != nil {
		buf = lowerASCII(buf, data)
		hay = buf
	}
	for pos := 0; pos < len(data); {
		var start int
		if m.needle != nil {
			i := bytes.Index(hay[pos:], m.needle)
			if i < 0 {
				break
			}
			start = pos + i
			if nl := bytes.LastIndexByte(data[pos:start], '\n'); nl >= 0 {
				start = pos + nl + 1
			} else {
				start = pos
			}
		} else {
			start = pos
		}
		end := len(data)
		if nl := bytes.IndexByte(data[start:], '\n'); nl >= 0 {
			end = start + nl
		}
		pos = end + 1
		var ev sessionEvent
		if json.Unmarshal(data[start:end], &ev) != nil || ev.Seq <= 0 {
			continue // a torn or damaged line: nothing trustworthy to show
		}
		kind, snippet, ok := matchEvent(ev, m)
		if !ok {
			continue
		}
		active := state().InActiveRange(ev.Turn, ev.Seq)
		if o.AbandonedOnly && active {
			continue
		}
		hits = append(hits, Hit{SessionID: id, Checkpoint: ev.Turn, Branch: branch(active), Time: ev.Time.UTC(), Snippet: snippet, Kind: kind, Seq: ev.Seq})
	}
	// Paths changed by shell commands are in no event; the timeline keeps
	// each turn's changed paths.
	s := state()
	for _, cid := range s.Order {
		cp := s.Checkpoints[cid]
		for _, p := range cp.Paths {
			if a, b, ok := m.find(p); ok {
				active := s.Active(cid)
				if o.AbandonedOnly && active {
					break
				}
				when := cp.Created
				hits = append(hits, Hit{SessionID: id, Checkpoint: cid, Branch: branch(active), Time: when.UTC(), Snippet: "changed " + cut(p, a, b), Kind: KindPath})
				break
			}
		}
	}
	if len(problems) > 0 {
		problem = id + ": " + strings.Join(problems, "; ")
	}
	return hits, problem, false, buf
}

// keys whose string values are never searched: ids, names of the
// provider and model, roles, and opaque reasoning blobs.
var skipKeys = map[string]bool{
	"provider": true, "model": true, "id": true, "call_id": true, "tool_call_id": true,
	"role": true, "stop_reason": true, "signature": true, "redacted": true, "status": true, "kind": true,
}

// matchEvent matches the decoded text fields of an event.
func matchEvent(ev sessionEvent, m *matcher) (kind, snippet string, ok bool) {
	switch ev.Type {
	case "user.message":
		kind = KindPrompt
	case "assistant.message":
		kind = KindAssistant
	case "tool.result":
		kind = KindTool
	case "notice":
		kind = KindNotice
	case "turn.error":
		kind = KindError
	default:
		kind = ev.Type
	}
	if len(ev.Data) == 0 {
		return "", "", false
	}
	var v any
	if json.Unmarshal(ev.Data, &v) != nil {
		return "", "", false
	}
	found := ""
	var walk func(key string, v any, depth int) bool
	walk = func(key string, v any, depth int) bool {
		if depth > 32 {
			return false
		}
		switch x := v.(type) {
		case string:
			if skipKeys[key] {
				return false
			}
			if key == "arguments" || key == "args" {
				// Tool-call arguments are JSON text: match their values,
				// not their quoting.
				var args any
				if json.Unmarshal([]byte(x), &args) == nil {
					if _, isObj := args.(map[string]any); isObj {
						return walk("", args, depth+1)
					}
				}
			}
			if a, b, ok := m.find(x); ok {
				found = cut(x, a, b)
				if key == "name" && kind == KindAssistant {
					found = "tool call: " + found
				}
				return true
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			// Text before tool calls before anything else, for a stable,
			// readable snippet.
			slices.SortFunc(keys, func(a, b string) int {
				if d := keyRank(a) - keyRank(b); d != 0 {
					return d
				}
				return strings.Compare(a, b)
			})
			for _, k := range keys {
				if walk(k, x[k], depth+1) {
					return true
				}
			}
		case []any:
			for _, e := range x {
				if walk(key, e, depth+1) {
					return true
				}
			}
		}
		return false
	}
	if !walk("", v, 0) {
		return "", "", false
	}
	return kind, found, true
}

func keyRank(k string) int {
	switch k {
	case "text":
		return 0
	case "message":
		return 1
	case "content":
		return 2
	case "tool_calls":
		return 3
	}
	return 4
}

// snippet sizes, in runes.
const (
	before = 30
	after  = 50
)

// cut returns the text around s[a:b] on one line, with "…" where it was
// shortened.
func cut(s string, a, b int) string {
	pre, match, post := []rune(s[:a]), s[a:b], []rune(s[b:])
	lead, trail := "", ""
	if len(pre) > before {
		pre, lead = pre[len(pre)-before:], "…"
	}
	if len(post) > after {
		post, trail = post[:after], "…"
	}
	if r := []rune(match); len(r) > 120 {
		match = string(r[:120]) + "…"
		post, trail = nil, ""
	}
	return oneLine(lead + string(pre) + match + string(post) + trail)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
