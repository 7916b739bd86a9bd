package root

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/buildinfo"
	"github.com/yolop-dev/yolop/internal/cli/clitest"
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
)

// parsed is what the root's flags and the global ones set.
type parsed struct {
	Print                 string
	PrintSet              bool
	SessionID             string
	Continue, Resume, ACP bool
	Worktree              string
	WorktreeSet           bool
	Workspace             string
	InPlace               bool
	Mode                  string
	ModeExplicit          bool
	Global                cmdutil.GlobalFlags
}

// p is a parse of the common case: one turn with -p x, default flags.
func p(change func(*parsed)) parsed {
	w := parsed{Print: "x", PrintSet: true, Worktree: "always", Global: cmdutil.GlobalFlags{OutputFormat: "text"}}
	if change != nil {
		change(&w)
	}
	return w
}

func TestNewCmdRoot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name     string
		argv     string
		terminal bool   // stdin and stdout are terminals
		mode     string // the settings' [workspace] mode
		modeErr  error  // the settings cannot be read
		want     parsed
		err      string
	}{
		{name: "the terminal UI", argv: "", terminal: true, want: p(func(w *parsed) { w.Print, w.PrintSet = "", false })},
		{name: "the terminal UI without a terminal", argv: "", err: "usage (told): the terminal UI needs a terminal (stdin and stdout are not); use -p PROMPT, or -p - to read the prompt from stdin"},
		{name: "one turn", argv: "-p x", want: p(nil)},
		{name: "a prompt with spaces", argv: "--print 'fix the test'", want: p(func(w *parsed) { w.Print = "fix the test" })},
		{name: "the prompt from stdin", argv: "--print=-", want: p(func(w *parsed) { w.Print = "-" })},
		{name: "an empty prompt parses", argv: "-p ''", want: p(func(w *parsed) { w.Print = "" })},
		{name: "a session", argv: "--session s_1 -p x", want: p(func(w *parsed) { w.SessionID = "s_1" })},
		{name: "an empty session id", argv: "--session '' -p x", err: "usage (told): --session: invalid session id \"\": expected something like s_01jf…; `yolop sessions` lists the ids"},
		{name: "a bad session id", argv: "--session ../s -p x", err: "usage (told): --session: invalid session id \"../s\": only letters, digits, '_' and '-' are allowed; `yolop sessions` lists the ids"},
		{name: "continue", argv: "-c -p x", want: p(func(w *parsed) { w.Continue = true })},
		{name: "session and continue", argv: "--continue --session s_1 -p x", err: "usage: use either --session or --continue, not both"},
		{name: "resume", argv: "-r", terminal: true, want: p(func(w *parsed) { w.Print, w.PrintSet, w.Resume = "", false, true })},
		{name: "resume without a terminal", argv: "--resume", err: "usage (told): the session picker (-r) needs a terminal (stdin and stdout are not); use -p PROMPT, or -p - to read the prompt from stdin"},
		{name: "resume and continue", argv: "-r -c", terminal: true, err: "usage: --resume opens a session picker in the terminal UI; it cannot be combined with --session, --continue, -p or --acp"},
		{name: "resume and print", argv: "-r -p x", err: "usage: --resume opens a session picker in the terminal UI; it cannot be combined with --session, --continue, -p or --acp"},
		{name: "acp", argv: "--acp", want: p(func(w *parsed) { w.Print, w.PrintSet, w.ACP = "", false, true })},
		{name: "acp and print", argv: "--acp -p x", err: "usage: --acp serves an editor; it cannot be combined with -p, --session or --continue"},
		{name: "acp and a session", argv: "--acp --session s_1", err: "usage: --acp serves an editor; it cannot be combined with -p, --session or --continue"},
		{name: "the provider flags", argv: "--provider openai --model gpt-x --base-url http://localhost:1 -p x", want: p(func(w *parsed) {
			w.Global.Provider = cmdutil.ProviderFlags{Name: "openai", Model: "gpt-x", BaseURL: "http://localhost:1"}
		})},
		{name: "worktree off", argv: "--worktree off -p x", want: p(func(w *parsed) { w.Worktree, w.WorktreeSet, w.Mode = "off", true, "in-place" })},
		{name: "worktree always", argv: "--worktree=always -p x", want: p(func(w *parsed) { w.WorktreeSet, w.Mode = true, "worktree" })},
		{name: "a bad worktree", argv: "--worktree never -p x", err: `usage: --worktree must be always or off, not "never"`},
		{name: "workspace", argv: "--workspace none -p x", want: p(func(w *parsed) { w.Workspace, w.Mode, w.ModeExplicit = "none", "none", true })},
		{name: "a bad workspace", argv: "--workspace here -p x", err: `usage (told): --workspace must be worktree, in-place or none, not "here"`},
		{name: "in place", argv: "--in-place -p x", want: p(func(w *parsed) { w.InPlace, w.Mode, w.ModeExplicit = true, "in-place", true })},
		{name: "in place and workspace in-place", argv: "--in-place --workspace in-place -p x", want: p(func(w *parsed) {
			w.InPlace, w.Workspace, w.Mode, w.ModeExplicit = true, "in-place", "in-place", true
		})},
		{name: "in place and another workspace", argv: "--in-place --workspace none -p x", err: "usage (told): --in-place and --workspace none say different things; use one"},
		{name: "worktree and workspace disagree", argv: "--worktree off --workspace worktree -p x", err: "usage (told): --worktree off and --workspace worktree say different things; use --workspace"},
		{name: "worktree and workspace agree", argv: "--worktree off --workspace in-place -p x", want: p(func(w *parsed) {
			w.Worktree, w.WorktreeSet, w.Workspace, w.Mode, w.ModeExplicit = "off", true, "in-place", "in-place", true
		})},
		{name: "the settings' mode", argv: "-p x", mode: "in-place", want: p(func(w *parsed) { w.Mode = "in-place" })},
		{name: "unreadable settings", argv: "-p x", modeErr: errors.New("settings s.toml: line 1: bad"), err: "usage (told): settings s.toml: line 1: bad"},
		{name: "sandbox", argv: "--sandbox strict -p x", want: p(func(w *parsed) { w.Global.Sandbox = "strict" })},
		{name: "a bad sandbox", argv: "--sandbox tight -p x", err: `usage: --sandbox must be off, write or strict, not "tight"`},
		{name: "json", argv: "--output-format json -p x", want: p(func(w *parsed) { w.Global.OutputFormat = "json" })},
		{name: "a bad output format", argv: "--output-format yaml -p x", err: `usage: --output-format must be text or json, not "yaml"`},
		{name: "a directory", argv: "-C " + dir + " -p x", want: p(func(w *parsed) { w.Global.Dir = dir })},
		{name: "no such directory", argv: "--cd " + filepath.Join(dir, "gone") + " -p x", err: "usage: -C " + filepath.Join(dir, "gone") + ": no such directory"},
		{name: "a data directory", argv: "--data-dir rel/data -p x", want: p(func(w *parsed) { w.Global.DataDir = "rel/data" })},
		{name: "an unquoted prompt", argv: "-p fix the test", err: `usage: unexpected argument "the" after the prompt: quote a prompt that has spaces, e.g. yolop -p 'fix the failing test'`},
		{name: "a prompt without -p", argv: "'fix the test'", err: `usage: unknown command "fix the test": to send it as a prompt, use yolop -p 'fix the test' (or start yolop and type it)`},
		{name: "a typo of a command", argv: "sesions", err: `usage: unknown command "sesions": did you mean sessions? (see the commands in yolop --help)`},
		{name: "an unknown command", argv: "frobnicate", err: `usage: unknown command "frobnicate": see the commands in yolop --help`},
		{name: "unknown flag", argv: "--yes -p x", err: "usage: unknown flag: --yes"},
		{name: "print without a prompt", argv: "-p", err: "usage: flag needs an argument: 'p' in -p"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, cfg := clitest.Factory(t)
			cfg.Mode, cfg.ModeErr = tt.mode, tt.modeErr
			f.IO.SetTerminal(tt.terminal, tt.terminal)
			var o *RootOptions
			err := clitest.Outcome(clitest.Exec(NewCmdRoot(f, func(opts *RootOptions) error { o = opts; return nil }), tt.argv))
			if err != tt.err {
				t.Fatalf("error %q, want %q", err, tt.err)
			}
			if err != "" {
				return
			}
			got := parsed{o.Print, o.PrintSet, o.SessionID, o.Continue, o.Resume, o.ACP, o.Worktree, o.WorktreeSet, o.Workspace, o.InPlace, o.Mode, o.ModeExplicit, *o.Flags}
			if got != tt.want {
				t.Errorf("parsed\n%+v\nwant\n%+v", got, tt.want)
			}
			if o.Ctx == nil {
				t.Error("no context")
			}
		})
	}
}

