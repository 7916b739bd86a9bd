package search

import (
	"path/filepath"
	"slices"
	"time"

	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// Entry describes one session for listings.
type Entry struct {
	session.Summary
	// LastUsed is when a turn last ran or a restore was last confirmed in
	// the session; zero when neither ever happened. Opening a session,
	// listing it or forking it does not use it.
	LastUsed time.Time
	// Turns is the number of turns on the active branch.
	Turns int
	// Timeline is the materialized timeline (read without a lock; nil
	// when the session has a Problem).
	Timeline *timeline.State
}

// Catalog lists every session of dataDir, most recently used first, then
// those never used, newest first. It takes no lock and writes nothing.
func Catalog(dataDir string) ([]Entry, error) {
	list, err := session.List(dataDir)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(list))
	for _, sm := range list {
		out = append(out, Describe(sm))
	}
	// Used sessions first, the one used last first; then sessions never
	// used (a fork, an editor's session with no prompt yet) newest created
	// first, the order session.List returned them in.
	slices.SortStableFunc(out, func(a, b Entry) int {
		return b.LastUsed.Compare(a.LastUsed)
	})
	return out, nil
}

// Describe adds what the timeline says to a listed session.
func Describe(sm session.Summary) Entry {
	e := Entry{Summary: sm}
	if sm.Problem != "" {
		return e
	}
	recs, err := timeline.ReadRecords(filepath.Join(sm.Dir, session.TimelineFile))
	if err != nil {
		e.Problem = session.TimelineFile + ": " + err.Error()
		return e
	}
	e.Timeline = timeline.Build(recs)
	e.LastUsed = e.Timeline.LastUsed
	e.Turns = len(e.Timeline.ActiveChain())
	return e
}

// LatestFor returns the session of repository (or directory) root used
// last, skipping read-only ones while another exists, or "" when there is
// none.
func LatestFor(dataDir, root string) (string, error) {
	list, err := Catalog(dataDir)
	if err != nil {
		return "", err
	}
	// A read-only session cannot be continued; its fork (never used yet)
	// is what -c should find then.
	readOnly := ""
	for _, e := range list {
		if e.Problem != "" || !InRepo(e.Workspace, root) {
			continue
		}
		if e.Timeline != nil && e.Timeline.ReadOnly {
			if readOnly == "" {
				readOnly = e.ID
			}
			continue
		}
		return e.ID, nil
	}
	// Only read-only sessions: continuing one explains how to fork it.
	return readOnly, nil
}
