package cmdutil

import (
	"strings"

	"github.com/spf13/cobra"
)

// NoArgs rejects arguments: a command with subcommands names the one it
// does not know.
func NoArgs(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if c.HasSubCommands() {
		if s := Suggest(c, args[0]); len(s) > 0 {
			return Usagef("unknown command %q for %q: did you mean %s? The commands are %s", args[0], c.CommandPath(), s[0], subcommandNames(c))
		}
		return Usagef("unknown command %q for %q: the commands are %s", args[0], c.CommandPath(), subcommandNames(c))
	}
	return Usagef("%s takes no arguments, got %q", c.CommandPath(), args[0])
}

// SessionArg requires exactly one session id.
func SessionArg(c *cobra.Command, args []string) error {
	switch {
	case len(args) == 0:
		return Usagef("%s needs a session id; `yolop sessions` lists them", c.CommandPath())
	case len(args) > 1:
		return Usagef("%s takes one session id, got %d arguments", c.CommandPath(), len(args))
	case args[0] == "":
		return Usagef("%s: the session id is empty; `yolop sessions` lists them", c.CommandPath())
	}
	return nil
}

// OptionalSessionArg accepts at most one session id: without one, the
// command works on the latest session of this repository (OpenOrLatest).
func OptionalSessionArg(c *cobra.Command, args []string) error {
	switch {
	case len(args) > 1:
		return Usagef("%s takes at most one session id, got %d arguments", c.CommandPath(), len(args))
	case len(args) == 1 && args[0] == "":
		return Usagef("%s: the session id is empty; `yolop sessions` lists them", c.CommandPath())
	}
	return nil
}

// Suggest names the subcommands of c that name is a typo of (at most two
// edits away, or a prefix).
func Suggest(c *cobra.Command, name string) []string {
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2
	}
	return c.SuggestionsFor(name)
}

func subcommandNames(c *cobra.Command) string {
	var names []string
	for _, sc := range c.Commands() {
		if sc.IsAvailableCommand() {
			names = append(names, sc.Name())
		}
	}
	return strings.Join(names, ", ")
}