// The global flags reach every subcommand through the factory, checked
// before it runs.
func TestGlobalFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name string
		argv string
		want cmdutil.GlobalFlags
		out  string
		err  string
	}{
		{name: "every global flag", argv: "version --output-format json -C " + dir + " --data-dir d --sandbox off", want: cmdutil.GlobalFlags{OutputFormat: "json", Dir: dir, DataDir: "d", Sandbox: "off"}, out: `{"version":"` + buildinfo.Version() + `"}` + "\n"},
		{name: "before the command", argv: "--output-format=json version", want: cmdutil.GlobalFlags{OutputFormat: "json"}, out: `{"version":"` + buildinfo.Version() + `"}` + "\n"},
		{name: "--version", argv: "--version", want: cmdutil.GlobalFlags{OutputFormat: "text"}, out: "yolop " + buildinfo.Version() + "\n"},
		{name: "a bad output format", argv: "sessions --output-format xml", want: cmdutil.GlobalFlags{OutputFormat: "text"}, err: `usage: --output-format must be text or json, not "xml"`},
		{name: "no such directory", argv: "worktree list -C " + filepath.Join(dir, "gone"), err: "usage: -C " + filepath.Join(dir, "gone") + ": no such directory"},
		{name: "demo has no JSON", argv: "demo --output-format json", err: "usage: yolop demo has no JSON output; run it without --output-format json"},
		{name: "completion has no JSON", argv: "completion bash --output-format json", err: "usage: yolop completion bash has no JSON output; run it without --output-format json"},
		{name: "help has no JSON", argv: "help --output-format json", err: "usage: yolop help has no JSON output; run it without --output-format json"},
		{name: "completion", argv: "completion zsh --no-descriptions", want: cmdutil.GlobalFlags{OutputFormat: "text"}, out: "#compdef yolop"},
		{name: "root flags stay the root's", argv: "sessions --provider openai", err: "usage: unknown flag: --provider"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, _ := clitest.Factory(t)
			err := clitest.Outcome(clitest.Exec(NewCmdRoot(f, func(*RootOptions) error { t.Error("the root ran"); return nil }), tt.argv))
			if err != tt.err {
				t.Fatalf("error %q, want %q", err, tt.err)
			}
			if out := f.IO.Out.(*bytes.Buffer).String(); !strings.Contains(out, tt.out) {
				t.Errorf("stdout %q, want it to hold %q", out, tt.out)
			}
			if err == "" || strings.Contains(tt.name, "output format") {
				if *f.Flags != tt.want {
					t.Errorf("global flags %+v, want %+v", *f.Flags, tt.want)
				}
			}
		})
	}
}
