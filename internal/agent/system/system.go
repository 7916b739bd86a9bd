// Package system makes what the model is told about a session before its
// first message: the system prompt (the session's environment, where it
// works, its sandbox, the state of its worktree at open) and the loader of
// the project instructions (AGENTS.md) for its workspace. It sits beside
// package agent, which sends both, and reads the workspace the session
// recorded (package session) and its snapshots (package snapshot).
package system

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/template"
	"time"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/blocklist"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/sandbox"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/snapshot"
)

//go:embed system.md
var systemText string

// MaxPrompt bounds the rendered system prompt without project
// instructions: every request carries it.
const MaxPrompt = 4 << 10

var systemTemplate = template.Must(template.New("system").Parse(systemText))

// systemFacts are what the system prompt says about the session.
type systemFacts struct {
	Root, Date, OS, Shell          string
	Worktree, Branch, Base, Status string
	Checkout, NoWorkspace          string
	Blocklist                      string
	// Sandbox says where shell commands may write ("" when unconfined).
	Sandbox string
	// Submodules lists the submodules the worktree does not check out.
	Submodules string
	// InPlace: the session works in the user's own checkout.
	InPlace bool
}

// Prompt renders the system prompt of a session opened at now: ws is its
// workspace, status what WorkspaceStatus says of it, noWorkspace why it has
// no file snapshots ("" when it has them), shellEnv where its commands'
// environment comes from.
func Prompt(ws session.Workspace, status, noWorkspace string, sandboxLevel sandbox.Level, shellEnv string, now time.Time) (string, error) {
	f := systemFacts{Root: ws.ActiveRoot, Date: now.Format("Monday, 2 January 2006"), OS: runtime.GOOS + "/" + runtime.GOARCH,
		Shell: "bash (bash -c, in " + shellEnv + ")", NoWorkspace: noWorkspace, Blocklist: strings.Join(blocklist.Dirs, ", "), Status: status}
	switch sandboxLevel {
	case sandbox.Write:
		f.Sandbox = "Shell commands run in a write sandbox: they can write only in the worktree, in $TMPDIR and in the usual tool caches (Go, npm, pip, cargo…); a write elsewhere is refused and the tool result says where. Reading is not limited."
	case sandbox.Strict:
		f.Sandbox = "Shell commands run in a strict sandbox: they can write only in the worktree, in $TMPDIR and in the usual tool caches, and can open network connections only to the ports the user allowed; a refused write or connection is reported in the tool result."
	}
	f.InPlace = ws.Kind == session.KindInPlace && noWorkspace == ""
	if ws.Kind == session.KindWorktree && ws.Worktree != nil {
		f.Worktree, f.Branch, f.Checkout = ws.Worktree.Path, ws.Worktree.Branch, ws.RepoRoot
		f.Base = ws.Worktree.Base
		if len(f.Base) > 12 {
			f.Base = f.Base[:12]
		}
		f.Submodules = strings.Join(gitmodulesPaths(filepath.Join(ws.Worktree.Path, ".gitmodules")), ", ")
	}
	var b bytes.Buffer
	if err := systemTemplate.Execute(&b, f); err != nil {
		return "", fmt.Errorf("render the system prompt: %w", err)
	}
	return strings.TrimSpace(b.String()) + "\n", nil
}

// WorkspaceStatus summarizes the worktree at session start without
// walking it: the files the last turn left (last, the tree of its end
// capture) that differ from the base commit (a tree diff), or a clean
// start. It is "" for a session without a worktree of its own.
func WorkspaceStatus(ctx context.Context, snaps *snapshot.Engine, ws session.Workspace, last string) string {
	if ws.Worktree == nil {
		return ""
	}
	if last == "" || snaps == nil {
		return "no turns yet; the worktree holds the files of its base commit"
	}
	ch, err := snaps.Diff(ctx, ws.Worktree.Base, last)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	// The branch may have moved past the base (a commit of the session's
	// work, or a fork of a session that had one): git diff against the
	// base, not git status, lists the paths.
	base := ws.Worktree.Base
	if len(base) > 12 {
		base = base[:12]
	}
	n := len(ch)
	if n == 0 {
		return "the files match the base commit (nothing changed by earlier turns)"
	}
	if n == 1 {
		return fmt.Sprintf("1 path differs from the base commit after earlier turns (git diff %s lists it)", base)
	}
	return fmt.Sprintf("%d paths differ from the base commit after earlier turns (git diff %s lists them)", n, base)
}

// Instructions returns the loader of a session's project instructions:
// AGENTS.md from the top of its worktree (or repository) down to its
// active root, and the user-level file beside the settings file.
func Instructions(ws session.Workspace) func() agent.Instructions {
	top := ws.RepoRoot
	if ws.Worktree != nil {
		top = ws.Worktree.Path
	}
	if top == "" {
		top = ws.ActiveRoot
	}
	user := ""
	if d := provider.DefaultSettingsPath(os.Getenv); d != "" {
		user = filepath.Join(filepath.Dir(d), agent.InstructionsFile)
	}
	return func() agent.Instructions { return agent.LoadInstructions(top, ws.ActiveRoot, user) }
}

// gitmodulesPaths returns the submodule paths a .gitmodules file names
// (none when there is no such file): the "path = …" lines of its
// sections, read without running git.
func gitmodulesPaths(file string) []string {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var paths []string
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "path") {
			if v = strings.Trim(strings.TrimSpace(v), `"`); v != "" {
				paths = append(paths, v)
			}
		}
	}
	return paths
}

// Deferred is the system prompt of a session opened now, rendered when a
// model call first needs it: its state summary costs a git process that
// listing or restoring a session must not pay. engine returns the
// session's snapshot engine (nil without one); lastEnd, noWorkspace,
// sandboxLevel and shellEnv are as for WorkspaceStatus and Prompt.
func Deferred(ws session.Workspace, engine func() *snapshot.Engine, lastEnd, noWorkspace string, sandboxLevel sandbox.Level, shellEnv string) func() (string, error) {
	opened := time.Now()
	return func() (string, error) {
		return Prompt(ws, WorkspaceStatus(context.Background(), engine(), ws, lastEnd), noWorkspace, sandboxLevel, shellEnv, opened)
	}
}
