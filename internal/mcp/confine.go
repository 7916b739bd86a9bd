package mcp

import (
	"errors"
	"os"
	"time"

	"github.com/yolop-dev/yolop/internal/sandbox"
	"github.com/yolop-dev/yolop/internal/spawn"
)

// Confine readies a stdio server's spec (Start's prepare) under a
// session's rules, like a tool's command: recorded in the session's
// process ledger (so the next open ends what a killed yolop left), the
// session marker in its environment, and the session's write sandbox sb
// (the helper's second stage applies it, then executes the server). A
// sandbox that cannot be applied while unconfined commands are not
// allowed keeps the server from starting.
func Confine(session, ledger string, sb sandbox.Status) func(*spawn.Spec) error {
	return func(spec *spawn.Spec) error {
		if sb.Refused != "" {
			return errors.New(sb.Refused)
		}
		spec.Env = append(spec.Env, spawn.SessionEnv+"="+session)
		spec.Ledger = ledger
		spec.Owner = os.Getpid()
		spec.Sandbox, spec.Seal = sb.Policy, sb.Seals()
		return nil
	}
}

// WithCallTimeout gives the servers without a call timeout of their own
// (those an editor configured) d, the settings' [mcp] call_timeout (0:
// DefaultCallTimeout, negative: none).
func WithCallTimeout(servers []Server, d time.Duration) []Server {
	out := append([]Server(nil), servers...)
	for i := range out {
		if out[i].CallTimeout == 0 {
			out[i].CallTimeout = d
		}
	}
	return out
}

// WorktreeNote tells an editor's user where its MCP servers work: the
// session's worktree is their root (Start). The same words before and
// after the session's first prompt, so hosts say it once.
const WorktreeNote = "MCP servers work in this session's worktree (their root), not in your project directory: yolop's changes reach your checkout when you bring them home (yolop diff, apply, commit)"
