//go:build !linux

package snapshot

import (
	"context"
	"errors"
	"time"
)

// Other systems keep the walk at every capture: the watcher is inotify's.
type watcher struct{}

func startWatcher(root, markDir string, budget int, byWalk bool, count func() (int, error), provisional int) (*watcher, error) {
	return nil, errors.New("file watching is only supported on Linux")
}

func (w *watcher) take(ctx context.Context) changes    { return changes{full: "no watcher"} }
func (w *watcher) invalidate(why string)               {}
func (w *watcher) forceOverflow()                      {}
func (w *watcher) state() (bool, string, int)          { return false, "unsupported", 0 }
func (w *watcher) waitArmed(ctx context.Context) error { return errors.New("no watcher") }
func (w *watcher) close()                              {}
func (w *watcher) closeHandedOff()                     {}
func (w *watcher) release()                            {}
func (w *watcher) limit() (int, string)                { return 0, "no watcher" }
func (w *watcher) walkArm(start time.Time) *walkArm    { return nil }

// walkArm is never made here: walks arm nothing.
type walkArm struct{ onEnter func(string) }

func (a *walkArm) enter(rel, abs string)    {}
func (a *walkArm) fail(why string)          {}
func (a *walkArm) recent(ctime int64) bool  { return false }
func (a *walkArm) watchedAhead(string) bool { return false }
func (a *walkArm) changed(rel string)       {}
func (a *walkArm) replaced(rel string)      {}
func (a *walkArm) walkNext(why string)      {}
func (a *walkArm) finish()                  {}

// changes is what the watcher vouches for since the last take.
type changes struct {
	paths []string
	gone  []string
	full  string
}

func newPrewatch(root string, budget int) (*watcher, error) {
	return nil, errors.New("file watching is only supported on Linux")
}

func (w *watcher) adopt(markDir string, byWalk bool) error { return errors.New("no watcher") }

func (w *watcher) peek(ctx context.Context) (func(string) bool, bool) { return nil, false }

func newPrewatchByWalk(root string, budget int, began func()) (*watcher, walkResult) {
	began()
	return nil, walkTree(root, nil, false)
}
