package agent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// ContextCache is the model context of a session as a new process needs
// it: what folding the active events up to seq Through onto the
// compaction with source boundary Boundary gave (0: none), encoded. A
// process that opens a long session decodes it instead of decoding every
// event since the boundary, and folds only the events after Through.
type ContextCache struct {
	Boundary int64
	Through  int64
	Data     []byte
}

// contextCacheFormat versions ContextCache.Data.
const contextCacheFormat = 1

// ErrContextCache is wrapped by the errors of a cache that cannot be used.
var ErrContextCache = errors.New("agent: context cache unusable")

// ContextCache returns the model context as it is now, for the caller to
// keep beside the logs it was built from; false when there is none to
// give without loading events (a reseed left only part of the branch
// loaded).
func (a *Agent) ContextCache() (ContextCache, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.gen == 0 {
		return ContextCache{}, false // never seeded: no context yet
	}
	var boundary int64
	if a.compaction != nil {
		boundary = a.compaction.SourceSeq
	}
	if a.liveStale && a.from != 0 && a.from > boundary {
		return ContextCache{}, false
	}
	live := a.liveLocked()
	return ContextCache{Boundary: boundary, Through: max(live.last, boundary), Data: encodeBuilder(live)}, true
}

// ReseedCached is ReseedLazy from a context cache: the compaction to
// install is selected as ReseedLazy does, and the cache is used only when
// it was built after that same boundary. window holds the active events
// after seq from (a turn boundary at or before c.Through); those after
// c.Through are folded onto the cache. earlier loads the whole active
// branch for the transcript and for a compaction, as for ReseedLazy. It
// reports false, changing nothing, when the cache does not fit.
func (a *Agent) ReseedCached(c ContextCache, window []session.Event, from int64, earlier func() []session.Event, compactions []timeline.Compaction, isActive func(turn string, seq int64) bool) bool {
	if from > c.Through {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.cfg.Provider
	var boundary int64
	if sel := timeline.Select(compactions, p.Name(), p.Model(), compactionFormat, isActive); sel != nil {
		boundary = sel.SourceSeq
	}
	if boundary != c.Boundary {
		return false
	}
	live, err := decodeBuilder(c.Data)
	if err != nil {
		return false
	}
	a.reseedLocked(window, compactions, isActive)
	i := sort.Search(len(window), func(i int) bool { return window[i].Seq > c.Through })
	for _, ev := range window[i:] {
		live.add(ev)
	}
	a.live, a.liveStale = live, false
	a.from, a.earlier = from, earlier
	if from == 0 {
		a.earlier = nil
	}
	return true
}

// encodeBuilder writes b's state: uvarint-prefixed strings, in order.
func encodeBuilder(b *messageBuilder) []byte {
	w := binWriter{}
	w.uint(contextCacheFormat)
	w.uint(uint64(len(b.out)))
	for i := range b.out {
		m := &b.out[i]
		w.str(string(m.Role))
		w.str(m.Text)
		w.calls(m.ToolCalls)
		w.str(m.ToolCallID)
		w.str(m.ToolName)
		w.bool(m.IsError)
		w.uint(uint64(len(m.Reasoning)))
		for _, r := range m.Reasoning {
			w.str(r.Provider)
			w.str(r.Text)
			w.str(r.Signature)
			w.str(r.Redacted)
		}
	}
	w.calls(b.open)
	w.bool(b.unanswered)
	w.str(b.why)
	w.uint(uint64(b.last))
	return w.b
}

func decodeBuilder(data []byte) (b messageBuilder, err error) {
	r := binReader{s: string(data)}
	if v := r.uint(); v != contextCacheFormat {
		return b, fmt.Errorf("%w: format %d, want %d", ErrContextCache, v, contextCacheFormat)
	}
	n := r.count()
	b.out = make([]provider.Message, n)
	for i := 0; i < n && r.err == nil; i++ {
		m := &b.out[i]
		m.Role = provider.Role(r.str())
		m.Text = r.str()
		m.ToolCalls = r.calls()
		m.ToolCallID = r.str()
		m.ToolName = r.str()
		m.IsError = r.bool()
		if k := r.count(); k > 0 {
			m.Reasoning = make([]provider.Reasoning, k)
			for j := range m.Reasoning {
				m.Reasoning[j] = provider.Reasoning{Provider: r.str(), Text: r.str(), Signature: r.str(), Redacted: r.str()}
			}
		}
	}
	b.open = r.calls()
	b.unanswered = r.bool()
	b.why = r.str()
	b.last = int64(r.uint())
	if r.err == nil && r.s != "" {
		r.err = errors.New("trailing bytes")
	}
	if r.err != nil {
		return messageBuilder{}, fmt.Errorf("%w: %v", ErrContextCache, r.err)
	}
	return b, nil
}

type binWriter struct{ b []byte }

func (w *binWriter) calls(cs []provider.ToolCall) {
	w.uint(uint64(len(cs)))
	for _, c := range cs {
		w.str(c.ID)
		w.str(c.Name)
		w.str(c.Arguments)
	}
}

// calls reads what binWriter.calls wrote; nil for none.
func (r *binReader) calls() []provider.ToolCall {
	k := r.count()
	if k == 0 {
		return nil
	}
	cs := make([]provider.ToolCall, k)
	for j := range cs {
		cs[j] = provider.ToolCall{ID: r.str(), Name: r.str(), Arguments: r.str()}
	}
	return cs
}

func (w *binWriter) uint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *binWriter) str(s string) {
	w.uint(uint64(len(s)))
	w.b = append(w.b, s...)
}
func (w *binWriter) bool(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

// binReader reads what binWriter wrote; strings are substrings of s. The
// first error sticks and every later read returns zero values.
type binReader struct {
	s   string
	err error
}

func (r *binReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.s = ""
}

func (r *binReader) uint() uint64 {
	if r.err != nil {
		return 0
	}
	var v uint64
	for i := 0; i < len(r.s) && i < binary.MaxVarintLen64; i++ {
		c := r.s[i]
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			r.s = r.s[i+1:]
			return v
		}
	}
	r.fail(errors.New("bad number"))
	return 0
}

// count reads a length that must fit in what is left.
func (r *binReader) count() int {
	v := r.uint()
	if v > uint64(len(r.s)) {
		r.fail(fmt.Errorf("count %d beyond the data", v))
		return 0
	}
	return int(v)
}

func (r *binReader) str() string {
	n := r.count()
	if r.err != nil {
		return ""
	}
	s := r.s[:n]
	r.s = r.s[n:]
	return s
}

func (r *binReader) bool() bool {
	if r.err != nil {
		return false
	}
	if r.s == "" || r.s[0] > 1 {
		r.fail(errors.New("bad bool"))
		return false
	}
	v := r.s[0] == 1
	r.s = r.s[1:]
	return v
}

// loadContextEvents makes sure the loaded events cover everything after
// the installed compaction's boundary (ReseedCached loads fewer), for
// what rebuilds the context from events: a compaction.
func (a *Agent) loadContextEvents() {
	a.mu.Lock()
	need := a.from != 0 && (a.compaction == nil || a.from > a.compaction.SourceSeq)
	a.mu.Unlock()
	if need {
		a.allEvents()
	}
}

// CompactionBoundary is the source boundary of the installed compaction
// (0: none); false before the agent is seeded, when none is selected yet.
func (a *Agent) CompactionBoundary() (int64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.gen == 0 {
		return 0, false
	}
	if a.compaction == nil {
		return 0, true
	}
	return a.compaction.SourceSeq, true
}
