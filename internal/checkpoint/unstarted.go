package checkpoint

import (
	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// NewUnstarted returns the controller of a session that is not on disk yet
// (its first prompt creates it). It has no turns: listings are empty and
// every restore request gets the answer a session without turns gets
// (nothing to undo, unknown checkpoint, unknown token). It never writes.
func NewUnstarted(sessionID, noWorkspace string) *Controller {
	return New(Config{SessionID: sessionID, Store: noEvents{}, Timeline: notStarted{}, NoWorkspace: noWorkspace})
}

// noEvents is the event store of a session that has none.
type noEvents struct{}

func (noEvents) Append(string, string, any) (session.Event, error) {
	return session.Event{}, errNotStarted
}
func (noEvents) Events() []session.Event         { return nil }
func (noEvents) LastSeq() int64                  { return 0 }
func (noEvents) SaveDigest(session.Digest) error { return nil }
func (noEvents) Sync() error                     { return nil }

// notStarted is the timeline of a session that is not on disk yet.
type notStarted struct{}

func (notStarted) Append(timeline.Record) error { return errNotStarted }
func (notStarted) Live() *timeline.State        { return timeline.New() }

var errNotStarted = fault.Plain("checkpoint: the session has not started; its first prompt creates it")
