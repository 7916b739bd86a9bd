package land

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/cli/clitest"
)

// The session argument of diff, apply and commit: at most one, not empty.
func TestSessionArgument(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv, id, err string
	}{
		{argv: "", id: ""},
		{argv: "s_1", id: "s_1"},
		{argv: "s_1 s_2", err: "usage: yolop VERB takes at most one session id, got 2 arguments"},
		{argv: "''", err: "usage: yolop VERB: the session id is empty; `yolop sessions` lists them"},
		{argv: "--nope", err: "usage: unknown flag: --nope"},
	}
	for _, tt := range tests {
		for verb, parse := range map[string]func(t *testing.T, argv string) (*LandOptions, string){
			"diff": func(t *testing.T, argv string) (*LandOptions, string) {
				f, _ := clitest.Factory(t)
				o, err := clitest.Parse(f, "yolop", NewCmdDiff, argv)
				return landOf(o, func(o *DiffOptions) *LandOptions { return &o.LandOptions }), err
			},
			"apply": func(t *testing.T, argv string) (*LandOptions, string) {
				f, _ := clitest.Factory(t)
				o, err := clitest.Parse(f, "yolop", NewCmdApply, argv)
				return landOf(o, func(o *ApplyOptions) *LandOptions { return &o.LandOptions }), err
			},
			"commit": func(t *testing.T, argv string) (*LandOptions, string) {
				f, _ := clitest.Factory(t)
				o, err := clitest.Parse(f, "yolop", NewCmdCommit, argv)
				return landOf(o, func(o *CommitOptions) *LandOptions { return &o.LandOptions }), err
			},
		} {
			t.Run(verb+" "+tt.argv, func(t *testing.T) {
				t.Parallel()
				o, err := parse(t, tt.argv)
				if want := strings.Replace(tt.err, "VERB", verb, 1); err != want {
					t.Fatalf("error %q, want %q", err, want)
				}
				if err == "" && (o.SessionID != tt.id || o.Ctx == nil || o.Open == nil) {
					t.Errorf("session %q, want %q", o.SessionID, tt.id)
				}
			})
		}
	}
}

func landOf[O any](o *O, land func(*O) *LandOptions) *LandOptions {
	if o == nil {
		return nil
	}
	return land(o)
}

func TestNewCmdDiff(t *testing.T) {
	t.Parallel()
	type parsed struct {
		Stat, NameStatus bool
		From             string
	}
	tests := []struct {
		name string
		argv string
		want parsed
		err  string
	}{
		{name: "the patch", argv: ""},
		{name: "stat", argv: "--stat", want: parsed{Stat: true}},
		{name: "name-status", argv: "s_1 --name-status", want: parsed{NameStatus: true}},
		{name: "from", argv: "--from cp2", want: parsed{From: "cp2"}},
		{name: "from with stat", argv: "--from=cp2 --stat", want: parsed{Stat: true, From: "cp2"}},
		{name: "stat and name-status", argv: "--stat --name-status", err: "usage (told): use either --stat or --name-status, not both"},
		{name: "from without a checkpoint", argv: "--from", err: "usage: flag needs an argument: --from"},
		{name: "bad boolean", argv: "--stat=full", err: `usage: invalid argument "full" for "--stat" flag: strconv.ParseBool: parsing "full": invalid syntax`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, _ := clitest.Factory(t)
			o, err := clitest.Parse(f, "yolop", NewCmdDiff, tt.argv)
			if err != tt.err {
				t.Fatalf("error %q, want %q", err, tt.err)
			}
			if err == "" && (parsed{o.Stat, o.NameStatus, o.From}) != tt.want {
				t.Errorf("parsed %+v, want %+v", parsed{o.Stat, o.NameStatus, o.From}, tt.want)
			}
		})
	}
}

func TestNewCmdApply(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	type parsed struct {
		DryRun     bool
		OnConflict string
		To         string
		Undo       bool
		Force      bool
	}
	tests := []struct {
		name string
		argv string
		want parsed
		err  string
	}{
		{name: "apply", argv: "", want: parsed{OnConflict: "refuse"}},
		{name: "dry run", argv: "--dry-run", want: parsed{DryRun: true, OnConflict: "refuse"}},
		{name: "markers", argv: "s_1 --on-conflict markers", want: parsed{OnConflict: "markers"}},
		{name: "refuse", argv: "--on-conflict=refuse --dry-run", want: parsed{DryRun: true, OnConflict: "refuse"}},
		{name: "to a checkout", argv: "--to " + dir, want: parsed{OnConflict: "refuse", To: dir}},
		{name: "undo", argv: "--undo", want: parsed{OnConflict: "refuse", Undo: true}},
		{name: "undo with force", argv: "--undo --force --to " + dir, want: parsed{OnConflict: "refuse", To: dir, Undo: true, Force: true}},
		{name: "bad on-conflict", argv: "--on-conflict theirs", err: `usage (told): --on-conflict must be refuse or markers, not "theirs"`},
		{name: "force without undo", argv: "--force", err: "usage (told): --force only goes with --undo"},
		{name: "undo with dry run", argv: "--undo --dry-run", err: "usage (told): --undo takes no --dry-run or --on-conflict"},
		{name: "undo with markers", argv: "--undo --on-conflict markers", err: "usage (told): --undo takes no --dry-run or --on-conflict"},
		{name: "to nowhere", argv: "--to " + filepath.Join(dir, "gone"), err: "usage (told): --to " + filepath.Join(dir, "gone") + ": no such directory"},
		{name: "to without a directory", argv: "--to", err: "usage: flag needs an argument: --to"},
		{name: "bad boolean", argv: "--undo=yes", err: `usage: invalid argument "yes" for "--undo" flag: strconv.ParseBool: parsing "yes": invalid syntax`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, _ := clitest.Factory(t)
			o, err := clitest.Parse(f, "yolop", NewCmdApply, tt.argv)
			if err != tt.err {
				t.Fatalf("error %q, want %q", err, tt.err)
			}
			if err == "" {
				if got := (parsed{o.DryRun, o.OnConflict, o.To, o.Undo, o.Force}); got != tt.want {
					t.Errorf("parsed %+v, want %+v", got, tt.want)
				}
			}
		})
	}
}

func TestNewCmdCommit(t *testing.T) {
	t.Parallel()
	type parsed struct {
		Message  string
		NoVerify bool
	}
	tests := []struct {
		name string
		argv string
		want parsed
		err  string
	}{
		{name: "the default message", argv: ""},
		{name: "a message", argv: "-m 'Validate the input'", want: parsed{Message: "Validate the input"}},
		{name: "a long message", argv: "s_1 --message=fix", want: parsed{Message: "fix"}},
		{name: "no-verify", argv: "--no-verify", want: parsed{NoVerify: true}},
		{name: "m without a message", argv: "-m", err: "usage: flag needs an argument: 'm' in -m"},
		{name: "unknown shorthand", argv: "-a", err: "usage: unknown shorthand flag: 'a' in -a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, _ := clitest.Factory(t)
			o, err := clitest.Parse(f, "yolop", NewCmdCommit, tt.argv)
			if err != tt.err {
				t.Fatalf("error %q, want %q", err, tt.err)
			}
			if err == "" && (parsed{o.Message, o.NoVerify}) != tt.want {
				t.Errorf("parsed %+v, want %+v", parsed{o.Message, o.NoVerify}, tt.want)
			}
		})
	}
}
