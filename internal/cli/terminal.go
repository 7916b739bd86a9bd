package cli

import (
	"os"

	"github.com/charmbracelet/x/term"
)

// needTerminal refuses to start the terminal UI (or the resume picker)
// when stdin or stdout is not a terminal: a pipe, a file, /dev/null, a CI
// job, ssh without -t.
func needTerminal(streams IO, picker bool) error {
	in, out := isTTY(streams.In), isTTY(streams.Out)
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
	return usagef("%s needs a terminal (%s); use -p PROMPT, or -p - to read the prompt from stdin", what, which)
}

// isTTY reports whether s is a terminal device.
func isTTY(s any) bool {
	f, ok := s.(*os.File)
	return ok && f != nil && term.IsTerminal(f.Fd())
}
