// Package failpoint kills the process at named points so crash tests can
// prove that every step of turn bracketing and restore is recoverable.
//
// YOLOP_FAILPOINT=<name> makes the process send itself SIGKILL when it
// reaches that point: no deferred function, flush or cleanup runs, exactly
// as if the machine lost power at that instant (the page cache survives).
package failpoint

import (
	"os"
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
