package cli

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/command"
	printhost "github.com/yolop-dev/yolop/internal/host/print"
	"github.com/yolop-dev/yolop/internal/provider"
)

type demoOptions struct {
	dir  string
	keep bool
}

func newDemoCmd(o *rootOptions) *cobra.Command {
	var d demoOptions
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
			return runDemo(c.Context(), o, d)
		},
	}
	cmd.Flags().StringVar(&d.dir, "dir", "", "create the demo repository and data directory here instead of a temporary directory")
	cmd.Flags().BoolVar(&d.keep, "keep", false, "keep the demo repository and its data directory, and print how to continue")
	return cmd
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

// demoTurns are sim-provider prompts: edits through the file tools and
// through shell commands, a deletion, a rename and a binary file.
var demoTurns = []string{
	"write notes.md\n# Plan\n- parse the config\nEOF\n$ printf 'version=1\\n' > app.conf\nStarted the plan and a config file.",
	"$ sed -i 's/parse/validate/' notes.md && mv README.md GUIDE.md\n$ chmod +x GUIDE.md\nRenamed the readme and reworded the plan with shell commands.",
	"rm app.conf\n$ printf 'PK\\003\\004\\000\\001binary' > bundle.zip && ln -s GUIDE.md LINK\nDeleted the config, added a binary file and a symlink.",
}

func runDemo(ctx context.Context, o *rootOptions, d demoOptions) (err error) {
	out := o.f.IO.Out
	dir := d.dir
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
	if !d.keep {
		defer func() {
			cleanup := []string{filepath.Join(dir, "project"), dataDir}
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
	repo := filepath.Join(dir, "project")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		return err
	}
	git := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "user.name=yolop demo", "-c", "user.email=demo@example.invalid", "-c", "commit.gpgSign=false", "-c", "core.hooksPath=/dev/null"}, args...)...)
		cmd.Dir = repo
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, b)
		}
		return nil
	}
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("# demo project\n"), 0o644); err != nil {
		return err
	}
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "initial"}} {
		if err := git(a...); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "yolop demo — a git repository at %s\nThe offline sim provider turns prompt lines into real tool calls ($ runs a shell command, write/rm edit files).\n", repo)

	s, err := o.f.Open(ctx, app.Options{DataDir: dataDir, Dir: repo, Provider: provider.Config{Provider: provider.NameSim}})
	if err != nil {
		return err
	}
	defer s.Close()
	self, goRun := selfCommand()
	run := func(prompt string) error {
		prefix := self + " --data-dir " + cmdutil.ShellQuote(dataDir) + " --session " + s.ID()
		if code := printhost.Run(ctx, s, printhost.Options{Prompt: prompt, Stdout: out, Stderr: out, ConfirmPrefix: prefix}); code != "" {
			return cmdutil.ToldAfter(code, fmt.Errorf("demo step %q failed", firstLineOf(prompt)))
		}
		return nil
	}
	for i, p := range demoTurns {
		fmt.Fprintf(out, "\n━━ Turn %d ━━ prompt:\n%s\n\n", i+1, indentLines(p))
		if err := run(p); err != nil {
			return err
		}
	}
	root := s.Info().ActiveRoot
	fmt.Fprintf(out, "\nThe session works in its own worktree %s (branch %s); your checkout is untouched.\nFiles now:\n%s", root, s.Info().Branch, listFiles(root))

	fmt.Fprint(out, "\n━━ /rewind ━━ every turn left a checkpoint (the state before it):\n")
	if err := run("/rewind"); err != nil {
		return err
	}
	fmt.Fprint(out, "\n━━ /rewind cp2 both ━━ preview going back to before turn 2:\n")
	res, err := s.Exec(ctx, command.Command{Name: "rewind", Target: "cp2"})
	if err != nil {
		return err
	}
	fmt.Fprint(out, printhost.PreviewText(res.Preview))
	fmt.Fprintf(out, "\n━━ %s ━━ confirm it:\n", res.Preview.Command)
	if err := run(res.Preview.Command); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nFiles after the rewind (shell-made renames, deletions, the binary file and the symlink are undone):\n%s", listFiles(root))

	fmt.Fprint(out, "\n━━ /redo ━━ nothing is lost: the abandoned turns and files come back:\n")
	res, err = s.Exec(ctx, command.Command{Name: "redo"})
	if err != nil {
		return err
	}
	fmt.Fprint(out, printhost.PreviewText(res.Preview))
	if err := run(res.Preview.Command); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nFiles after the redo:\n%s", listFiles(root))
	if d.keep {
		fmt.Fprintf(out, "\nDone. The demo is kept in %s. Continue this session interactively with:\n  %s --data-dir %s --session %s\nRemove it with:\n  rm -rf %s\n", dir, self, cmdutil.ShellQuote(dataDir), s.ID(), cmdutil.ShellQuote(dir))
	} else {
		here := self
		if goRun {
			// go -C runs yolop in its source tree: point it back.
			here += ` -C "$PWD"`
		}
		fmt.Fprintf(out, "\nDone. The demo's repository and data directory are removed (keep them with --keep).\nTry it on your own repository: cd into it and run\n  %s\n", here)
		if goRun {
			fmt.Fprintf(out, "(or install it once, from yolop's source tree: go install ./cmd/yolop, then run yolop there)\n")
		}
	}
	return nil
}

func firstLineOf(s string) string {
	f, _, _ := strings.Cut(s, "\n")
	return f
}

func indentLines(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// listFiles prints the tree under root (skipping .git) with modes.
func listFiles(root string) string {
	var lines []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil // a linked worktree's .git file
		}
		if p == root || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		info, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		desc := fmt.Sprintf("%d bytes", info.Size())
		if info.Mode()&os.ModeSymlink != 0 {
			t, _ := os.Readlink(p)
			desc = "symlink → " + t
		} else if info.Mode()&0o111 != 0 {
			desc += ", executable"
		}
		lines = append(lines, fmt.Sprintf("  %-12s %s", rel, desc))
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}
