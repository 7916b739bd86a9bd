package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// spareSettings reads [worktree] spares and spare_keeps from the settings
// file; YOLOP_WORKTREE_SPARES overrides the number.
func spareSettings() (app.Spares, error) {
	path := provider.DefaultSettingsPath(os.Getenv)
	s, err := provider.LoadSettings(path)
	if err != nil {
		return app.Spares{}, err
	}
	sp := app.Spares{Limit: worktree.DefaultSpares, Keeps: s.Worktree.SpareKeeps}
	if s.Worktree.Spares != nil {
		if *s.Worktree.Spares < 0 || *s.Worktree.Spares > 16 {
			return app.Spares{}, fmt.Errorf("settings %s: [worktree] spares = %d: want 0 (no spare worktrees) to 16", path, *s.Worktree.Spares)
		}
		sp.Limit = *s.Worktree.Spares
	}
	switch sp.Keeps {
	case "", worktree.KeepDependencies, worktree.KeepNothing:
	default:
		return app.Spares{}, fmt.Errorf("settings %s: [worktree] spare_keeps = %q: want %q (keep dependency and build directories as a warm cache) or %q (fully clean)", path, sp.Keeps, worktree.KeepDependencies, worktree.KeepNothing)
	}
	if v := os.Getenv(worktree.SparesEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 16 {
			return app.Spares{}, fmt.Errorf("%s=%q: want a number of spare worktrees from 0 to 16", worktree.SparesEnv, v)
		}
		sp.Limit = n
	}
	return sp, nil
}

// worktreeManager returns the manager of dataDir with the spare settings.
func worktreeManager(dataDir string) (*worktree.Manager, error) {
	sp, err := spareSettings()
	if err != nil {
		return nil, err
	}
	return &worktree.Manager{DataDir: dataDir, Spares: sp.Limit, SpareKeeps: sp.Keeps}, nil
}

// withSpares adds the spare settings and the background preparer to opts.
func withSpares(opts app.Options) (app.Options, error) {
	sp, err := spareSettings()
	if err != nil {
		return opts, err
	}
	dataDir := opts.DataDir
	sp.Prepare = func(repoRoot string) { startPreparer(dataDir, repoRoot) }
	opts.Spares = sp
	return opts, nil
}

// startPreparer starts `yolop worktree prepare-spare` as a detached process
// in its own session (it outlives a one-shot `yolop -p`, and no terminal
// signal reaches it) and does not wait for it. It is not a tool process:
// it writes only under the data directory and the repository's worktree
// records, each step safe to be killed at. A failure to start it only means
// the next session checks out as before.
func startPreparer(dataDir, repoRoot string) {
	exe, err := os.Executable()
	if err != nil {
		return
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer devnull.Close()
	cmd := exec.Command(exe, "worktree", "prepare-spare", "--data-dir", dataDir, "-C", repoRoot)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
	cmd.Dir = repoRoot
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return
	}
	_ = cmd.Process.Release()
}

// newPrepareSpareCmd is the hidden command the background preparation runs.
func newPrepareSpareCmd(o *rootOptions) *cobra.Command {
	var dir, at string
	cmd := &cobra.Command{
		Use:    "prepare-spare",
		Short:  "Prepare a spare worktree for the repository so the next session starts without a checkout",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			lowerPriority()
			dataDir, err := o.resolveDataDir()
			if err != nil {
				return err
			}
			m, err := worktreeManager(dataDir)
			if err != nil {
				return err
			}
			if dir == "" {
				dir = "."
			}
			repo, err := worktree.Detect(c.Context(), dir)
			if err != nil {
				return err
			}
			commit := ""
			if at != "" {
				commit, err = resolveCommit(c.Context(), repo.Root, at)
				if err != nil {
					return err
				}
			}
			path, err := m.PrepareSpare(c.Context(), repo, commit)
			if errors.Is(err, worktree.ErrSpareLimit) {
				fmt.Fprintf(o.io.Out, "the repository already has %d spare worktree(s)\n", m.Spares)
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(o.io.Out, "prepared spare worktree %s\n", path)
			return nil
		},
	}
	cmd.Flags().StringVarP(&dir, "cd", "C", "", "the repository (default: the current directory)")
	cmd.Flags().StringVar(&at, "at", "", "commit to park the spare at (default: HEAD)")
	return cmd
}

func resolveCommit(ctx context.Context, dir, rev string) (string, error) {
	out, err := git.New(dir).Run(ctx, "rev-parse", "--verify", "--quiet", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("--at %s: not a commit in %s", rev, dir)
	}
	return git.Trim(out), nil
}
