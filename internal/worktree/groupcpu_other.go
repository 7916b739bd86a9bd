//go:build !linux

package worktree

// groupCPU cannot read another process's processor time here; a
// preparation whose git processes run and are not stopped counts as
// making progress.
func groupCPU(int) (uint64, bool) { return 0, false }

// sessionLive cannot list another session's processes here: none is
// waited for.
func sessionLive(int) bool { return false }
