package search

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/session/jsonl"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// The per-hit work is kept small: a hit costs a scan of its line (strings
// are skipped eight bytes at a time), unescaping only the strings whose
// escaped bytes hold the needle into reused buffers, and a snippet cut
// straight into one arena per worker. With a limit, each worker keeps only
// the hits that can still be among the newest Limit (a heap) and cuts no
// snippet for the others; every hit is still verified, so More is exact.

// hit is a Hit while a search runs: its snippet lies in its worker's arena.
type hit struct {
	Hit
	snipOff, snipLen int
	// pos orders hits whose keys are equal (a damaged log that repeats a
	// seq): the later line first. Path hits have negative positions.
	pos int
}

// compareHits orders hits newest first: by time, then session id, then
// seq (all descending), then checkpoint and kind.
func compareHits(a, b *hit) int {
	if c := b.Time.Compare(a.Time); c != 0 {
		return c
	}
	if c := strings.Compare(b.SessionID, a.SessionID); c != 0 {
		return c
	}
	if a.Seq != b.Seq {
		if a.Seq > b.Seq {
			return -1
		}
		return 1
	}
	if c := strings.Compare(a.Checkpoint, b.Checkpoint); c != 0 {
		return c
	}
	if c := strings.Compare(a.Kind, b.Kind); c != 0 {
		return c
	}
	switch {
	case a.pos > b.pos:
		return -1
	case a.pos < b.pos:
		return 1
	}
	return 0
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
	if o.Limit > 0 {
		// Sessions written to last hold the newest hits: searched first,
		// they fill the workers' heaps early and later sessions cut no
		// snippets. Only an order of work; results do not depend on it.
		newestFirst(dirs)
	}
	type out struct {
		problem string
		skipped bool
	}
	outs := make([]out, len(dirs))
	workers := make([]*worker, max(1, min(runtime.GOMAXPROCS(0), len(dirs))))
	var wg sync.WaitGroup
	next := make(chan int)
	for i := range workers {
		w := newWorker(o, m)
		workers[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				problem, skipped := w.session(dirs[i])
				outs[i] = out{problem, skipped}
			}
		}()
	}
	for i := range dirs {
		next <- i
	}
	close(next)
	wg.Wait()

	res := &Result{Query: o.Query}
	for _, r := range outs {
		if r.skipped {
			continue
		}
		res.Sessions++
		if r.problem != "" {
			res.Problems = append(res.Problems, r.problem)
		}
	}
	total, kept := 0, 0
	for _, w := range workers {
		total += w.total
		kept += len(w.hits)
	}
	all := make([]*hit, 0, kept)
	for _, w := range workers {
		arena := string(w.arena)
		for i := range w.hits {
			h := &w.hits[i]
			h.Snippet = arena[h.snipOff : h.snipOff+h.snipLen]
			all = append(all, h)
		}
	}
	slices.SortFunc(all, compareHits)
	if o.Limit > 0 && len(all) > o.Limit {
		all = all[:o.Limit]
	}
	res.Hits = make([]Hit, len(all))
	for i, h := range all {
		res.Hits[i] = h.Hit
	}
	res.More = total - len(res.Hits)
	return res, nil
}

// newestFirst orders session directories by the modification time of
// their event logs, newest first.
func newestFirst(dirs []string) {
	type entry struct {
		dir string
		mod time.Time
	}
	es := make([]entry, len(dirs))
	for i, d := range dirs {
		es[i].dir = d
		if fi, err := os.Lstat(filepath.Join(d, session.EventsFile)); err == nil {
			es[i].mod = fi.ModTime()
		}
	}
	slices.SortStableFunc(es, func(a, b entry) int { return b.mod.Compare(a.mod) })
	for i := range es {
		dirs[i] = es[i].dir
	}
}

// worker searches sessions one after another with reused memory.
type worker struct {
	o Options
	m *matcher
	// km is m for files holding the Kelvin sign or the long s.
	km     *matcher
	ff, kf *foldFinder

	read    []byte
	low     []byte    // the candidate line's data, lowercased
	bufs    [3][]byte // unescaped strings, one per nesting level
	scratch []byte
	arena   []byte // snippets
	// hits are the kept hits: all of them without a limit, else a heap
	// of at most Limit whose root sorts last.
	hits  []hit
	total int
	names map[string]string // interned turn ids and kinds

	// the match verify found: found[a:b] is it
	found []byte
	a, b  int
}

