package sessions

import (
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/cli/clitest"
)

// `yolop sessions` on its own lists; an argument is a subcommand it does
// not know.
func TestNewCmdSessions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		argv string
		err  string
	}{
		{name: "lists", argv: ""},
		{name: "a typo", argv: "shwo", err: `usage: unknown command "shwo" for "yolop sessions": did you mean show? The commands are fork, list, rm, search, show`},
		{name: "no such command", argv: "zap", err: `usage: unknown command "zap" for "yolop sessions": the commands are fork, list, rm, search, show`},
		{name: "unknown flag", argv: "--all", err: "usage: unknown flag: --all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, _ := clitest.Factory(t)
			got, err := clitest.Parse(f, "yolop", NewCmdSessions, tt.argv)
			if err != tt.err {
				t.Fatalf("error %q, want %q", err, tt.err)
			}
			if err == "" && got == nil {
				t.Fatal("the listing did not run")
			}
		})
	}
}

func TestNewCmdList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		argv string
		err  string
	}{
		{name: "no arguments", argv: ""},
		{name: "an argument", argv: "s_1", err: `usage: yolop sessions list takes no arguments, got "s_1"`},
		{name: "unknown flag", argv: "--limit 3", err: "usage: unknown flag: --limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, _ := clitest.Factory(t)
			got, err := clitest.Parse(f, "yolop sessions", NewCmdList, tt.argv)
			if err != tt.err {
				t.Fatalf("error %q, want %q", err, tt.err)
			}
			if err == "" && got == nil {
				t.Fatal("the run function was not reached")
			}
		})
	}
}

// The session argument of show, rm and fork: exactly one, not empty.
func TestSessionArgument(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv string
		id   string
		err  string
	}{
		{argv: "s_1", id: "s_1"},
		{argv: "", err: "usage: yolop sessions VERB needs a session id; `yolop sessions` lists them"},
		{argv: "s_1 s_2", err: "usage: yolop sessions VERB takes one session id, got 2 arguments"},
		{argv: "''", err: "usage: yolop sessions VERB: the session id is empty; `yolop sessions` lists them"},
		{argv: "--nope s_1", err: "usage: unknown flag: --nope"},
	}
	for _, tt := range tests {
		t.Run(tt.argv, func(t *testing.T) {
			t.Parallel()
			for verb, parse := range map[string]func(string) (string, string){
				"show": func(argv string) (string, string) {
					f, _ := clitest.Factory(t)
					o, err := clitest.Parse(f, "yolop sessions", NewCmdShow, argv)
					return idOf(o, func(o *ShowOptions) string { return o.SessionID }), err
				},
				"rm": func(argv string) (string, string) {
					f, _ := clitest.Factory(t)
					o, err := clitest.Parse(f, "yolop sessions", NewCmdRm, argv)
					return idOf(o, func(o *RmOptions) string { return o.SessionID }), err
				},
				"fork": func(argv string) (string, string) {
					f, _ := clitest.Factory(t)
					o, err := clitest.Parse(f, "yolop sessions", NewCmdFork, argv)
					return idOf(o, func(o *ForkOptions) string { return o.SessionID }), err
				},
			} {
				id, err := parse(tt.argv)
				if want := strings.Replace(tt.err, "VERB", verb, 1); err != want || id != tt.id {
					t.Errorf("%s: id %q, error %q; want %q, %q", verb, id, err, tt.id, want)
				}
			}
		})
	}
}

func idOf[O any](o *O, id func(*O) string) string {
	if o == nil {
		return ""
	}
	return id(o)
}

func TestNewCmdRm(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		argv  string
		force bool
		err   string
	}{
		{name: "plain", argv: "s_1"},
		{name: "force", argv: "s_1 --force", force: true},
		{name: "force before the id", argv: "--force s_1", force: true},
		{name: "force=false", argv: "--force=false s_1"},
		{name: "bad boolean", argv: "--force=yes s_1", err: `usage: invalid argument "yes" for "--force" flag: strconv.ParseBool: parsing "yes": invalid syntax`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, _ := clitest.Factory(t)
			got, err := clitest.Parse(f, "yolop sessions", NewCmdRm, tt.argv)
			if err != tt.err {
				t.Fatalf("error %q, want %q", err, tt.err)
			}
			if err == "" && (got.SessionID != "s_1" || got.Force != tt.force || got.Ctx == nil) {
				t.Errorf("options %+v, want s_1 with force %v", *got, tt.force)
			}
		})
	}
}

func TestNewCmdSearch(t *testing.T) {
	t.Parallel()
	type parsed struct {
		Query                           string
		Repo, All, AbandonedOnly, Regex bool
		Limit                           int
	}
	tests := []struct {
		name string
		argv string
		want parsed
		err  string
	}{
		{name: "a query", argv: "parser", want: parsed{Query: "parser", Limit: 200}},
		{name: "a query with spaces", argv: "'fix the parser'", want: parsed{Query: "fix the parser", Limit: 200}},
		{name: "every flag", argv: "--repo --all --abandoned-only --regex --limit 0 'fix(ed)?'", want: parsed{Query: "fix(ed)?", Repo: true, All: true, AbandonedOnly: true, Regex: true}},
		{name: "limit", argv: "--limit=5 x", want: parsed{Query: "x", Limit: 5}},
		{name: "a query like a flag", argv: "-- --limit", want: parsed{Query: "--limit", Limit: 200}},
		{name: "no query", argv: "", err: "usage: sessions search takes one QUERY (quote it when it has spaces), got 0 arguments"},
		{name: "an unquoted query", argv: "fix the parser", err: "usage: sessions search takes one QUERY (quote it when it has spaces), got 3 arguments"},
		{name: "bad limit", argv: "--limit ten x", err: `usage: invalid argument "ten" for "--limit" flag: strconv.ParseInt: parsing "ten": invalid syntax`},
		{name: "limit without a value", argv: "x --limit", err: "usage: flag needs an argument: --limit"},
		{name: "unknown flag", argv: "--case x", err: "usage: unknown flag: --case"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, _ := clitest.Factory(t)
			o, err := clitest.Parse(f, "yolop sessions", NewCmdSearch, tt.argv)
			if err != tt.err {
				t.Fatalf("error %q, want %q", err, tt.err)
			}
			if err != "" {
				return
			}
			if got := (parsed{o.Query, o.Repo, o.All, o.AbandonedOnly, o.Regex, o.Limit}); got != tt.want {
				t.Errorf("parsed %+v, want %+v", got, tt.want)
			}
		})
	}
}
