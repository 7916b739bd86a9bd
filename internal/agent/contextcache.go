package agent

import (
	"errors"
	"fmt"
	"sort"

	"github.com/yolop-dev/yolop/internal/binenc"
	"github.com/yolop-dev/yolop/internal/fault"
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
var ErrContextCache = fault.Plain("agent: context cache unusable")

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
	w.Uint(contextCacheFormat)
	w.Uint(uint64(len(b.out)))
	for i := range b.out {
		m := &b.out[i]
		w.Str(string(m.Role))
		w.Str(m.Text)
		w.calls(m.ToolCalls)
		w.Str(m.ToolCallID)
		w.Str(m.ToolName)
		w.Bool(m.IsError)
		w.Uint(uint64(len(m.Reasoning)))
		for _, r := range m.Reasoning {
			w.Str(r.Provider)
			w.Str(r.Text)
			w.Str(r.Signature)
			w.Str(r.Redacted)
		}
	}
	w.calls(b.open)
	w.Bool(b.unanswered)
	w.Str(b.why)
	w.Uint(uint64(b.last))
	return w.B
}

func decodeBuilder(data []byte) (b messageBuilder, err error) {
	r := binReader{binenc.Reader{S: string(data)}}
	if v := r.Uint(); v != contextCacheFormat {
		return b, fmt.Errorf("%w: format %d, want %d", ErrContextCache, v, contextCacheFormat)
	}
	n := r.Count()
	b.out = make([]provider.Message, n)
	for i := 0; i < n && r.Err == nil; i++ {
		m := &b.out[i]
		m.Role = provider.Role(r.Str())
		m.Text = r.Str()
		m.ToolCalls = r.calls()
		m.ToolCallID = r.Str()
		m.ToolName = r.Str()
		m.IsError = r.Bool()
		if k := r.Count(); k > 0 {
			m.Reasoning = make([]provider.Reasoning, k)
			for j := range m.Reasoning {
				m.Reasoning[j] = provider.Reasoning{Provider: r.Str(), Text: r.Str(), Signature: r.Str(), Redacted: r.Str()}
			}
		}
	}
	b.open = r.calls()
	b.unanswered = r.Bool()
	b.why = r.Str()
	b.last = int64(r.Uint())
	if r.Err == nil && r.S != "" {
		r.Err = errors.New("trailing bytes")
	}
	if r.Err != nil {
		return messageBuilder{}, fmt.Errorf("%w: %v", ErrContextCache, r.Err)
	}
	return b, nil
}

// binWriter and binReader are the shared codec's, with tool calls.
type binWriter struct{ binenc.Writer }

type binReader struct{ binenc.Reader }

func (w *binWriter) calls(cs []provider.ToolCall) {
	w.Uint(uint64(len(cs)))
	for _, c := range cs {
		w.Str(c.ID)
		w.Str(c.Name)
		w.Str(c.Arguments)
	}
}

// calls reads what binWriter.calls wrote; nil for none.
func (r *binReader) calls() []provider.ToolCall {
	k := r.Count()
	if k == 0 {
		return nil
	}
	cs := make([]provider.ToolCall, k)
	for j := range cs {
		cs[j] = provider.ToolCall{ID: r.Str(), Name: r.Str(), Arguments: r.Str()}
	}
	return cs
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
