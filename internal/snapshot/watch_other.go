//go:build !linux

package snapshot

import (
	"context"
	"errors"
)

// Other systems keep the walk at every capture: the watcher is inotify's.
type watcher struct{}

func startWatcher(root, markDir string, budget int) (*watcher, error) {
	return nil, errors.New("file watching is only supported on Linux")
}

func (w *watcher) take(ctx context.Context) changes    { return changes{full: "no watcher"} }
func (w *watcher) invalidate(why string)               {}
func (w *watcher) forceOverflow()                      {}
func (w *watcher) state() (bool, string, int)          { return false, "unsupported", 0 }
func (w *watcher) waitArmed(ctx context.Context) error { return errors.New("no watcher") }
func (w *watcher) close()                              {}

// changes is what the watcher vouches for since the last take.
type changes struct {
	paths []string
	gone  []string
	full  string
}
