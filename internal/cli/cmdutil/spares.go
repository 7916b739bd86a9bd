package cmdutil

import (
	"os"
	"os/exec"
	"syscall"

	"github.com/yolop-dev/yolop/internal/catalog"
)

// startPreparer starts `yolop worktree prepare-spare` as a detached process
// in its own session (it outlives a one-shot `yolop -p`, and no terminal
// signal reaches it) and does not wait for it. It is not a tool process:
// it writes only under the data directory and the repository's worktree
// records, each step safe to be killed at. A failure to start it only means
// the next session checks out as before; it is recorded where the next
// start and `worktree list` show it (as the preparation records its own).
func startPreparer(dataDir, repoRoot string) {
	exe, err := os.Executable()
	if err != nil {
		catalog.RecordPrepareFailure(dataDir, repoRoot, err)
		return
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		catalog.RecordPrepareFailure(dataDir, repoRoot, err)
		return
	}
	defer devnull.Close()
	cmd := exec.Command(exe, "worktree", "prepare-spare", "--data-dir", dataDir, "-C", repoRoot)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
	cmd.Dir = repoRoot
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		catalog.RecordPrepareFailure(dataDir, repoRoot, err)
		return
	}
	// The preparer runs on by itself; releasing only frees its handle
	// here, and fails only for a handle already released.
	_ = cmd.Process.Release()
}
