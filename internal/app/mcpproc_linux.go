package app

import (
	"os/exec"
	"syscall"
)

// mcpProcess makes an MCP server's process die with yolop: its own
// process group (stopped as a whole) and a parent-death signal.
func mcpProcess(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
