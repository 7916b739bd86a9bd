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
	"github.com/yolop-dev/yolop/internal/timeline"
)

// The per-hit work is kept small: a hit costs a scan of its line (strings
// are skipped eight bytes at a time), unescaping only the strings whose
// escaped bytes hold the needle into reused buffers, and a snippet cut
// straight into one arena per worker. With a limit, each worker keeps only
// the hits that can still be among the newest Limit (a heap) and cuts no
// snippet for the others; every hit is still verified, so More is exact.

// hit is a Hit while a search runs. It holds no pointers, so the garbage
// collector neither scans the hundreds of thousands a search can find nor
// slows their writes: strings are indexes into its worker's table and the
// snippet lies in the worker's arena.
type hit struct {
	sec              int64 // time, Unix
	nsec             int32
	worker           int32
	session          int32 // index in the sorted session list
	checkpoint, kind int32 // indexes in the worker's names
	active           bool
	// branch is 1 + the index in the worker's names of the branch id the
	// hit lies on; 0 when no branch holds it.
	branch int32
	seq    int64
	// pos orders hits whose keys are equal (a damaged log that repeats a
	// seq): the later line first. Path hits have negative positions.
	pos              int64
	snipChunk        int32
	snipOff, snipLen int32
}

// Snippet chunks: a snippet is at most about 1 KB (80 runes of context, a
// match cut at 120 runes), so one always fits in the room left.
const (
	chunkSize = 1 << 20
	chunkRoom = 4 << 10
)

// snippetStart makes room for a snippet in the current chunk and records
// in h where it starts; snippetEnd records its length.
func (w *worker) snippetStart(h *hit) {
	if cap(w.arena)-len(w.arena) < chunkRoom {
		if w.arena != nil {
			w.chunks = append(w.chunks, w.arena)
		}
		w.arena = make([]byte, 0, chunkSize)
	}
	h.snipChunk, h.snipOff = int32(len(w.chunks)), int32(len(w.arena))
}

func (w *worker) snippetEnd(h *hit) {
	h.snipLen = int32(len(w.arena)) - h.snipOff
}

// search is one search's shared state.
type search struct {
	o       Options
	m       *matcher
	ids     []string // session ids, sorted
	workers []*worker
}

