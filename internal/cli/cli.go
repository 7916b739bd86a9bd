// Package cli runs yolop's command line, whose commands live in the
// packages below it (root makes the tree), and is its one edge: every
// failure a command returns is reported here, in the selected format, with
// the exit status and JSON code its error carries (internal/fault).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/cli/root"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/fault"
	printhost "github.com/yolop-dev/yolop/internal/host/print"
	// The binary builds every provider. Below it, app links only the
	// offline one: a test binary that opens sessions without the
	// providers' SDKs is a fifth of the size and links in a third of the
	// time.
	_ "github.com/yolop-dev/yolop/internal/provider/all"
	"github.com/yolop-dev/yolop/internal/spawn"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// Main runs yolop and returns the process exit code.
func Main() int {
	streams := cmdutil.System()
	// The environment yolop was started with (its keys) stays in its
	// memory: no command running as the same user may read it.
	// A detached preparation sets its session's processor weight after
	// sealing, through its autogroup file: sealed, that file belongs to
	// root, so it is opened now.
	worktree.KeepAutogroup()
	if err := spawn.Seal(); err != nil {
		fmt.Fprintf(streams.ErrOut, "yolop: warning: %v; commands running as you can read yolop's environment and memory\n", err)
	}
	// A reader that goes away (yolop -p … | head -1, a closed terminal)
	// must not kill a turn halfway: with SIGPIPE handled, a write to a
	// closed stdout or stderr fails with EPIPE instead, and the turn runs
	// to its end and is recorded. (A handled signal, unlike an ignored
	// one, is reset for the commands the tools run.)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	return Run(os.Args[1:], streams)
}

// Run runs yolop with args and streams; it returns the exit code.
//
// Errors are reported here, at one edge, whatever command returned them:
// in JSON mode as the one object of the invocation on stdout (flag errors
// too, when the arguments ask for JSON), else as one line on stderr; the
// code and the exit status come from the error (fault.Of and its table).
func Run(args []string, streams *cmdutil.IOStreams) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f := cmdutil.New(streams)
	cmd := root.NewCmdRoot(f, nil)
	cmd.SetArgs(args)
	c, err := cmd.ExecuteContextC(ctx)
	if err == nil {
		return fault.ExitOK
	}
	path := "yolop"
	if c != nil {
		path = c.CommandPath()
	}
	return edge{io: streams, args: args, json: f.Flags.JSON(), interrupted: ctx.Err() != nil, path: path}.fail(err)
}

// edge is what reporting a failed invocation needs to know of it.
type edge struct {
	io   *cmdutil.IOStreams
	args []string // the arguments, read for JSON mode when flags did not parse
	json bool     // --output-format json
	// interrupted: the user stopped yolop (SIGINT, SIGTERM).
	interrupted bool
	path        string // the command, for the usage hint
}

// fail reports err and returns the exit status: its code's in fault's
// table.
func (e edge) fail(err error) int {
	if errors.Is(err, syscall.EPIPE) {
		// The reader went away (yolop sessions | head): stop quietly, with
		// the status a process killed by SIGPIPE has.
		return fault.ExitBrokenPipe
	}
	var sh *cmdutil.ShownError
	if errors.As(err, &sh) {
		return sh.Code.Exit()
	}
	var t *cmdutil.ToldError
	final := errors.As(err, &t)
	if final {
		err = t.Err
	}
	code := fault.Of(err)
	if !final && code != fault.Usage && e.interrupted {
		code = fault.Interrupted
	}
	// Flag errors happen before any flag value is known, so JSON mode is
	// then read from the arguments: a script asking for JSON gets an error
	// object, never text on stdout.
	if e.json || code == fault.Usage && wantsJSON(e.args) {
		writeError(e.io.Out, err, code)
		return code.Exit()
	}
	fmt.Fprintln(e.io.ErrOut, "yolop:", command.ErrorText(err))
	if code == fault.Usage && !final {
		fmt.Fprintf(e.io.ErrOut, "Run '%s --help' for usage.\n", e.path)
	}
	return code.Exit()
}

// wantsJSON reports whether args ask for --output-format json.
func wantsJSON(args []string) bool {
	for i, a := range args {
		if a == "--" {
			return false
		}
		if a == "--output-format=json" || a == "--output-format" && i+1 < len(args) && args[i+1] == "json" {
			return true
		}
	}
	return false
}

// writeError prints the one JSON object of a failed invocation.
func writeError(w io.Writer, err error, code fault.Code) {
	b, jerr := printhost.JSONLine(cmdutil.ErrorOf(err, code))
	if jerr != nil {
		fmt.Fprintf(w, `{"error":"encoding the error failed","code":%q}`+"\n", fault.Internal)
		return
	}
	fmt.Fprint(w, string(b))
}
