package cli

import (
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
)

// needTerminal refuses to start the terminal UI (or the resume picker)
// when stdin or stdout is not a terminal: a pipe, a file, /dev/null, a CI
// job, ssh without -t.
func needTerminal(streams *cmdutil.IOStreams, picker bool) error {
	in, out := streams.Terminal()
	if in && out {
		return nil
	}
	what := "the terminal UI"
	if picker {
		what = "the session picker (-r)"
	}
	which := "stdin is not one"
	switch {
	case !in && !out:
		which = "stdin and stdout are not"
	case in:
		which = "stdout is not one"
	}
	return cmdutil.Usagef("%s needs a terminal (%s); use -p PROMPT, or -p - to read the prompt from stdin", what, which)
}