// compare orders hits newest first: by time, then session id, then seq
// (all descending), then checkpoint and kind.
func (sr *search) compare(a, b *hit) int {
	switch {
	case a.sec != b.sec:
		if a.sec > b.sec {
			return -1
		}
		return 1
	case a.nsec != b.nsec:
		if a.nsec > b.nsec {
			return -1
		}
		return 1
	case a.session != b.session:
		if a.session > b.session {
			return -1
		}
		return 1
	case a.seq != b.seq:
		if a.seq > b.seq {
			return -1
		}
		return 1
	}
	wa, wb := sr.workers[a.worker], sr.workers[b.worker]
	if c := strings.Compare(wa.strs[a.checkpoint], wb.strs[b.checkpoint]); c != 0 {
		return c
	}
	if c := strings.Compare(wa.strs[a.kind], wb.strs[b.kind]); c != 0 {
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
	sr := &search{o: o, m: m, ids: make([]string, len(dirs))}
	for i, d := range dirs {
		sr.ids[i] = filepath.Base(d)
	}
	order := make([]int, len(dirs))
	for i := range order {
		order[i] = i
	}
	if o.Limit > 0 {
		// Sessions written to last hold the newest hits: searched first,
		// they fill the workers' heaps early and later sessions cut no
		// snippets. Only an order of work; results do not depend on it.
		newestFirst(dirs, order)
	}
	type out struct {
		problem string
		skipped bool
	}
	outs := make([]out, len(dirs))
	sr.workers = make([]*worker, max(1, min(runtime.GOMAXPROCS(0), len(dirs))))
	for i := range sr.workers {
		sr.workers[i] = newWorker(sr, i)
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for _, w := range sr.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				problem, skipped := w.session(dirs[i], i)
				outs[i] = out{problem, skipped}
			}
		}()
	}
	for _, i := range order {
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
	for _, w := range sr.workers {
		total += w.total
		w.full = append(w.full, w.hits)
		for _, c := range w.full {
			kept += len(c)
		}
	}
	// Placed by session, newest id first, and within a session last line
	// first: when sessions do not overlap in time and a log's times grow,
	// that is already the order, and the sort only checks it.
	end := make([]int, len(dirs))
	for _, w := range sr.workers {
		for _, c := range w.full {
			for j := range c {
				end[c[j].session]++
			}
		}
	}
	for i, acc := len(end)-1, 0; i >= 0; i-- {
		acc += end[i]
		end[i] = acc
	}
	all := make([]*hit, kept)
	chunks := make([][]string, len(sr.workers))
	for i, w := range sr.workers {
		for _, c := range w.full {
			for j := range c {
				h := &c[j]
				end[h.session]--
				all[end[h.session]] = h
			}
		}
		for _, c := range append(w.chunks, w.arena) {
			chunks[i] = append(chunks[i], string(c))
		}
		w.chunks, w.arena, w.full, w.hits = nil, nil, nil, nil
	}
	slices.SortFunc(all, sr.compare)
	if o.Limit > 0 && len(all) > o.Limit {
		all = all[:o.Limit]
	}
	res.Hits = make([]Hit, len(all))
	for i, h := range all {
		w := sr.workers[h.worker]
		res.Hits[i] = Hit{
			SessionID:  sr.ids[h.session],
			Checkpoint: w.strs[h.checkpoint],
			Branch:     branchLabel(h.active),
			BranchID:   branchID(w.strs, h.branch),
			Time:       time.Unix(h.sec, int64(h.nsec)).UTC().Truncate(time.Millisecond), // milliseconds, like every time yolop prints
			Snippet:    chunks[h.worker][h.snipChunk][h.snipOff : h.snipOff+h.snipLen],
			Kind:       w.strs[h.kind],
			Seq:        h.seq,
		}
	}
	res.More = total - len(res.Hits)
	return res, nil
}

// newestFirst orders the session indexes by the modification time of
// their event logs, newest first.
func newestFirst(dirs []string, order []int) {
	mod := make([]time.Time, len(dirs))
	for i, d := range dirs {
		if fi, err := os.Lstat(filepath.Join(d, session.EventsFile)); err == nil {
			mod[i] = fi.ModTime()
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return mod[b].Compare(mod[a]) })
}

// worker searches sessions one after another with reused memory.
type worker struct {
	sr *search
	id int32
	o  Options
	m  *matcher
	// km is m for files holding the Kelvin sign or the long s.
	km     *matcher
	ff, kf *foldFinder

	read []byte
	tl   []byte
	recs []timeline.Record
	bufs [3][]byte // unescaped strings, one per nesting level
	// snippets are written into chunks that are never reallocated (a
	// growing arena was copied again and again): arena is the current one.
	arena  []byte
	chunks [][]byte
	// hits are the kept hits: all of them without a limit, else a heap
	// of at most Limit whose root sorts last.
	hits []hit
	// full are the filled chunks of hits without a limit (a growing
	// slice was copied again and again).
	full  [][]hit
	total int
	// strs are the turn ids and kinds seen, names indexes them.
	strs  []string
	names map[string]int32

	// the match verify found: found[a:b] is it
	found []byte
	a, b  int
	// first is where the line's first needle is in the data verified
	first int
}

// needleState is what is known of a string holding the needle.
type needleState int8

const (
	needleUnknown needleState = iota
	needleAbsent
	needlePresent
)

