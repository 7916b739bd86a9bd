package command

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/checkpoint"
)

var cpIDRE = regexp.MustCompile(`^cp[1-9][0-9]*$`)

// FuzzParse: the slash-command parser reads whatever a user (or a script,
// or an ACP client) types. It must never panic, every refusal must be a
// *UsageError (hosts map exactly that to exit code 2), and every accepted
// command must be well formed and survive a round trip through its
// canonical spelling.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"/rewind", "/rewind --all", "/rewind 3", "/rewind cp3 both", "/rewind CP12 files --confirm k3F9x2",
		"/rewind cp2 workspace --confirm=abc_-9", "/undo", "/undo -y tok", "/redo --confirm t", "/help",
		"/tasks", "/tasks stop bg1", "/compact", "  /rewind cp1 conversation  \n", "/rewind\n\nmore",
		"/usr/bin/foo", "//text", "/", "/rewind cp0", "/rewind --confirm", "/rewind cp1 both extra",
		"/Rewind cp1", "/rewind cp1 --confirm a/b", "/undo\t-y\ttok", "/rewind\u00a0cp1", "/rewind 99999999999999999999",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		c, err := Parse(line)
		if err != nil {
			var ue *UsageError
			if !errors.As(err, &ue) {
				t.Fatalf("Parse(%q) failed with %T %v; every refusal must be a usage error", line, err, err)
			}
			if c != (Command{}) {
				t.Fatalf("Parse(%q) failed but returned %+v", line, c)
			}
			if strings.TrimSpace(ue.Msg) == "" {
				t.Fatalf("Parse(%q) refused without saying why", line)
			}
			return
		}
		if _, ok := Lookup(c.Name); !ok {
			t.Fatalf("Parse(%q) accepted unknown command %q", line, c.Name)
		}
		if c.Name != strings.ToLower(c.Name) {
			t.Fatalf("Parse(%q): name %q is not lowercase", line, c.Name)
		}
		if c.Confirm != (c.Token != "") || (c.Confirm && !tokenRE.MatchString(c.Token)) {
			t.Fatalf("Parse(%q): confirm %v with token %q", line, c.Confirm, c.Token)
		}
		if c.Target != "" && !cpIDRE.MatchString(c.Target) {
			t.Fatalf("Parse(%q): target %q is not a checkpoint id", line, c.Target)
		}
		if c.Mode != "" {
			if m, err := checkpoint.ParseMode(string(c.Mode)); err != nil || m != c.Mode {
				t.Fatalf("Parse(%q): mode %q is not canonical", line, c.Mode)
			}
		}
		if c.Target == "" && (c.Mode != "" || (c.Name == "rewind" && c.Confirm)) {
			t.Fatalf("Parse(%q): a mode or confirmation without a target: %+v", line, c)
		}
		if strings.ContainsAny(c.Raw, "\n") {
			t.Fatalf("Parse(%q): raw %q spans lines", line, c.Raw)
		}
		if r := c.Request(); r.Action == "" {
			t.Fatalf("Parse(%q): request %+v has no action", line, r)
		}

		again, err := Parse(canonical(c))
		if err != nil {
			t.Fatalf("Parse(%q) = %+v, but its canonical form %q is refused: %v", line, c, canonical(c), err)
		}
		again.Raw, c.Raw = "", ""
		if again != c {
			t.Fatalf("round trip of %q changed the command:\n%+v\n%+v", line, c, again)
		}
	})
}

// canonical spells a parsed command the way a preview's confirm line does.
func canonical(c Command) string {
	parts := []string{"/" + c.Name}
	if c.Verb != "" {
		parts = append(parts, c.Verb, c.TaskID)
	}
	if c.Target != "" {
		parts = append(parts, c.Target)
	}
	if c.Mode != "" {
		parts = append(parts, string(c.Mode))
	}
	if c.All {
		parts = append(parts, "--all")
	}
	if c.Confirm {
		parts = append(parts, "--confirm", c.Token)
	}
	return strings.Join(parts, " ")
}
