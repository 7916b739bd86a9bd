package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/yolop-dev/yolop/internal/sandbox"
	"github.com/yolop-dev/yolop/internal/spawn"
)

// mcpPrepare readies a stdio MCP server's command under the session's
// rules: its own process group with a parent-death signal, the session
// marker that lets the next open find a survivor, and the session's write
// sandbox (the second stage of this binary applies the Landlock policy,
// then executes the server). A sandbox that cannot be applied while
// unconfined commands are not allowed keeps the server from starting.
func mcpPrepare(sessionID string, sb sandbox.Status) func(*exec.Cmd) error {
	return func(cmd *exec.Cmd) error {
		mcpProcess(cmd)
		cmd.Env = append(cmd.Env, spawn.SessionEnv+"="+sessionID)
		if sb.Refused != "" {
			return errors.New(sb.Refused)
		}
		if sb.Policy == nil {
			return nil
		}
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find yolop's executable to sandbox the server: %w", err)
		}
		pol, err := json.Marshal(sb.Policy)
		if err != nil {
			return err
		}
		cmd.Args = append([]string{exe, spawn.ExecArg, string(pol)}, cmd.Args...)
		cmd.Path = exe
		return nil
	}
}
