package cmdutil

import (
	"io"
	"os"

	"github.com/charmbracelet/x/term"
)

// IOStreams are the streams a command reads and writes. Nothing writes to
// os.Stdout directly: in ACP mode stdout carries protocol messages only.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	// terminal, when set, says which of In and Out are terminals instead
	// of asking the files (tests run without one).
	terminal *[2]bool
}

// System are the process's own streams.
func System() *IOStreams {
	return &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
}

// SetTerminal makes In and Out count as terminals (or not) whatever they
// are.
func (s *IOStreams) SetTerminal(in, out bool) { s.terminal = &[2]bool{in, out} }

// Terminal reports whether In and Out are terminals: the terminal UI
// needs both to read keys and draw.
func (s *IOStreams) Terminal() (in, out bool) {
	if s.terminal != nil {
		return s.terminal[0], s.terminal[1]
	}
	return isTTY(s.In), isTTY(s.Out)
}

// ColorOut reports whether Out is a character device and NO_COLOR is
// unset: a diff is colored only for a reader, never for a pipe or a file
// that `git apply` reads.
func (s *IOStreams) ColorOut() bool {
	f, ok := s.Out.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0 && os.Getenv("NO_COLOR") == ""
}

// isTTY reports whether s is a terminal device.
func isTTY(s any) bool {
	f, ok := s.(*os.File)
	return ok && f != nil && term.IsTerminal(f.Fd())
}
