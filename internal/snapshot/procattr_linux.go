package snapshot

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill cmd when this process exits.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
