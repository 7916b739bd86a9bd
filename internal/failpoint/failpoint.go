// Package failpoint kills the process at named points so crash tests can
// prove that every step of turn bracketing and restore is recoverable.
//
// YOLOP_FAILPOINT=<name> makes the process send itself SIGKILL when it
// reaches that point: no deferred function, flush or cleanup runs, exactly
// as if the machine lost power at that instant (the page cache survives).
package failpoint

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Env is the environment variable naming the failpoint to trigger.
const Env = "YOLOP_FAILPOINT"

// Names lists every failpoint, in the order a turn and a restore reach them.
var Names = []string{
	"turn.after_capture",
	"turn.after_checkpoint",
	"turn.after_tool",
	"turn.before_complete",
	"preview.after_capture",
	"restore.after_intent",
	"restore.after_write",
	"restore.after_delete",
	"restore.before_verify",
	"restore.before_head",
	"restore.after_head",
}

var armed = os.Getenv(Env)

// Hit kills the process when name is the armed failpoint.
func Hit(name string) {
	if armed == "" || armed != name {
		return
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is delivered asynchronously; never run past it
}

// PauseEnv arms a pause point, so that an end-to-end test can order a race
// exactly: YOLOP_PAUSEPOINT=<name>:<dir>, where dir holds two FIFOs the
// test made, "paused" and "resume".
const PauseEnv = "YOLOP_PAUSEPOINT"

// Pause points, in the order a tool call reaches them.
var PauseNames = []string{
	"tools.after_resolve", // a file tool resolved its path and is about to use it
	"folder.import_half",  // a folder's first capture has written half its files
}

var pauseName, pauseDir, _ = strings.Cut(os.Getenv(PauseEnv), ":")

// Pause, at the armed pause point, writes the point's name and detail on a
// line to <dir>/paused (waiting until the test reads it) and then waits
// for a line on <dir>/resume: whatever the test does in between happens
// exactly at this point. Unarmed, it returns at once.
func Pause(name, detail string) {
	if pauseDir == "" || pauseName != name {
		return
	}
	if err := pause(name + " " + detail); err != nil {
		// Only a test arms a pause point; it must hear why it did not hold.
		fmt.Fprintf(os.Stderr, "yolop: pause point %s: %v\n", name, err)
	}
}

func pause(line string) error {
	w, err := os.OpenFile(filepath.Join(pauseDir, "paused"), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = w.WriteString(line + "\n")
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	r, err := os.Open(filepath.Join(pauseDir, "resume"))
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = bufio.NewReader(r).ReadString('\n')
	return err
}
