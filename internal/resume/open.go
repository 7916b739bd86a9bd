package resume

import (
	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// Open opens session id of dataDir (session.OpenAt) and returns it with
// its resume file (nil when there is none or it cannot be used): only the
// events after the prefix the file covers are read and parsed.
func Open(dataDir, id string) (*session.Session, *File, error) {
	var f *File
	sess, err := session.OpenAt(dataDir, id, func(dir string) (session.Prefix, bool) {
		if f = Read(dir); f == nil {
			return session.Prefix{}, false
		}
		return f.Events, true
	})
	if err != nil {
		return nil, nil, err
	}
	return sess, f, nil
}

// OpenTimeline opens the timeline of sess: from the state f holds when it
// has one (only the records after it are parsed), else by replaying the
// log. It returns, as used, the file both logs were resumed from: nil when
// either was replayed.
func OpenTimeline(sess *session.Session, f *File) (*timeline.Log, timeline.Repair, *File, error) {
	path := sess.Path(session.TimelineFile)
	if f == nil {
		tl, _, rep, err := timeline.OpenLog(path)
		return tl, rep, nil, err
	}
	tl, rep, resumed, err := timeline.OpenLogAt(path, f.State, f.Timeline)
	if err != nil || !resumed || sess.Skipped() == 0 {
		return tl, rep, nil, err
	}
	return tl, rep, f, nil
}

// Usage is the usage of every step sess has logged: what f says of the
// events it covers plus those after them, or, when the events were all
// read (or f is nil), the sum over them all.
func Usage(sess *session.Session, f *File) provider.Usage {
	if skipped := sess.Skipped(); skipped > 0 && f != nil {
		return f.Usage.Add(agent.LoggedUsage(sess.EventsAfter(skipped)))
	}
	return agent.LoggedUsage(sess.Events())
}
