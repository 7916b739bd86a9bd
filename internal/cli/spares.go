package cli

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/catalog"
	"github.com/yolop-dev/yolop/internal/config"
)

// withSpares adds the spare settings and the background preparer to opts.
func withSpares(opts app.Options) (app.Options, error) {
	sp, err := config.ResolveSpares()
	if err != nil {
		return opts, err
	}
	dataDir := opts.DataDir
	opts.Spares = sp
	opts.PrepareSpare = func(repoRoot string) { startPreparer(dataDir, repoRoot) }
	return opts, nil
}

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
	_ = cmd.Process.Release()
}

// newPrepareSpareCmd is the hidden command the background preparation runs
// (benchmarks run it too, with --at).
func newPrepareSpareCmd(o *rootOptions) *cobra.Command {
	var at string
	cmd := &cobra.Command{
		Use:    "prepare-spare",
		Short:  "Prepare a spare worktree for the repository so the next session starts without a checkout",
		Hidden: true,
		Args:   noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			dataDir, err := o.resolveDataDir()
			if err != nil {
				return err
			}
			dir := o.dir
			if dir == "" {
				dir = "."
			}
			// Before the first git: every process the preparation starts
			// takes its priority from the thread that forks it. A
			// preparation that would compete with the user's turns does
			// not run; the failure is shown where a detached one's is.
			if err := lowerPriority(); err != nil {
				catalog.RecordPrepareFailure(dataDir, dir, err)
				return err
			}
			path, err := catalog.PrepareSpare(c.Context(), dataDir, dir, at)
			if err != nil {
				return err
			}
			if o.outputFormat == "json" {
				return writeJSON(o, map[string]string{"spare": path}) // "" when it already had its spares
			}
			if path == "" {
				_, err := fmt.Fprintln(o.io.Out, "the repository already has its spare worktrees")
				return err
			}
			_, err = fmt.Fprintln(o.io.Out, "prepared spare worktree", path)
			return err
		},
	}
	cmd.Flags().StringVar(&at, "at", "", "commit to park the spare at (default: HEAD)")
	return cmd
}