func newWorker(o Options, m *matcher) *worker {
	w := &worker{o: o, m: m, names: map[string]string{}}
	if m.needle != nil {
		km := *m
		km.needle = m.kNeedle
		w.km = &km
		if m.fold {
			w.ff = newFoldFinder(m.needle)
			if m.kNeedle != nil {
				w.kf = newFoldFinder(m.kNeedle)
			}
		}
	}
	return w
}

// admit counts a hit and reports whether it is kept (then the caller
// cuts its snippet and calls keep).
func (w *worker) admit(h *hit) bool {
	w.total++
	return w.o.Limit == 0 || len(w.hits) < w.o.Limit || compareHits(h, &w.hits[0]) < 0
}

func (w *worker) keep(h hit) {
	if w.o.Limit == 0 {
		w.hits = append(w.hits, h)
		return
	}
	if len(w.hits) < w.o.Limit {
		w.hits = append(w.hits, h)
		for i := len(w.hits) - 1; i > 0; {
			p := (i - 1) / 2
			if compareHits(&w.hits[i], &w.hits[p]) <= 0 {
				break
			}
			w.hits[i], w.hits[p] = w.hits[p], w.hits[i]
			i = p
		}
		return
	}
	w.hits[0] = h
	for i, n := 0, len(w.hits); ; {
		worst := i
		if l := 2*i + 1; l < n && compareHits(&w.hits[l], &w.hits[worst]) > 0 {
			worst = l
		}
		if r := 2*i + 2; r < n && compareHits(&w.hits[r], &w.hits[worst]) > 0 {
			worst = r
		}
		if worst == i {
			return
		}
		w.hits[i], w.hits[worst] = w.hits[worst], w.hits[i]
		i = worst
	}
}

// cutSnippet appends the snippet of the last match to the arena.
func (w *worker) cutSnippet(h *hit, s []byte, a, b int) {
	h.snipOff = len(w.arena)
	w.arena = appendSnippet(w.arena, s, a, b)
	h.snipLen = len(w.arena) - h.snipOff
}

