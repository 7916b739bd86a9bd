package search

import (
	"path/filepath"
	"slices"
	"strings"
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

// Used is the time listings sort by: LastUsed, or the creation time of a
// session never used.
func (e Entry) Used() time.Time {
	if !e.LastUsed.IsZero() {
		return e.LastUsed
	}
	return e.Workspace.Created
}

// Catalog lists every session of dataDir, most recently used first. It
// takes no lock and writes nothing.
func Catalog(dataDir string) ([]Entry, error) {
	list, err := session.List(dataDir)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(list))
	for _, sm := range list {
		e := Entry{Summary: sm}
		if sm.Problem == "" {
			recs, err := timeline.ReadRecords(filepath.Join(sm.Dir, session.TimelineFile))
			if err != nil {
				e.Problem = session.TimelineFile + ": " + err.Error()
			} else {
				e.Timeline = timeline.Build(recs)
				e.LastUsed = e.Timeline.LastUsed
				e.Turns = len(e.Timeline.ActiveChain())
			}
		}
		out = append(out, e)
	}
	// session.List is newest created first; a stable sort keeps that order
	// among sessions used at the same instant.
	slices.SortStableFunc(out, func(a, b Entry) int {
		if (a.Problem == "") != (b.Problem == "") {
			if a.Problem == "" {
				return -1
			}
			return 1
		}
		if c := b.Used().Compare(a.Used()); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return out, nil
}

// LatestFor returns the session of repository (or directory) root used
// last, or "" when there is none.
func LatestFor(dataDir, root string) (string, error) {
	list, err := Catalog(dataDir)
	if err != nil {
		return "", err
	}
	for _, e := range list {
		if e.Problem == "" && InRepo(e.Workspace, root) {
			return e.ID, nil
		}
	}
	return "", nil
}
