package search

import (
	"fmt"
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
	// ReadOnly says why the session cannot be continued (its event log or
	// timeline is damaged before its end); "" when it can.
	ReadOnly string
	// DigestError says why the digest computed for this listing could not
	// be saved (the next listing parses the session's logs again); "" when
	// it was, or was current already.
	DigestError string
}

// Catalog lists every session of dataDir, most recently used first, then
// those never used, newest first. It takes no lock; the only thing it may
// write is a session's summary.json (see Describe).
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

// Describe adds what the session's logs say to a listed session. The
// digest its writer saved at the last turn (summary.json) answers without
// reading the logs; without a current one (an older session, a crash
// before it was saved, another process appending) the logs are parsed,
// without a lock, and the digest is saved for the next listing when they
// did not change meanwhile.
func Describe(sm session.Summary) Entry {
	e := Entry{Summary: sm}
	if sm.Problem != "" || sm.Unused {
		return e
	}
	if d, ok := session.ReadDigest(sm.Dir); ok {
		e.Turns, e.ReadOnly, e.LastUsed = d.Turns, d.ReadOnly, d.LastUsed
		return e
	}
	d, err := digestOf(sm)
	if err != nil {
		e.Problem = err.Error()
		return e
	}
	e.Turns, e.ReadOnly, e.LastUsed = d.Turns, d.ReadOnly, d.LastUsed
	// A cache: when it cannot be saved the next listing parses the logs
	// again, which is all it costs; the caller says so.
	if err := session.SaveDigest(sm.Dir, d); err != nil {
		e.DigestError = err.Error()
	}
	return e
}

// digestOf computes a session's digest from its logs, with the stamps
// they had before they were read.
func digestOf(sm session.Summary) (session.Digest, error) {
	ev, tl, err := session.Stamps(sm.Dir)
	if err != nil {
		return session.Digest{}, err
	}
	s, err := session.OpenReadOnly(filepath.Dir(filepath.Dir(sm.Dir)), sm.ID)
	if err != nil {
		return session.Digest{}, err
	}
	defer s.Close()
	recs, err := timeline.ReadRecords(s.Path(session.TimelineFile))
	if err != nil {
		return session.Digest{}, fmt.Errorf("%s: %w", session.TimelineFile, err)
	}
	st := timeline.Build(recs)
	d := session.Digest{Turns: st.ActiveLen(), LastUsed: st.LastUsed, Events: ev, Timeline: tl}
	switch {
	case st.ReadOnly:
		d.ReadOnly = st.ReadOnlyReason
	case s.Corruption() != nil:
		_, d.ReadOnly = s.ReadOnly()
	}
	return d, nil
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
		if e.ReadOnly != "" {
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
