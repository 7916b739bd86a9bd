//go:build !linux

package worktree

// Autogroups are Linux's.

var ownSession = func() int { return 0 }

func liftAutogroup(int) error { return nil }

// KeepAutogroup does nothing: there are no autogroups to keep.
func KeepAutogroup() {}

func liftPreparer(int) {}
