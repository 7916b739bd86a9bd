package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// withSettings makes body the settings file of the test's environment
// and returns its path.
func withSettings(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	path := filepath.Join(dir, "yolop", "settings.toml")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSettingsValues: what a setting resolves to, and the words that
// refuse a bad one (the user sees them as they are).
func TestSettingsValues(t *testing.T) {
	// Not parallel: it sets environment variables.
	t.Setenv(SparesEnv, "")
	path := withSettings(t, "")
	if sp, err := ResolveSpares(); err != nil || sp.Limit != 1 || sp.Keeps != "" {
		t.Errorf("no settings: spares %+v, %v; want the default of 1", sp, err)
	}
	if d, err := KeepDays(); err != nil || d != DefaultKeepDays {
		t.Errorf("no settings: keep_days %d, %v; want %d", d, err, DefaultKeepDays)
	}
	if m, err := WorkspaceMode(); err != nil || m != "" {
		t.Errorf("no settings: workspace mode %q, %v; want none", m, err)
	}
	t.Setenv(SparesEnv, "3")
	if sp, err := ResolveSpares(); err != nil || sp.Limit != 3 {
		t.Errorf("%s=3: spares %+v, %v", SparesEnv, sp, err)
	}

	tests := []struct {
		settings, env string
		read          func() error
		want          string
	}{
		{"[worktree]\nspares = 17\n", "", func() error { _, err := ResolveSpares(); return err },
			"settings " + path + ": [worktree] spares = 17: want 0 (no spare worktrees) to 16"},
		{"[worktree]\nspare_keeps = \"all\"\n", "", func() error { _, err := ResolveSpares(); return err },
			"settings " + path + `: [worktree] spare_keeps = "all": want "dependencies" (keep dependency and build directories as a warm cache) or "nothing" (fully clean)`},
		{"", "many", func() error { _, err := ResolveSpares(); return err },
			SparesEnv + `="many": want a number of spare worktrees from 0 to 16`},
		{"[workspace]\nkeep_days = 0\n", "", func() error { _, err := KeepDays(); return err },
			"settings " + path + ": [workspace] keep_days = 0: want 1 or more days"},
		{"[workspace]\nmode = \"elsewhere\"\n", "", func() error { _, err := WorkspaceMode(); return err },
			"settings " + path + `: [workspace] mode = "elsewhere": want worktree, in-place or none`},
	}
	for _, tt := range tests {
		if err := os.WriteFile(path, []byte(tt.settings), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv(SparesEnv, tt.env)
		err := tt.read()
		if err == nil || err.Error() != tt.want {
			t.Errorf("settings %q, %s=%q: %v\nwant %s", strings.TrimSpace(tt.settings), SparesEnv, tt.env, err, tt.want)
		}
	}
	if err := CheckWorkspaceMode("nowhere"); err == nil || err.Error() != `--workspace must be worktree, in-place or none, not "nowhere"` {
		t.Errorf("--workspace nowhere: %v", err)
	}
}
