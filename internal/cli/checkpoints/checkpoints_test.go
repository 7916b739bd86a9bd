package checkpoints

import (
	"testing"

	"github.com/yolop-dev/yolop/internal/cli/clitest"
)

func TestNewCmdCheckpoints(t *testing.T) {
	t.Parallel()
	type parsed struct {
		SessionID     string
		All, Branches bool
	}
	tests := []struct {
		name string
		argv string
		want parsed
		err  string
	}{
		{name: "the latest session", argv: ""},
		{name: "a session", argv: "s_1", want: parsed{SessionID: "s_1"}},
		{name: "all", argv: "s_1 --all", want: parsed{SessionID: "s_1", All: true}},
		{name: "branches", argv: "--branches", want: parsed{Branches: true}},
		{name: "all and branches", argv: "s_1 --all --branches", err: "usage (told): use either --all or --branches, not both"},
		{name: "two sessions", argv: "s_1 s_2", err: "usage: yolop checkpoints takes at most one session id, got 2 arguments"},
		{name: "an empty session id", argv: "''", err: "usage: yolop checkpoints: the session id is empty; `yolop sessions` lists them"},
		{name: "bad boolean", argv: "--all=2", err: `usage: invalid argument "2" for "--all" flag: strconv.ParseBool: parsing "2": invalid syntax`},
		{name: "unknown flag", argv: "--branch", err: "usage: unknown flag: --branch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, _ := clitest.Factory(t)
			o, err := clitest.Parse(f, "yolop", NewCmdCheckpoints, tt.argv)
			if err != tt.err {
				t.Fatalf("error %q, want %q", err, tt.err)
			}
			if err != "" {
				return
			}
			if got := (parsed{o.SessionID, o.All, o.Branches}); got != tt.want {
				t.Errorf("parsed %+v, want %+v", got, tt.want)
			}
		})
	}
}
