//go:build !linux

package app

import (
	"os/exec"
	"syscall"
)

// mcpProcess puts an MCP server in its own process group; off Linux there
// is no parent-death signal, and the server stops when yolop closes the
// session.
func mcpProcess(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
