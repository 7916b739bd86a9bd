package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// compactionFormat is the version of the replacement payload below.
const compactionFormat = 1

const summaryPrefix = "[yolop] Summary of the earlier conversation (compacted; the full log is kept):\n"

// replacement is the opaque payload of a compaction checkpoint.
type replacement struct {
	Summary string `json:"summary"`
}

// ErrNothingToCompact means the context is already as small as compaction
// can make it; the previous checkpoint stays installed.
var ErrNothingToCompact = fault.Plain("agent: nothing to compact yet")

// Compact summarizes the current model context through the provider and
// installs the result as a compaction checkpoint. A failed or ineffective
// compaction leaves the previous checkpoint in place.
func (a *Agent) Compact(ctx context.Context) (string, error) {
	return a.compact(ctx, 0)
}

// compact summarizes the context made of the active events up to seq upTo
// (all of them when upTo is 0) and installs it with that boundary.
func (a *Agent) compact(ctx context.Context, upTo int64) (string, error) {
	a.loadContextEvents()
	a.mu.Lock()
	evs := a.events
	for upTo > 0 && len(evs) > 0 && evs[len(evs)-1].Seq > upTo {
		evs = evs[:len(evs)-1]
	}
	var lastSeq int64
	var lastTurn string
	if n := len(evs); n > 0 {
		lastSeq, lastTurn = evs[n-1].Seq, evs[n-1].Turn
	}
	msgs := a.contextOf(evs)
	prev := a.compaction
	a.mu.Unlock()
	if lastSeq == 0 || len(msgs) < 2 || (prev != nil && prev.SourceSeq >= lastSeq) {
		return "", ErrNothingToCompact
	}
	before := 0
	for _, m := range msgs {
		before += len(m.Text)
	}
	p := a.cfg.Provider
	summary, err := p.Compact(ctx, provider.Request{Model: p.Model(), System: a.systemPrompt(), Messages: msgs})
	if err != nil {
		return "", fmt.Errorf("compact: %w", err)
	}
	if summary == "" || len(summary) >= before {
		return "", ErrNothingToCompact
	}
	raw, _ := json.Marshal(replacement{Summary: summary})
	c := timeline.Compaction{V: 1, Provider: p.Name(), Model: p.Model(), Format: compactionFormat, SourceSeq: lastSeq, Turn: lastTurn, Replacement: raw, Time: time.Now().UTC()}
	if a.cfg.Compactions == nil {
		return "", errors.New("compact: no compaction store")
	}
	if err := a.cfg.Compactions.Append(c); err != nil {
		return "", fmt.Errorf("compact: %w", err)
	}
	a.mu.Lock()
	a.all = append(a.all, c)
	a.compaction = &c
	a.liveStale = true
	a.mu.Unlock()
	return fmt.Sprintf("compacted %d messages (%d bytes) into a %d-byte summary", len(msgs), before, len(summary)), nil
}