// intern returns b as a string, one allocation per distinct value.
func (w *worker) intern(b []byte) string {
	if s, ok := w.names[string(b)]; ok {
		return s
	}
	s := string(b)
	w.names[s] = s
	return s
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

// session searches one session directory.
func (w *worker) session(dir string) (problem string, skipped bool) {
	o := w.o
	id := filepath.Base(dir)
	var problems []string
	if o.Repo != "" {
		ws, err := readWorkspace(dir)
		if err != nil {
			// Which repository it belongs to is unknown: say so rather
			// than search it or drop it silently.
			return fmt.Sprintf("%s: not searched: %s is unreadable (%v)", id, session.WorkspaceFile, err), false
		}
		if !InRepo(ws, o.Repo) {
			return "", true
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
	data, err := readInto(w.read[:0], filepath.Join(dir, session.EventsFile))
	w.read = data
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		problems = append(problems, fmt.Sprintf("%s unreadable: %v", session.EventsFile, err))
	}
	m, ff := w.m, w.ff
	if m.fold && m.needle != nil && (bytes.Contains(data, kelvin) || bytes.Contains(data, longS)) {
		m, ff = w.km, w.kf
	}
	if ff != nil {
		ff.reset()
	}
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
		hd, ok := parseHeader(data[start:end])
		if !ok || len(hd.data) == 0 {
			continue // a torn or damaged line: nothing trustworthy to show
		}
		if !w.verify(m, hd.data) {
			continue
		}
		h := hit{Hit: Hit{SessionID: id, Kind: w.kindOf(hd), Seq: hd.seq, Time: hd.time()}, pos: start}
		if hd.turnEsc {
			h.Checkpoint = unescape(hd.turn)
		} else {
			h.Checkpoint = w.intern(hd.turn)
		}
		active := state().InActiveRange(h.Checkpoint, h.Seq)
		if o.AbandonedOnly && active {
			continue
		}
		if !w.admit(&h) {
			continue
		}
		h.Branch = branchLabel(active)
		w.cutSnippet(&h, w.found, w.a, w.b)
		w.keep(h)
	}
	// Paths changed by shell commands are in no event; the timeline keeps
	// each turn's changed paths. Its bytes are prefiltered like the
	// events' before it is decoded.
	if st != nil || m.needle == nil || timelineHas(dir, m) {
		w.pathHits(id, state(), m)
	}
	if len(problems) > 0 {
		problem = id + ": " + strings.Join(problems, "; ")
	}
	return problem, false
}

// kindOf names the part of the history an event type holds.
func (w *worker) kindOf(hd header) string {
	if !hd.typEsc {
		switch string(hd.typ) {
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
		return w.intern(hd.typ)
	}
	return kindOf(unescape(hd.typ))
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
func (w *worker) pathHits(id string, s *timeline.State, m *matcher) {
	n := 0
	for _, cid := range s.Order {
		cp := s.Checkpoints[cid]
		active := s.Active(cid)
		if w.o.AbandonedOnly && active {
			continue
		}
		for _, p := range cp.Paths {
			w.bufs[0] = append(w.bufs[0][:0], p...)
			a, b, ok := m.find(w.bufs[0], &w.scratch)
			if !ok {
				continue
			}
			n++
			h := hit{Hit: Hit{SessionID: id, Checkpoint: cid, Branch: branchLabel(active), Time: cp.Created.UTC(), Kind: KindPath}, pos: -n}
			if w.admit(&h) {
				h.snipOff = len(w.arena)
				w.arena = append(w.arena, "changed "...)
				w.arena = appendSnippet(w.arena, w.bufs[0], a, b)
				h.snipLen = len(w.arena) - h.snipOff
				w.keep(h)
			}
			break
		}
	}
}

func branchLabel(active bool) string {
	if active {
		return BranchActive
	}
	return BranchAbandoned
}

// skipKey reports whether a key's string values are never searched: ids,
// names of the provider and model, roles, and opaque reasoning blobs.
func skipKey(k []byte) bool {
	switch string(k) {
	case "provider", "model", "id", "call_id", "tool_call_id",
		"role", "stop_reason", "signature", "redacted", "status", "kind":
		return true
	}
	return false
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

// verify matches the string values of an event's data, in document order,
// and leaves the first match in w.found[w.a:w.b].
func (w *worker) verify(m *matcher, data []byte) bool {
	w.found = nil
	var low []byte
	if m.fold && m.needle != nil {
		w.low = lowerASCII(w.low, data)
		low = w.low
	}
	s := lineScanner{b: data}
	w.value(m, &s, low, nil, 0, 0)
	return w.found != nil
}

// value reads one value at s.pos, matching its string values (with the key
// of the innermost object member; array elements keep it). low is s.b
// lowercased, or nil. It returns false on malformed input or a match.
func (w *worker) value(m *matcher, s *lineScanner, low, key []byte, depth, nest int) bool {
	if depth > 64 {
		return false
	}
	s.ws()
	if s.pos >= len(s.b) {
		return false
	}
	switch s.b[s.pos] {
	case '"':
		start := s.pos + 1
		raw, esc, ok := s.strEsc()
		if !ok {
			return false
		}
		return w.match(m, raw, esc, start, low, key, nest)
	case '{':
		s.pos++
		s.ws()
		if s.pos < len(s.b) && s.b[s.pos] == '}' {
			s.pos++
			return true
		}
		for {
			s.ws()
			k, esc, ok := s.strEsc()
			if !ok {
				return false
			}
			if esc {
				k = []byte(unescape(k))
			}
			s.ws()
			if s.pos >= len(s.b) || s.b[s.pos] != ':' {
				return false
			}
			s.pos++
			if !w.value(m, s, low, k, depth+1, nest) {
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
			if !w.value(m, s, low, key, depth+1, nest) {
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

// match matches one string value whose escaped contents raw start at
// offset start of the scanned text. It returns false on a match.
func (w *worker) match(m *matcher, raw []byte, esc bool, start int, low, key []byte, nest int) bool {
	if skipKey(key) {
		return true
	}
	if m.needle != nil {
		if low != nil {
			if !bytes.Contains(low[start:start+len(raw)], m.needle) {
				return true
			}
		} else if m.fold {
			w.scratch = lowerASCII(w.scratch, raw)
			if !bytes.Contains(w.scratch, m.needle) {
				return true
			}
		} else if !bytes.Contains(raw, m.needle) {
			return true
		}
	}
	str := raw
	if esc {
		w.bufs[nest] = appendUnescaped(w.bufs[nest][:0], raw)
		str = w.bufs[nest]
	} else if !utf8.Valid(raw) {
		w.bufs[nest] = appendValidUTF8(w.bufs[nest][:0], raw)
		str = w.bufs[nest]
	}
	if (string(key) == "arguments" || string(key) == "args") && nest < 2 && bytes.HasPrefix(bytes.TrimSpace(str), []byte("{")) {
		// Tool-call arguments are JSON text: match their values, not
		// their quoting. Malformed arguments are matched as text.
		sc := lineScanner{b: str}
		complete := w.value(m, &sc, nil, nil, 0, nest+1)
		if w.found != nil {
			return false
		}
		if complete {
			return true
		}
	}
	if a, b, ok := m.find(str, &w.scratch); ok {
		w.found, w.a, w.b = str, a, b
		return false
	}
	return true
}
