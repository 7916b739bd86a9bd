package root

import (
	"github.com/yolop-dev/yolop/internal/cli/cmdutil"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/session"
)

// check refuses flags that are wrong or do not go together, and resolves
// where a new session works, before anything is opened. sessionSet says
// --session was given (an empty id is then refused).
// The values of --worktree, the older flag: off is --workspace in-place.
const (
	worktreeAlways = "always"
	worktreeOff    = "off"
)

func (o *RootOptions) check(sessionSet bool) error {
	if sessionSet {
		if err := session.CheckID(o.SessionID); err != nil {
			return cmdutil.Told(cmdutil.Usagef("--session: %v; `yolop sessions` lists the ids", err))
		}
	}
	if o.Worktree != worktreeAlways && o.Worktree != worktreeOff {
		return cmdutil.Usagef("--worktree must be always or off, not %q", o.Worktree)
	}
	if o.SessionID != "" && o.Continue {
		return cmdutil.Usagef("use either --session or --continue, not both")
	}
	var err error
	if o.Mode, o.ModeExplicit, err = o.workspaceMode(); err != nil {
		return cmdutil.Told(err)
	}
	if err := o.Flags.CheckSandbox(); err != nil {
		return err
	}
	if o.Resume && (o.SessionID != "" || o.Continue || o.PrintSet || o.ACP) {
		return cmdutil.Usagef("--resume opens a session picker in the terminal UI; it cannot be combined with --session, --continue, -p or --acp")
	}
	if o.ACP && (o.PrintSet || o.SessionID != "" || o.Continue) {
		return cmdutil.Usagef("--acp serves an editor; it cannot be combined with -p, --session or --continue")
	}
	if !o.ACP && !o.PrintSet {
		// Checked before a session exists: without a terminal the UI
		// cannot read keys or draw, and `echo prompt | yolop` is almost
		// always meant as `yolop -p -`.
		if err := needTerminal(o.IO, o.Resume); err != nil {
			return cmdutil.Told(err)
		}
	}
	return nil
}

// workspaceMode resolves where a new session works: --workspace or
// --in-place (explicit), else --worktree when given (off is in place),
// else the settings' [workspace] mode, else a worktree.
func (o *RootOptions) workspaceMode() (string, bool, error) {
	if err := config.CheckWorkspaceMode(o.Workspace); err != nil {
		return "", false, cmdutil.Usagef("%v", err)
	}
	switch {
	case o.InPlace && o.Workspace != "" && o.Workspace != config.WorkspaceInPlace:
		return "", false, cmdutil.Usagef("--in-place and --workspace %s say different things; use one", o.Workspace)
	case o.InPlace:
		return config.WorkspaceInPlace, true, nil
	case o.Workspace != "":
		if o.WorktreeSet && (o.Workspace == config.WorkspaceWorktree) != (o.Worktree == worktreeAlways) {
			return "", false, cmdutil.Usagef("--worktree %s and --workspace %s say different things; use --workspace", o.Worktree, o.Workspace)
		}
		return o.Workspace, true, nil
	case o.WorktreeSet:
		if o.Worktree == worktreeOff {
			return config.WorkspaceInPlace, false, nil
		}
		return config.WorkspaceWorktree, false, nil
	}
	m, err := o.Config.WorkspaceMode()
	if err != nil {
		return "", false, cmdutil.Usagef("%v", err)
	}
	return m, false, nil
}

// needTerminal refuses to start the terminal UI (or the resume picker)
// when stdin or stdout is not a terminal: a pipe, a file, /dev/null, a CI
// job, ssh without -t.
func needTerminal(streams *cmdutil.IOStreams, picker bool) error {
	in, out := streams.Terminal()
	if in && out {
		return nil
	}
	what := "the terminal UI"
	if picker {
		what = "the session picker (-r)"
	}
	which := "stdin is not one"
	switch {
	case !in && !out:
		which = "stdin and stdout are not"
	case in:
		which = "stdout is not one"
	}
	return cmdutil.Usagef("%s needs a terminal (%s); use -p PROMPT, or -p - to read the prompt from stdin", what, which)
}
