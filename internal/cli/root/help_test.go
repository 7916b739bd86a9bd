package root

import (
	"bytes"
	"testing"

	"github.com/spf13/cobra"

	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
)

// TestEveryCommandHasAnExample: --help of every command shows how to use
// it, not only its flags.
func TestEveryCommandHasAnExample(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	root := NewCmdRoot(cmdutil.New(&cmdutil.IOStreams{Out: &out, ErrOut: &out}), nil)
	root.InitDefaultHelpCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.IsAvailableCommand() || c == root {
			if c.Example == "" && c.Name() != "help" && c.Parent() != nil && c.Parent().Name() != "completion" {
				t.Errorf("%s has no example in its --help", c.CommandPath())
			}
		}
		for _, sc := range c.Commands() {
			walk(sc)
		}
	}
	walk(root)
}
