package app

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/sandbox"
	"github.com/yolop-dev/yolop/internal/session"
)

// toolSettings reads the [tools] section of the settings file (the same
// file the provider configuration came from).
func toolSettings() (provider.Settings, error) {
	return provider.LoadSettings(provider.DefaultSettingsPath(os.Getenv))
}

// SandboxConfig is the sandbox the user chose: the --sandbox flag (level,
// "" for the settings' or the default) over the settings file.
func SandboxConfig(level string, st provider.Settings) sandbox.Config {
	cfg := sandbox.Config{Level: st.Sandbox.Level, Caches: st.Sandbox.Caches, ExtraCaches: st.Sandbox.ExtraCaches, Ports: st.Sandbox.Ports, AllowUnconfined: true}
	if level != "" {
		cfg.Level = level
	}
	if st.Sandbox.AllowUnconfined != nil {
		cfg.AllowUnconfined = *st.Sandbox.AllowUnconfined
	}
	return cfg
}

// ToolsEnv says where the tools' commands would get their environment
// from in this process, for `yolop version --verbose`.
func ToolsEnv() (tools.EnvPlan, error) {
	st, err := toolSettings()
	if err != nil {
		return tools.EnvPlan{}, err
	}
	return tools.PlanEnv(st.Tools.Env, os.Environ()), nil
}

// SandboxStatus is the sandbox commands would run under here, for
// `yolop version --verbose`.
func SandboxStatus(level string) (sandbox.Status, error) {
	st, err := toolSettings()
	if err != nil {
		return sandbox.Status{}, err
	}
	return sandbox.Plan(SandboxConfig(level, st), sandbox.Layout{})
}

// planSandbox resolves the session's sandbox: writes go to the worktree's
// top (what a checkpoint covers, even when the active root is below it),
// the session's TMPDIR, the caches, and what git needs to commit on the
// session branch.
func planSandbox(sess *session.Session, ws session.Workspace, level string, st provider.Settings) (sandbox.Status, error) {
	lay := sandbox.Layout{Top: ws.ActiveRoot, TmpDir: sess.Path("tmp")}
	if ws.Worktree != nil && ws.Worktree.Path != "" {
		lay.Top = ws.Worktree.Path
		lay.CommonDir = ws.CommonDir
		lay.AdminDir = ws.Worktree.GitDir
		if lay.AdminDir == "" {
			lay.AdminDir = adminDir(ws.Worktree.Path, ws.CommonDir)
		}
	}
	if ws.Kind == session.KindInPlace {
		// The agent writes the user's checkout, never its git state: the
		// checkout's .git (a linked worktree's own git dir too) and the
		// repository's common dir are read-only for commands.
		lay.Top = ws.RepoRoot
		lay.ReadOnly = inPlaceReadOnly(ws.RepoRoot, ws.CommonDir)
		if ws.Folder {
			// A folder outside git: only its private repository, in the
			// data directory (a `git init` of the agent's is its own).
			lay.ReadOnly = []string{ws.CommonDir}
		}
	}
	if err := os.MkdirAll(lay.TmpDir, 0o700); err != nil {
		return sandbox.Status{}, fmt.Errorf("create the commands' temporary directory: %w", err)
	}
	return sandbox.Plan(SandboxConfig(level, st), lay)
}

// inPlaceReadOnly lists what commands of an in-place session must not
// write: the checkout's .git (a directory, or a linked worktree's .git
// file and the git dir it names) and the common git dir.
func inPlaceReadOnly(top, common string) []string {
	dotgit := filepath.Join(top, ".git")
	out := []string{dotgit}
	if b, err := os.ReadFile(dotgit); err == nil {
		if d, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: "); ok {
			if !filepath.IsAbs(d) {
				d = filepath.Join(top, d)
			}
			out = append(out, filepath.Clean(d))
		}
	}
	if common != "" && !slices.ContainsFunc(out, func(p string) bool { return sameDir(p, common) }) {
		if st, err := os.Stat(common); err == nil && st.IsDir() {
			out = append(out, common)
		}
	}
	return out
}

// adminDir is the worktree's own git directory, from its .git link, when
// it lies under the repository's worktrees/ directory; "" otherwise (a
// rewritten link must not make another directory writable).
func adminDir(top, common string) string {
	b, err := os.ReadFile(filepath.Join(top, ".git"))
	if err != nil || common == "" {
		return ""
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return ""
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(top, dir)
	}
	dir = filepath.Clean(dir)
	wts := filepath.Join(common, "worktrees")
	if rel, err := filepath.Rel(wts, dir); err != nil || rel == "." || strings.Contains(rel, "..") || strings.Contains(rel, string(filepath.Separator)) {
		return ""
	}
	return dir
}

// CheckSandboxLevel checks a --sandbox value.
func CheckSandboxLevel(level string) error {
	_, err := sandbox.ParseLevel(level)
	return err
}

// draftSandbox is the sandbox a session that does not exist yet will have,
// so hosts can say what is not confined before its first turn. A settings
// error is left for the first turn to report.
func draftSandbox(level string) sandbox.Status {
	st, err := SandboxStatus(level)
	if err != nil {
		return sandbox.Status{}
	}
	return st
}

// sandboxInfo is the sandbox part of Info.
func sandboxInfo(in *Info, st sandbox.Status) {
	in.Sandbox = string(st.InForce)
	if w := st.Warning(); w != "" {
		in.Warnings = []string{w}
	}
}
