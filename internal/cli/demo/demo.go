// Package demo is `yolop demo`: a short offline tour in a throwaway
// repository and data directory of its own.
package demo

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
)

// DemoOptions are what `yolop demo` reads.
type DemoOptions struct {
	IO *cmdutil.IOStreams
	// Open opens the demo's session, in its own data directory.
	Open func(context.Context, app.Env, app.Request) (*app.Session, error)

	Ctx  context.Context
	Dir  string // where to make the repository and data directory ("" = a temporary directory)
	Keep bool
}

// NewCmdDemo makes `yolop demo`; runF, when set, runs instead of demoRun.
func NewCmdDemo(f *cmdutil.Factory, runF func(*DemoOptions) error) *cobra.Command {
	opts := &DemoOptions{IO: f.IO, Open: f.Open}
	cmd := &cobra.Command{
		Use: "demo",
		Example: `  yolop demo                 # a throwaway repository and data directory, removed afterwards
  yolop demo --keep          # keep them, and print how to continue the session`,
		Short: "A short offline tour: three turns, a rewind, and a redo, in a temporary git repository",
		Long: `A short offline tour with the sim provider: three turns, a rewind, and a redo,
in a git repository of its own with a data directory of its own, so your
session list is untouched. Both are removed afterwards unless --keep.`,
		Args: cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts.Ctx = c.Context()
			if runF != nil {
				return runF(opts)
			}
			return demoRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "create the demo repository and data directory here instead of a temporary directory")
	cmd.Flags().BoolVar(&opts.Keep, "keep", false, "keep the demo repository and its data directory, and print how to continue")
	return cmd
}

func demoRun(opts *DemoOptions) (err error) {
	dir := opts.Dir
	made := false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "yolop-demo-"); err != nil {
			return err
		}
		made = true
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// The demo's own data directory: its session never enters the user's
	// session list.
	dataDir := filepath.Join(dir, "data")
	repo := filepath.Join(dir, "project")
	if !opts.Keep {
		defer func() {
			cleanup := []string{repo, dataDir}
			if made {
				cleanup = []string{dir}
			}
			for _, p := range cleanup {
				if rerr := os.RemoveAll(p); rerr != nil && err == nil {
					err = fmt.Errorf("remove the demo's files: %w", rerr)
				}
			}
		}()
	}
	if err := makeRepo(opts.Ctx, repo); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "yolop demo — a git repository at %s\nThe offline sim provider turns prompt lines into real tool calls ($ runs a shell command, write/rm edit files).\n", repo)
	return runTour(opts, dir, dataDir, repo)
}

// makeRepo makes the demo's repository with one commit, whatever the
// user's git configuration says of identity, signing and hooks.
func makeRepo(ctx context.Context, repo string) error {
	if err := os.MkdirAll(repo, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("# demo project\n"), 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "initial"}} {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "user.name=yolop demo", "-c", "user.email=demo@example.invalid", "-c", "commit.gpgSign=false", "-c", "core.hooksPath=/dev/null"}, args...)...)
		cmd.Dir = repo
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, b)
		}
	}
	return nil
}

// selfCommand is how the user can run this yolop again from any
// directory: "yolop" when that is on PATH and is this binary; for a go run
// build (whose binary is gone when it exits) `go -C <source tree> run
// ./cmd/yolop`, with goRun set; else the binary's path.
func selfCommand() (cmd string, goRun bool) {
	exe, err := os.Executable()
	if err != nil {
		return "yolop", false
	}
	// Without a yolop on PATH, or a working directory, the binary's path
	// is the answer.
	onPath, _ := exec.LookPath("yolop")
	wd, _ := os.Getwd()
	return selfCommandFor(exe, onPath, wd)
}

// selfCommandFor is selfCommand for the running binary exe, the yolop
// that PATH finds ("" for none) and the working directory wd.
func selfCommandFor(exe, onPath, wd string) (cmd string, goRun bool) {
	if strings.Contains(exe, string(filepath.Separator)+"go-build") {
		if src := sourceTree(wd); src != "" {
			return "go -C " + cmdutil.ShellQuote(src) + " run ./cmd/yolop", true
		}
		return "go run ./cmd/yolop", true
	}
	if onPath != "" {
		if a, err1 := filepath.EvalSymlinks(onPath); err1 == nil {
			if b, err2 := filepath.EvalSymlinks(exe); err2 == nil && a == b {
				return "yolop", false
			}
		}
	}
	return cmdutil.ShellQuote(exe), false
}

// sourceTree is the yolop module's directory at or above dir (where `go
// run ./cmd/yolop` was typed), "" when there is none.
func sourceTree(dir string) string {
	if dir == "" {
		return ""
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			if strings.HasPrefix(string(b), "module github.com/yolop-dev/yolop\n") || strings.Contains(string(b), "\nmodule github.com/yolop-dev/yolop\n") {
				return dir
			}
			return ""
		}
		up := filepath.Dir(dir)
		if up == dir {
			return ""
		}
		dir = up
	}
}
