package checkpoint

import (
	"context"
	"fmt"
	"time"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/snapshot"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// ForkTurn is one turn of a session's active branch, as a fork carries it
// into a new session.
type ForkTurn struct {
	ID           string // the turn's id in the session it comes from
	Prompt       string
	PromptBytes  int64 // the whole prompt's length when Prompt is its start
	Status       string
	Snapshot     string // tree before the turn; "" when conversation only
	End          string // tree at its end; "" when not captured
	CaptureError string
	Events       []session.Event // the turn's active events, in order
	// Created is when the turn started; Paths and PathsMore the paths it
	// changed. The fork journals the turn with its original time, so
	// forking does not count as using a session (listings, -c).
	Created   time.Time
	Paths     []string
	PathsMore int
	// Sandbox is the level the turn's commands ran under ("" = not
	// recorded), so the fork's previews warn as the source's do.
	Sandbox string
}

// ForkHistory is what a fork carries: the active events that belong to no
// turn (before the first one), then the active branch's turns.
type ForkHistory struct {
	Before []session.Event
	Turns  []ForkTurn
}

// Fork returns the active branch of the session this controller reads,
// turn by turn, for `yolop sessions fork`.
func (c *Controller) Fork() ForkHistory {
	c.mu.Lock()
	defer c.mu.Unlock()
	var h ForkHistory
	byTurn := map[string][]session.Event{}
	for _, ev := range c.activeEventsLocked() {
		if ev.Turn == "" {
			h.Before = append(h.Before, ev)
			continue
		}
		byTurn[ev.Turn] = append(byTurn[ev.Turn], ev)
	}
	for _, cp := range c.state.ActiveChain() {
		t := ForkTurn{ID: cp.ID, Prompt: cp.Prompt, PromptBytes: cp.PromptBytes, Status: cp.Status, CaptureError: cp.CaptureError, Events: byTurn[cp.ID], Created: cp.Created, Paths: cp.Paths, PathsMore: cp.PathsMore, Sandbox: cp.Sandbox}
		if cp.Open {
			t.Status = agent.StatusInterrupted
		}
		if cp.Snapshot != nil {
			t.Snapshot = cp.Snapshot.Tree
		}
		if cp.End != nil {
			t.End = cp.End.Tree
		}
		h.Turns = append(h.Turns, t)
	}
	return h
}

// Anchor keeps an existing tree of this session's repository under one of
// its snapshot names (the snapshot engine's Anchor).
type Anchor func(ctx context.Context, name, tree string) (timeline.SnapshotRef, error)

// EngineAnchor is eng's Anchor, nil when eng is (the fork's turns are
// then conversation only).
func EngineAnchor(eng *snapshot.Engine) Anchor {
	if eng == nil {
		return nil
	}
	return func(ctx context.Context, name, tree string) (timeline.SnapshotRef, error) {
		snap, err := eng.Anchor(ctx, name, tree)
		return timeline.SnapshotRef{Tree: snap.Tree, Ref: snap.Ref}, err
	}
}

// ImportFork journals a fork's history into this new session: each turn
// gets a new checkpoint id (cp1, cp2, … in order) with its events, status
// and snapshots, so the fork lists the turns and can rewind them. Trees
// are anchored under this session's refs when anchor is non-nil (the fork
// shares the repository's objects); otherwise, or when a tree cannot be
// anchored, the turn is conversation only with the reason. It returns the
// number of events carried. The session must have no turns yet.
func (c *Controller) ImportFork(ctx context.Context, h ForkHistory, from string, anchor Anchor) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.refuseReadOnly(); err != nil {
		return 0, err
	}
	if c.running != "" || len(c.state.Order) > 0 {
		return 0, fmt.Errorf("checkpoint: a fork's history can only be imported into a session without turns")
	}
	events := 0
	add := func(ev session.Event, turn string) error {
		if _, err := c.cfg.Store.Append(ev.Type, turn, ev.Data); err != nil {
			return fmt.Errorf("copy event %d: %w", ev.Seq, err)
		}
		events++
		return nil
	}
	for _, ev := range h.Before {
		if err := add(ev, ""); err != nil {
			return events, err
		}
	}
	snap := func(name, tree string) (*timeline.SnapshotRef, string) {
		if tree == "" {
			return nil, ""
		}
		if anchor == nil {
			return nil, "forked without workspace snapshots: " + c.cfg.NoWorkspace
		}
		ref, err := anchor(ctx, name, tree)
		if err != nil {
			return nil, fmt.Sprintf("the fork could not keep the snapshot of %s: %v", name, err)
		}
		return &ref, ""
	}
	parent := ""
	for _, t := range h.Turns {
		id := fmt.Sprintf("cp%d", c.state.NextCheckpoint)
		rec := timeline.Record{Type: timeline.TypeCheckpointCreated, Time: t.Created, Checkpoint: id, Parent: parent, Prompt: t.Prompt, PromptBytes: t.PromptBytes, SeqBefore: c.cfg.Store.LastSeq(), CaptureError: t.CaptureError, Sandbox: t.Sandbox}
		var why string
		rec.Snapshot, why = snap(id, t.Snapshot)
		if why != "" {
			rec.CaptureError = why
		}
		if err := c.append(rec); err != nil {
			return events, err
		}
		for _, ev := range t.Events {
			if err := add(ev, id); err != nil {
				return events, err
			}
		}
		done := timeline.Record{Type: timeline.TypeTurnCompleted, Time: t.Created, Checkpoint: id, Status: t.Status, FinalSeq: c.cfg.Store.LastSeq(), Paths: t.Paths, PathsMore: t.PathsMore}
		if n := len(t.Events); n > 0 && t.Events[n-1].Time.After(done.Time) {
			done.Time = t.Events[n-1].Time
		}
		if rec.Snapshot != nil {
			done.End, _ = snap("end-"+id, t.End)
		}
		if err := c.append(done); err != nil {
			return events, err
		}
		parent = id
	}
	note := fmt.Sprintf("Forked from session %s: %s and %d events of its active branch (its abandoned branches stay with it).", from, Plural(len(h.Turns), "turn", "turns"), events)
	if err := c.cfg.Runtime.Note(c.state.Head, agent.NoticeData{Kind: "fork", Text: note}); err != nil {
		return events, fmt.Errorf("record the fork notice: %w", err)
	}
	c.reseedLocked()
	return events, nil
}
