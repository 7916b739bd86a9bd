package command

import (
	"errors"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/checkpoint"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Command
		err  bool
	}{
		{in: "/rewind", want: Command{Name: "rewind"}},
		{in: "/rewind --all", want: Command{Name: "rewind", All: true}},
		{in: "/rewind 3", want: Command{Name: "rewind", Target: "cp3"}},
		{in: "/rewind cp2 workspace", want: Command{Name: "rewind", Target: "cp2", Mode: checkpoint.ModeWorkspace}},
		{in: "/rewind CP2 files", want: Command{Name: "rewind", Target: "cp2", Mode: checkpoint.ModeWorkspace}},
		{in: "/rewind cp2 both --confirm k3F9x2", want: Command{Name: "rewind", Target: "cp2", Mode: checkpoint.ModeBoth, Token: "k3F9x2", Confirm: true}},
		{in: "  /undo --confirm=ab_c-1\n", want: Command{Name: "undo", Token: "ab_c-1", Confirm: true}},
		{in: "/redo", want: Command{Name: "redo"}},
		{in: "/tasks stop t1", want: Command{Name: "tasks", Verb: "stop", TaskID: "t1"}},
		{in: "/compact", want: Command{Name: "compact"}},
		{in: "/nope", err: true},
		{in: "/", err: true},
		{in: "/rewind cp0", err: true},
		{in: "/rewind ../x", err: true},
		{in: "/rewind cp2 sideways", err: true},
		{in: "/rewind cp2 both extra", err: true},
		{in: "/rewind --confirm abc", err: true},
		{in: "/rewind cp2 --confirm", err: true},
		{in: "/rewind cp2 --confirm a;b", err: true},
		{in: "/undo cp2", err: true},
		{in: "/undo --force", err: true},
		{in: "/compact now", err: true},
		{in: "/rewind\nmore text", err: true},
		{in: "hello", err: true},
	} {
		got, err := Parse(tc.in)
		if tc.err {
			var ue *UsageError
			if !errors.As(err, &ue) {
				t.Errorf("Parse(%q) = %+v, %v; want usage error", tc.in, got, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		got.Raw = ""
		if got != tc.want {
			t.Errorf("Parse(%q) = %+v; want %+v", tc.in, got, tc.want)
		}
	}
}

func TestRegistryHosts(t *testing.T) {
	t.Parallel()
	acp := map[string]bool{}
	for _, d := range For(HostACP) {
		acp[d.Name] = true
	}
	for _, n := range []string{"rewind", "undo", "redo", "compact"} {
		if !acp[n] {
			t.Errorf("ACP must offer /%s", n)
		}
	}
	if acp["clear"] || acp["quit"] {
		t.Error("TUI-only commands must not be offered over ACP")
	}
}

func TestUnknownCommandSuggests(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"/rewnd": "did you mean /rewind?", "/redo2": "did you mean /redo?", "/undoo": "did you mean /undo?"} {
		_, err := Parse(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v; want it to suggest %q", in, err, want)
		}
	}
	if _, err := Parse("/xyzzy"); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("Parse(/xyzzy) = %v; want no suggestion", err)
	}
}

func TestIsCommand(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		"/rewind":                          true,
		"/rewind cp2 both":                 true,
		"/rewnd":                           true, // a command, unknown: the parser suggests /rewind
		"/undo\n":                          true,
		"/compact-now":                     true,
		"/usr/bin/foo crashes, please fix": false,
		"/src/main.go:12 panics":           false,
		"//rewind is a word I like":        false,
		" /rewind":                         false,
		"/Rewind":                          false,
		"/9lives":                          false,
		"fix /rewind":                      false,
		"":                                 false,
		"/":                                false,
		"/rewind\tcp2":                     true,
		"/help\nand then some text":        true,
	} {
		if got := IsCommand(in); got != want {
			t.Errorf("IsCommand(%q) = %v, want %v", in, got, want)
		}
	}
	for in, want := range map[string]string{"//text": "/text", "///x": "//x", "/usr/bin": "/usr/bin", "plain": "plain"} {
		if got := Prompt(in); got != want {
			t.Errorf("Prompt(%q) = %q, want %q", in, got, want)
		}
	}
}
