package app

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/yolop-dev/yolop/internal/agent/tools"
	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/sandbox"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/spawn"
)

// reapSurvivors ends every process an earlier yolop process of this session
// left running (its process helper was killed with it, so nothing else
// will). It runs first when a session is opened, with the session lock
// held: the earlier owner is gone, and no tool of this process runs yet.
// It returns the note for the user and the processes it could not end,
// which stay active writers (a restore is refused) until they are gone.
func reapSurvivors(sess *session.Session) ([]string, []spawn.Record, error) {
	res, err := spawn.Reap(sess.Path(spawn.LedgerFile), sess.ID)
	if err != nil {
		return nil, nil, err
	}
	var notes []string
	if len(res.Ended) > 0 {
		notes = append(notes, fmt.Sprintf("Ended %d process(es) that an earlier yolop process of this session left running, so they cannot write the workspace any more: %s.",
			len(res.Ended), describeProcs(res.Ended)))
	}
	if len(res.Left) > 0 {
		notes = append(notes, fmt.Sprintf("Could not end %d process(es) left running by an earlier yolop process of this session: %s. Restores are refused until they are gone; end them (kill -9 PID) or with /tasks stop p<PID>.",
			len(res.Left), describeProcs(res.Left)))
	}
	return notes, res.Left, nil
}

// sweepLeftovers ends, when the session closes, the processes its
// ledger still lists as running: only a helper that was killed leaves
// any. One that cannot be ended is reported; the next open tries again.
func sweepLeftovers(sess *session.Session) error {
	res, err := spawn.Sweep(sess.Path(spawn.LedgerFile), sess.ID)
	if err != nil {
		return err
	}
	if len(res.Left) > 0 {
		return fmt.Errorf("could not end %d process(es) of this session: %s; end them (kill -9 PID) before you open it again", len(res.Left), describeProcs(res.Left))
	}
	return nil
}

func describeProcs(rs []spawn.Record) string {
	var parts []string
	for i, r := range rs {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(rs)-5))
			break
		}
		c := r.Command
		if len(c) > 60 {
			c = c[:57] + "..."
		}
		if c == "" {
			parts = append(parts, fmt.Sprintf("pid %d", r.PID))
		} else {
			parts = append(parts, fmt.Sprintf("pid %d (%s)", r.PID, c))
		}
	}
	return strings.Join(parts, ", ")
}

// toolSettings reads the [tools] section of the settings file (the same
// file the provider configuration came from).
func toolSettings() (provider.Settings, error) {
	return provider.LoadSettings(provider.DefaultSettingsPath(os.Getenv))
}

// newTasks makes the session's command registry: every command carries the
// session marker, is recorded in the session's process ledger, runs in the
// sandbox sbx with the session's own TMPDIR.
func newTasks(sess *session.Session, spill string, st provider.Settings, sbx sandbox.Status) *tools.Tasks {
	return tools.NewSessionTasks(spill, tools.TaskOptions{
		Session: sess.ID,
		Ledger:  sess.Path(spawn.LedgerFile),
		PassEnv: st.Tools.PassEnv,
		Env:     st.Tools.Env,
		Sandbox: sbx,
		TmpDir:  sess.Path("tmp"),
		// The login environment (or a profile that hangs) is remembered
		// for the session's later processes.
		LoginCache: sess.Path("login-env.json"),
	})
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
	return sandbox.Plan(config.SandboxConfig(level, st), lay)
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

// draftSandbox is the sandbox a session that does not exist yet will have,
// so hosts can say what is not confined before its first turn. A settings
// error is left for the first turn to report.
func draftSandbox(level string) sandbox.Status {
	st, err := config.SandboxStatus(level)
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