func newWorker(sr *search, id int) *worker {
	m := sr.m
	w := &worker{sr: sr, id: int32(id), o: sr.o, m: m, names: map[string]int32{}}
	if m.needle != nil {
		km := *m
		km.needle = m.kNeedle
		km.needleFinder = nil
		if m.fold && km.needle != nil {
			km.needleFinder = newFoldFinder(km.needle)
		}
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
	return w.o.Limit == 0 || len(w.hits) < w.o.Limit || w.sr.compare(h, &w.hits[0]) < 0
}

func (w *worker) keep(h hit) {
	if w.o.Limit == 0 {
		if len(w.hits) == cap(w.hits) {
			if w.hits != nil {
				w.full = append(w.full, w.hits)
			}
			w.hits = make([]hit, 0, 8192)
		}
		w.hits = append(w.hits, h)
		return
	}
	cmp := w.sr.compare
	if len(w.hits) < w.o.Limit {
		w.hits = append(w.hits, h)
		for i := len(w.hits) - 1; i > 0; {
			p := (i - 1) / 2
			if cmp(&w.hits[i], &w.hits[p]) <= 0 {
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
		if l := 2*i + 1; l < n && cmp(&w.hits[l], &w.hits[worst]) > 0 {
			worst = l
		}
		if r := 2*i + 2; r < n && cmp(&w.hits[r], &w.hits[worst]) > 0 {
			worst = r
		}
		if worst == i {
			return
		}
		w.hits[i], w.hits[worst] = w.hits[worst], w.hits[i]
		i = worst
	}
}

// intern returns the index of b in w.strs, adding it when new.
func (w *worker) intern(b []byte) int32 {
	if i, ok := w.names[string(b)]; ok {
		return i
	}
	return w.internString(string(b))
}

func (w *worker) internString(s string) int32 {
	if i, ok := w.names[s]; ok {
		return i
	}
	i := int32(len(w.strs))
	w.strs = append(w.strs, s)
	w.names[s] = i
	return i
}

func setTime(h *hit, t time.Time) {
	h.sec, h.nsec = t.Unix(), int32(t.Nanosecond())
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
func (w *worker) session(dir string, index int) (problem string, skipped bool) {
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
	// The timeline is read once, when a hit needs its label or the
	// prefilter its bytes.
	tlPath := filepath.Join(dir, session.TimelineFile)
	var (
		tl     []byte
		tlErr  error
		tlRead bool
	)
	timelineData := func() ([]byte, error) {
		if !tlRead {
			tl, tlErr = readInto(w.tl[:0], tlPath)
			w.tl, tlRead = tl, true
		}
		return tl, tlErr
	}
	var st *timeline.State
	var branches branchNamer
	state := func() *timeline.State {
		if st == nil {
			var err error
			d, rerr := timelineData()
			st, err = decodeTimeline(tlPath, d, rerr, &w.recs)
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
	if m.fold && m.needleKS && (bytes.Contains(data, kelvin) || bytes.Contains(data, longS)) {
		m, ff = w.km, w.kf
	}
	if ff != nil {
		ff.reset()
	}
	for pos := 0; pos < len(data); {
		start, at := pos, -1
		if m.needle != nil {
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
		// The first needle in the line is at; where it lies in the data
		// saves looking for it in the strings around it.
		first := -1
		if m.needle != nil {
			first = at - start - hd.dataAt
		}
		if !w.verify(m, hd.data, first) {
			continue
		}
		h := hit{worker: w.id, session: int32(index), kind: w.kindOf(hd), seq: hd.seq, pos: int64(start)}
		setTime(&h, hd.time())
		if hd.turnEsc {
			h.checkpoint = w.internString(unescape(hd.turn))
		} else {
			h.checkpoint = w.intern(hd.turn)
		}
		if o.AbandonedOnly {
			if h.active = state().InActiveRange(w.strs[h.checkpoint], h.seq); h.active {
				continue
			}
		}
		if !w.admit(&h) {
			continue
		}
		// Labeled only when kept: with a limit, most sessions' hits are
		// counted and dropped, and their timelines are not decoded.
		h.active = state().InActiveRange(w.strs[h.checkpoint], h.seq)
		h.branch = w.branchOf(&branches, state(), w.strs[h.checkpoint], h.active)
		w.snippetStart(&h)
		w.arena = appendSnippet(w.arena, w.found, w.a, w.b)
		w.snippetEnd(&h)
		w.keep(h)
	}
	// Paths changed by shell commands are in no event; the timeline keeps
	// each turn's changed paths. Its bytes are prefiltered like the
	// events' before it is decoded.
	if st != nil || m.needle == nil || w.timelineHas(timelineData) {
		w.pathHits(index, state(), &branches, m)
	}
	if len(problems) > 0 {
		problem = id + ": " + strings.Join(problems, "; ")
	}
	return problem, false
}

// kindOf names the part of the history an event type holds.
func (w *worker) kindOf(hd header) int32 {
	if hd.typEsc {
		return w.internString(kindOf(unescape(hd.typ)))
	}
	switch string(hd.typ) {
	case "user.message":
		return w.internString(KindPrompt)
	case "assistant.message":
		return w.internString(KindAssistant)
	case "tool.result":
		return w.internString(KindTool)
	case "notice":
		return w.internString(KindNotice)
	case "turn.error":
		return w.internString(KindError)
	}
	return w.intern(hd.typ)
}

// timelineHas reports whether the timeline's bytes may hold a match in a
// turn's changed paths. The Kelvin sign and the long s are looked for in
// the timeline itself: the events may have neither.
func (w *worker) timelineHas(read func() ([]byte, error)) bool {
	tl, err := read()
	if err != nil {
		return false
	}
	m, ff := w.m, w.ff
	if m.fold && m.needleKS && (bytes.Contains(tl, kelvin) || bytes.Contains(tl, longS)) {
		m, ff = w.km, w.kf
		if m.needle == nil {
			return true
		}
	}
	return pathsHold(m, ff, tl)
}

// pathsHold reports whether the needle is in the changed paths of
// timeline bytes. A needle only in prompts or ids does not count, so a
// search whose hits are all dropped does not decode the timeline for
// them. Any line it does not fully understand counts as holding one.
func pathsHold(m *matcher, ff *foldFinder, tl []byte) bool {
	if ff != nil {
		ff.reset()
	}
	var low []byte
	for pos := 0; pos < len(tl); {
		var at int
		if ff != nil {
			at = ff.index(tl, pos)
		} else if i := bytes.Index(tl[pos:], m.needle); i >= 0 {
			at = pos + i
		} else {
			at = -1
		}
		if at < 0 {
			return false
		}
		start := bytes.LastIndexByte(tl[:at], '\n') + 1
		end := len(tl)
		if nl := bytes.IndexByte(tl[at:], '\n'); nl >= 0 {
			end = at + nl
		}
		line := tl[start:end]
		// Every key that could decode as "paths" (encoding/json matches
		// keys ignoring case, and keys may be escaped) must be the plain
		// `"paths":[`, and no needle may lie in those arrays.
		low = lowerASCII(low, line)
		if bytes.Contains(line, []byte(`\u`)) || bytes.Count(low, []byte("paths")) != bytes.Count(line, []byte(`"paths":[`)) {
			return true
		}
		for rest := 0; ; {
			i := bytes.Index(line[rest:], []byte(`"paths":[`))
			if i < 0 {
				break
			}
			open := rest + i + len(`"paths":`)
			s := lineScanner{b: line, pos: open}
			if !s.skip(0) {
				return true
			}
			var in bool
			if ff != nil {
				in = m.needleFinder.first(line[open:s.pos]) >= 0
			} else {
				in = bytes.Contains(line[open:s.pos], m.needle)
			}
			if in {
				return true
			}
			rest = s.pos
		}
		pos = end + 1
	}
	return false
}

// pathHits matches the paths each turn changed.
func (w *worker) pathHits(index int, s *timeline.State, branches *branchNamer, m *matcher) {
	n := int64(0)
	for _, cid := range s.Order {
		cp := s.Checkpoints[cid]
		active := s.Active(cid)
		if w.o.AbandonedOnly && active {
			continue
		}
		for _, p := range cp.Paths {
			w.bufs[0] = append(w.bufs[0][:0], p...)
			a, b, ok := m.find(w.bufs[0])
			if !ok {
				continue
			}
			n++
			h := hit{worker: w.id, session: int32(index), checkpoint: w.internString(cid), kind: w.internString(KindPath), active: active, pos: -n}
			setTime(&h, cp.Created.UTC())
			if w.admit(&h) {
				h.branch = w.branchOf(branches, s, cid, active)
				w.snippetStart(&h)
				w.arena = append(w.arena, "changed "...)
				w.arena = appendSnippet(w.arena, w.bufs[0], a, b)
				w.snippetEnd(&h)
				w.keep(h)
			}
			break
		}
	}
}

// branchNamer holds a session's branches, derived once, when a kept hit
// first needs them.
type branchNamer struct {
	list []timeline.Branch
	done bool
}

// branchOf names the branch a kept hit of checkpoint cp lies on: the
// active one for an active hit; for an abandoned one, the branch not
// active that holds cp, the one holding it as its own turn first (as
// /branches lists it). It returns 1 + the id's index in the worker's
// names, 0 when no such branch is listed.
func (w *worker) branchOf(n *branchNamer, s *timeline.State, cp string, active bool) int32 {
	if !n.done {
		n.list, n.done = s.Branches(), true
	}
	if active {
		for _, b := range n.list {
			if b.Active {
				return 1 + w.internString(b.ID)
			}
		}
		return 0
	}
	if cp == "" {
		return 0
	}
	for _, b := range timeline.BranchOf(n.list, s, cp) {
		if !b.Active {
			return 1 + w.internString(b.ID)
		}
	}
	return 0
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
//
// first is the offset in data of the needle's first occurrence in the
// line, or -1 when unknown (or in the line before data).
func (w *worker) verify(m *matcher, data []byte, first int) bool {
	w.found = nil
	w.first = first
	s := lineScanner{b: data}
	w.value(m, &s, nil, 0, 0)
	return w.found != nil
}

// value reads one value at s.pos, matching its string values (with the key
// of the innermost object member; array elements keep it). low is s.b
// lowercased, or nil. It returns false on malformed input or a match.
func (w *worker) value(m *matcher, s *lineScanner, key []byte, depth, nest int) bool {
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
		has := needleUnknown
		if nest == 0 && w.first >= 0 {
			switch {
			case start+len(raw) <= w.first:
				has = needleAbsent // the string ends before it
			case start <= w.first && w.first+len(m.needle) <= start+len(raw):
				has = needlePresent
			}
		}
		return w.match(m, raw, esc, key, nest, has)
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
			if !w.value(m, s, k, depth+1, nest) {
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
			if !w.value(m, s, key, depth+1, nest) {
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
		// Checked like encoding/json does: whether nested arguments are
		// complete JSON decides how they are matched.
		return validLiteral(s.b[start:s.pos])
	}
}

// validLiteral reports whether b is true, false, null or a JSON number.
func validLiteral(b []byte) bool {
	switch string(b) {
	case "true", "false", "null":
		return true
	}
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(b)
}

// match matches one string value whose escaped contents are raw. It
// returns false on a match.
func (w *worker) match(m *matcher, raw []byte, esc bool, key []byte, nest int, has needleState) bool {
	if skipKey(key) || has == needleAbsent {
		return true
	}
	if m.needle != nil && has == needleUnknown {
		if m.needleFinder != nil {
			if m.needleFinder.first(raw) < 0 {
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
		complete := w.value(m, &sc, nil, 0, nest+1)
		if w.found != nil {
			return false
		}
		if complete {
			return true
		}
	}
	if a, b, ok := m.find(str); ok {
		w.found, w.a, w.b = str, a, b
		return false
	}
	return true
}

func branchID(strs []string, i int32) string {
	if i == 0 {
		return ""
	}
	return strs[i-1]
}
