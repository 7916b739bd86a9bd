// Package app assembles a live session: session store, worktree, snapshot
// engine, timeline, agent and checkpoint controller, each opened by the
// package that knows it. Hosts (print, ACP, TUI) talk to a *Session and
// render its results.
package app

import (
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/land"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/sandbox"
	"github.com/yolop-dev/yolop/internal/session"
)

// Info describes an open session for status bars and headers.
type Info struct {
	SessionID  string `json:"session_id"`
	Title      string `json:"title"`
	RepoRoot   string `json:"repo_root"`
	ActiveRoot string `json:"active_root"`
	Branch     string `json:"branch"` // worktree branch, "" without a worktree
	// BranchNote says that the agent moved the worktree off the session's
	// branch (Branch is then the one it is on, or the session's when on
	// none).
	BranchNote string `json:"branch_note,omitempty"`
	// Recycled: the session's worktree was a parked spare, not a fresh
	// checkout.
	Recycled bool   `json:"recycled"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// WorkspaceMode is where the session works: worktree, in-place or
	// none.
	WorkspaceMode string `json:"workspace_mode"`
	// ProviderNotice says why the offline sim provider answers when no
	// provider was chosen and no API key was found ("" otherwise).
	ProviderNotice  string `json:"provider_notice,omitempty"`
	Workspace       bool   `json:"workspace"`        // workspace snapshots available
	WorkspaceReason string `json:"workspace_reason"` // why not, when unavailable
	ReadOnly        bool   `json:"read_only"`
	ReadOnlyReason  string `json:"read_only_reason"`
	Checkpoints     int    `json:"checkpoints"` // turns on the active branch, the running one included
	// Running is the checkpoint of the turn in progress once it was
	// created ("" when idle).
	Running       string `json:"running,omitempty"`
	RedoAvailable bool   `json:"redo_available"`
	// Usage is every model step's usage in this session (all branches);
	// ContextTokens is the size of the model context at the last step
	// (0 when unknown) and ContextWindow the model's window (0 when
	// unknown).
	Usage         provider.Usage `json:"usage"`
	ContextTokens int            `json:"context_tokens"`
	ContextWindow int            `json:"context_window"`
	// Repairs are notes about repairs made when the session was opened
	// (a torn log tail kept aside, an interrupted turn closed, an
	// interrupted restore rolled back). Hosts show them once.
	Repairs []string `json:"repairs,omitempty"`
	// Notices are what the user should know about the session's setup
	// (an MCP server that did not start). Hosts show them once.
	Notices []string `json:"notices,omitempty"`
	// Sandbox is the sandbox level in force for the tools' commands, and
	// Warnings what the user must be told once about it (what is not
	// confined).
	Sandbox  string   `json:"sandbox,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// TurnResult is the outcome of one prompt.
type TurnResult struct {
	CheckpointID string `json:"checkpoint_id"`
	Status       string `json:"status"` // completed, failed, cancelled, interrupted
	Text         string `json:"text"`   // the final assistant text
	Error        string `json:"error,omitempty"`
	// Pending is a preview queued by the model's checkpoint tool during the
	// turn; it is applied only when the user confirms its token.
	Pending *checkpoint.Preview `json:"pending"`
	// Usage is what the turn's model steps used, as the provider reported.
	Usage provider.Usage `json:"usage"`
	// Warnings must reach the user when the turn ends: a workspace capture
	// that failed before or after it, a worktree link that was repaired,
	// files that are not snapshotted here (said on the turn that created
	// the session), a session description that could not be saved.
	Warnings []string `json:"warnings,omitempty"`
	// Branch is the id of the conversation branch the turn ended on (b1,
	// b2, …; see /branches).
	Branch string `json:"branch"`
	// Tools are the turn's tool calls in the order they ran, each with
	// its final status (completed, failed, refused).
	Tools []ToolCall `json:"tools"`
}

// ToolCall is one tool call of a turn, as its JSON object reports it.
type ToolCall struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

// sandboxInfo is the sandbox part of Info.
func sandboxInfo(in *Info, st sandbox.Status) {
	in.Sandbox = string(st.InForce)
	if w := st.Warning(); w != "" {
		in.Warnings = []string{w}
	}
}

// diskInfo is what Info says of any session on disk: id is its id, ws its
// workspace and ctl its controller.
func diskInfo(prov provider.Provider, id string, ws session.Workspace, ctl *checkpoint.Controller) Info {
	in := Info{Provider: prov.Name(), Model: prov.Model(), SessionID: id, Title: ws.Title, RepoRoot: ws.RepoRoot, ActiveRoot: ws.ActiveRoot, Recycled: ws.Recycled}
	if ws.Worktree != nil {
		in.Branch, in.BranchNote = land.WorktreeBranch(ws.Worktree.Path, ws.Worktree.Branch)
	}
	in.Workspace, in.WorkspaceReason = ctl.WorkspaceAvailable()
	if in.Workspace {
		in.WorkspaceReason = ""
	}
	in.ReadOnlyReason = ctl.ReadOnly()
	in.ReadOnly = in.ReadOnlyReason != ""
	in.Checkpoints, in.RedoAvailable = ctl.ActiveCount(), ctl.RedoAvailable()
	return in
}
