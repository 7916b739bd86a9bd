package config

import (
	"fmt"

	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/session"
)

// Workspace modes (--workspace, [workspace] mode): where a new session
// works. A session keeps its mode for its whole life.
const (
	WorkspaceWorktree = "worktree" // a git worktree of its own (the default in a repository)
	WorkspaceInPlace  = "in-place" // the user's own checkout
	WorkspaceNone     = "none"     // conversation-only checkpoints
)

// CheckWorkspaceMode checks a --workspace value.
func CheckWorkspaceMode(m string) error {
	switch m {
	case "", WorkspaceWorktree, WorkspaceInPlace, WorkspaceNone:
		return nil
	}
	return fmt.Errorf("--workspace must be worktree, in-place or none, not %q", m)
}

// WorkspaceMode is the settings file's [workspace] mode ("" when it sets
// none).
func WorkspaceMode() (string, error) {
	path := SettingsPath()
	s, err := provider.LoadSettings(path)
	if err != nil {
		return "", err
	}
	if err := CheckWorkspaceMode(s.Workspace.Mode); err != nil {
		return "", fmt.Errorf("settings %s: [workspace] mode = %q: want worktree, in-place or none", path, s.Workspace.Mode)
	}
	return s.Workspace.Mode, nil
}

// DefaultKeepDays is how long an in-place session's snapshot refs are kept
// after its last use ([workspace] keep_days).
const DefaultKeepDays = 30

// KeepDays is [workspace] keep_days: for how many days after its last use
// an in-place session keeps its snapshot refs.
func KeepDays() (int, error) {
	path := SettingsPath()
	st, err := provider.LoadSettings(path)
	if err != nil {
		return 0, err
	}
	if st.Workspace.KeepDays == nil {
		return DefaultKeepDays, nil
	}
	if *st.Workspace.KeepDays < 1 {
		return 0, fmt.Errorf("settings %s: [workspace] keep_days = %d: want 1 or more days", path, *st.Workspace.KeepDays)
	}
	return *st.Workspace.KeepDays, nil
}

// SessionKind is the kind of session a workspace mode gives a new session:
// session.KindWorktree (the default), KindInPlace or KindConversation.
func SessionKind(mode string) string {
	switch mode {
	case WorkspaceInPlace:
		return session.KindInPlace
	case WorkspaceNone:
		return session.KindConversation
	}
	return session.KindWorktree
}
