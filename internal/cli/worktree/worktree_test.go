package worktree

import (
	"testing"

	"github.com/yolop-dev/yolop/internal/cli/clitest"
)

// `yolop worktree` on its own shows its help; an argument is a subcommand
// it does not know.
func TestNewCmdWorktree(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		argv string
		err  string
	}{
		{name: "help", argv: ""},
		{name: "a typo", argv: "prnue", err: `usage: unknown command "prnue" for "yolop worktree": did you mean prune? The commands are list, prune`},
		{name: "no such command", argv: "add", err: `usage: unknown command "add" for "yolop worktree": the commands are list, prune`},
		{name: "unknown flag", argv: "--dry-run", err: "usage: unknown flag: --dry-run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, _ := clitest.Factory(t)
			if err := clitest.Outcome(clitest.Run("yolop", NewCmdWorktree(f), tt.argv)); err != tt.err {
				t.Fatalf("error %q, want %q", err, tt.err)
			}
		})
	}
}

func TestNewCmdList(t *testing.T) {
	t.Parallel()
	for argv, want := range map[string]string{
		"":       "",
		"spares": `usage: yolop worktree list takes no arguments, got "spares"`,
		"--all":  "usage: unknown flag: --all",
		"-a":     "usage: unknown shorthand flag: 'a' in -a",
	} {
		f, _ := clitest.Factory(t)
		if o, err := clitest.Parse(f, "yolop worktree", NewCmdList, argv); err != want || err == "" && (o == nil || o.Ctx == nil) {
			t.Errorf("%q: error %q, want %q", argv, err, want)
		}
	}
}

func TestNewCmdPrune(t *testing.T) {
	t.Parallel()
	type parsed struct{ DryRun, Force, Spares bool }
	tests := []struct {
		name string
		argv string
		want parsed
		err  string
	}{
		{name: "plain", argv: ""},
		{name: "dry run", argv: "--dry-run", want: parsed{DryRun: true}},
		{name: "force", argv: "--force", want: parsed{Force: true}},
		{name: "spares", argv: "--spares", want: parsed{Spares: true}},
		{name: "every flag", argv: "--dry-run --force --spares", want: parsed{true, true, true}},
		{name: "an argument", argv: "old", err: `usage: yolop worktree prune takes no arguments, got "old"`},
		{name: "bad boolean", argv: "--spares=all", err: `usage: invalid argument "all" for "--spares" flag: strconv.ParseBool: parsing "all": invalid syntax`},
		{name: "unknown flag", argv: "--dry", err: "usage: unknown flag: --dry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, _ := clitest.Factory(t)
			o, err := clitest.Parse(f, "yolop worktree", NewCmdPrune, tt.argv)
			if err != tt.err {
				t.Fatalf("error %q, want %q", err, tt.err)
			}
			if err == "" && (parsed{o.DryRun, o.Force, o.Spares}) != tt.want {
				t.Errorf("parsed %+v, want %+v", parsed{o.DryRun, o.Force, o.Spares}, tt.want)
			}
		})
	}
}

func TestNewCmdPrepareSpare(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		argv string
		at   string
		err  string
	}{
		{name: "HEAD", argv: ""},
		{name: "at a commit", argv: "--at v1.2", at: "v1.2"},
		{name: "at without a commit", argv: "--at", err: "usage: flag needs an argument: --at"},
		{name: "an argument", argv: "v1.2", err: `usage: yolop worktree prepare-spare takes no arguments, got "v1.2"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, _ := clitest.Factory(t)
			o, err := clitest.Parse(f, "yolop worktree", NewCmdPrepareSpare, tt.argv)
			if err != tt.err {
				t.Fatalf("error %q, want %q", err, tt.err)
			}
			if err == "" && o.At != tt.at {
				t.Errorf("at %q, want %q", o.At, tt.at)
			}
		})
	}
}
