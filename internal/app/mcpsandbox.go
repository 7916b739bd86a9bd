package app

import (
	"errors"
	"fmt"
	"os"

	"github.com/yolop-dev/yolop/internal/mcp"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/sandbox"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/spawn"
)

// mcpPrepare readies a stdio MCP server's spec under the session's rules,
// like a tool's command: recorded in the session's process ledger (so the
// next open ends what a killed yolop left), the session marker in its
// environment, and the session's write sandbox (the helper's second stage
// applies it, then executes the server). A sandbox that cannot be applied
// while unconfined commands are not allowed keeps the server from
// starting.
func mcpPrepare(sess *session.Session, sb sandbox.Status) func(*spawn.Spec) error {
	return func(spec *spawn.Spec) error {
		if sb.Refused != "" {
			return errors.New(sb.Refused)
		}
		spec.Env = append(spec.Env, spawn.SessionEnv+"="+sess.ID)
		spec.Ledger = sess.Path(spawn.LedgerFile)
		spec.Owner = os.Getpid()
		spec.Sandbox, spec.Seal = sb.Policy, sb.Seals()
		return nil
	}
}

// mcpCallTimeouts gives the servers without a call timeout of their own
// (those an editor configured) the settings' [mcp] call_timeout.
func mcpCallTimeouts(servers []mcp.Server, st provider.Settings) ([]mcp.Server, error) {
	d, err := st.MCPCallTimeout("", provider.DefaultSettingsPath(os.Getenv))
	if err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	out := append([]mcp.Server(nil), servers...)
	for i := range out {
		if out[i].CallTimeout == 0 {
			out[i].CallTimeout = d
		}
	}
	return out, nil
}
