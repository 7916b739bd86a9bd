// Command yolopexit is yolop as the command line's scripts run it when the
// tests are given a built binary ($YOLOP_BIN, linked in as main.bin): it
// runs that binary with its own arguments, standard streams and environment, passes on the signals
// a script sends, and records the exit status in $YOLOP_TEST_EXIT_FILE for
// the scripts' exitcode command. The scripts then exercise the binary
// users run, not the race-built test binary, whose every start and turn
// costs several times the CPU (.ci/run builds one binary for all the
// end-to-end tests).
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// bin is the yolop binary to run, set when this program is built
// (testenv.ScriptYolop).
var bin string

func main() {
	if bin == "" {
		fmt.Fprintln(os.Stderr, "yolopexit: built without the yolop binary to run (-ldflags -X main.bin=PATH)")
		os.Exit(2)
	}
	cmd := exec.Command(bin, os.Args[1:]...)
	cmd.Args[0] = "yolop"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = diesWithParent()
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "yolopexit:", err)
		os.Exit(2)
	}
	go func() {
		for s := range sigs {
			// Gone already: nothing to pass on.
			_ = cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		fmt.Fprintln(os.Stderr, "yolopexit:", err)
		os.Exit(2)
	}
	st := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if st.Signaled() {
		// Killed by a signal, yolop recorded no exit status: neither does
		// this, and it ends the same way.
		signal.Reset()
		if err := syscall.Kill(os.Getpid(), st.Signal()); err == nil {
			// A signal this process was started ignoring does not end it.
			time.Sleep(100 * time.Millisecond)
		}
		os.Exit(128 + int(st.Signal()))
	}
	code := st.ExitStatus()
	if p := os.Getenv("YOLOP_TEST_EXIT_FILE"); p != "" {
		if err := os.WriteFile(p, []byte(strconv.Itoa(code)+"\n"), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "yolopexit: record the exit status:", err)
			os.Exit(2)
		}
	}
	os.Exit(code)
}
