package cmdutil

import (
	"path/filepath"
	"strings"

	"github.com/yolop-dev/yolop/internal/config"
)

// GlobalFlags are the flags every command shares (--output-format, -C,
// --data-dir, --sandbox), which the root parses once before any command
// runs, and the root's provider flags, which the factory's provider reads.
type GlobalFlags struct {
	OutputFormat string // text or json
	Dir          string // -C: run as if started here ("" = the current directory)
	DataDir      string // --data-dir as given ("" = the environment's)
	Sandbox      string // --sandbox ("" = the settings' level)
	Provider     ProviderFlags
}

// ProviderFlags are --provider, --model and --base-url. Only the root
// command has them: for every subcommand they are empty and the provider
// comes from the settings and the environment.
type ProviderFlags struct {
	Name, Model, BaseURL string
}

// JSON reports whether the result is printed as JSON.
func (g *GlobalFlags) JSON() bool { return g.OutputFormat == "json" }

// SessionCommand is the command line that reaches session id again, from
// any directory.
func (g *GlobalFlags) SessionCommand(id string) string {
	prefix := "yolop"
	if d := g.DataDir; d != "" {
		// Absolute: the command must work from any directory.
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		prefix += " --data-dir " + ShellQuote(d)
	}
	return prefix + " --session " + id
}

// ShellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// CheckSandbox checks --sandbox ("" is the settings' level).
func (g *GlobalFlags) CheckSandbox() error {
	if g.Sandbox == "" {
		return nil
	}
	if err := config.CheckSandboxLevel(g.Sandbox); err != nil {
		return Usagef("--sandbox must be off, write or strict, not %q", g.Sandbox)
	}
	return nil
}
