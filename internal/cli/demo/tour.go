package demo

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/command"
	printhost "github.com/yolop-dev/yolop/internal/host/print"
	"github.com/yolop-dev/yolop/internal/provider"
)

// demoTurns are sim-provider prompts: edits through the file tools and
// through shell commands, a deletion, a rename and a binary file.
var demoTurns = []string{
	"write notes.md\n# Plan\n- parse the config\nEOF\n$ printf 'version=1\\n' > app.conf\nStarted the plan and a config file.",
	"$ sed -i 's/parse/validate/' notes.md && mv README.md GUIDE.md\n$ chmod +x GUIDE.md\nRenamed the readme and reworded the plan with shell commands.",
	"rm app.conf\n$ printf 'PK\\003\\004\\000\\001binary' > bundle.zip && ln -s GUIDE.md LINK\nDeleted the config, added a binary file and a symlink.",
}

// tour is the demo's session and what its steps print.
type tour struct {
	opts         *DemoOptions
	out          io.Writer
	s            *app.Session
	dir, dataDir string
	self         string // how to run this yolop again
	goRun        bool   // self is `go run`
}

// runTour opens the demo's session in repo and runs the tour: the turns,
// a rewind and a redo.
func runTour(opts *DemoOptions, dir, dataDir, repo string) error {
	s, err := opts.Open(opts.Ctx, app.Env{DataDir: dataDir, Dir: repo, Provider: provider.Config{Provider: provider.NameSim}}, app.New{})
	if err != nil {
		return err
	}
	defer s.Close()
	t := &tour{opts: opts, out: opts.IO.Out, s: s, dir: dir, dataDir: dataDir}
	t.self, t.goRun = selfCommand()
	for i, p := range demoTurns {
		fmt.Fprintf(t.out, "\n━━ Turn %d ━━ prompt:\n%s\n\n", i+1, indentLines(p))
		if err := t.run(p); err != nil {
			return err
		}
	}
	root := s.Info().ActiveRoot
	fmt.Fprintf(t.out, "\nThe session works in its own worktree %s (branch %s); your checkout is untouched.\nFiles now:\n%s", root, s.Info().Branch, listFiles(root))
	if err := t.rewindAndRedo(root); err != nil {
		return err
	}
	t.outro()
	return nil
}

// run runs one prompt or slash command as print mode does.
func (t *tour) run(prompt string) error {
	prefix := t.self + " --data-dir " + cmdutil.ShellQuote(t.dataDir) + " --session " + t.s.ID()
	if code := printhost.Run(t.opts.Ctx, t.s, printhost.Options{Prompt: prompt, Stdout: t.out, Stderr: t.out, ConfirmPrefix: prefix}); code != "" {
		return cmdutil.ToldAfter(code, fmt.Errorf("demo step %q failed", firstLineOf(prompt)))
	}
	return nil
}

// rewindAndRedo lists the checkpoints, rewinds to before turn 2 and redoes
// it, each restore previewed and then confirmed.
func (t *tour) rewindAndRedo(root string) error {
	fmt.Fprint(t.out, "\n━━ /rewind ━━ every turn left a checkpoint (the state before it):\n")
	if err := t.run("/rewind"); err != nil {
		return err
	}
	fmt.Fprint(t.out, "\n━━ /rewind cp2 both ━━ preview going back to before turn 2:\n")
	res, err := t.s.Exec(t.opts.Ctx, command.Command{Name: "rewind", Target: "cp2"})
	if err != nil {
		return err
	}
	fmt.Fprint(t.out, printhost.PreviewText(res.Preview))
	fmt.Fprintf(t.out, "\n━━ %s ━━ confirm it:\n", res.Preview.Command)
	if err := t.run(res.Preview.Command); err != nil {
		return err
	}
	fmt.Fprintf(t.out, "\nFiles after the rewind (shell-made renames, deletions, the binary file and the symlink are undone):\n%s", listFiles(root))

	fmt.Fprint(t.out, "\n━━ /redo ━━ nothing is lost: the abandoned turns and files come back:\n")
	res, err = t.s.Exec(t.opts.Ctx, command.Command{Name: "redo"})
	if err != nil {
		return err
	}
	fmt.Fprint(t.out, printhost.PreviewText(res.Preview))
	if err := t.run(res.Preview.Command); err != nil {
		return err
	}
	fmt.Fprintf(t.out, "\nFiles after the redo:\n%s", listFiles(root))
	return nil
}

// outro says where the demo is kept and how to continue it, or how to try
// yolop on the user's own repository.
func (t *tour) outro() {
	if t.opts.Keep {
		fmt.Fprintf(t.out, "\nDone. The demo is kept in %s. Continue this session interactively with:\n  %s --data-dir %s --session %s\nRemove it with:\n  rm -rf %s\n", t.dir, t.self, cmdutil.ShellQuote(t.dataDir), t.s.ID(), cmdutil.ShellQuote(t.dir))
		return
	}
	here := t.self
	if t.goRun {
		// go -C runs yolop in its source tree: point it back.
		here += ` -C "$PWD"`
	}
	fmt.Fprintf(t.out, "\nDone. The demo's repository and data directory are removed (keep them with --keep).\nTry it on your own repository: cd into it and run\n  %s\n", here)
	if t.goRun {
		fmt.Fprintf(t.out, "(or install it once, from yolop's source tree: go install ./cmd/yolop, then run yolop there)\n")
	}
}

func firstLineOf(s string) string {
	f, _, _ := strings.Cut(s, "\n")
	return f
}

func indentLines(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// listFiles prints the tree under root (skipping .git) with modes. A file
// that cannot be read is left out: the listing only illustrates the tour.
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
