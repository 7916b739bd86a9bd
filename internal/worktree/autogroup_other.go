//go:build !linux

package worktree

// Autogroups are Linux's.

var ownSession = func() int { return 0 }

func liftAutogroup(int) error { return nil }

func liftPreparer(int) {}
