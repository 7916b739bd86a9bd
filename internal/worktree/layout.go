package worktree

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/yolop-dev/yolop/internal/fsutil"
	"github.com/yolop-dev/yolop/internal/sandbox"
	"github.com/yolop-dev/yolop/internal/session"
)

// SandboxLayout is where the commands of a session working in ws may
// write: the worktree's top (what a checkpoint covers, even when the
// active root is below it), tmpDir (the session's TMPDIR), and what git
// needs to commit on the session's branch. In place, the agent writes the
// user's checkout but never its git state: the checkout's .git (a linked
// worktree's own git dir too) and the repository's common dir are
// read-only; in a folder outside git, its private repository in the data
// directory is (a `git init` of the agent's is its own).
func SandboxLayout(ws session.Workspace, tmpDir string) sandbox.Layout {
	lay := sandbox.Layout{Top: ws.ActiveRoot, TmpDir: tmpDir}
	if ws.Worktree != nil && ws.Worktree.Path != "" {
		lay.Top = ws.Worktree.Path
		lay.CommonDir = ws.CommonDir
		lay.AdminDir = ws.Worktree.GitDir
		if lay.AdminDir == "" {
			lay.AdminDir = adminDirIn(ws.Worktree.Path, ws.CommonDir)
		}
	}
	if ws.Kind == session.KindInPlace {
		lay.Top = ws.RepoRoot
		lay.ReadOnly = inPlaceReadOnly(ws.RepoRoot, ws.CommonDir)
		if ws.Folder {
			lay.ReadOnly = []string{ws.CommonDir}
		}
	}
	return lay
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
	if common != "" && !slices.ContainsFunc(out, func(p string) bool { return fsutil.SameDir(p, common) }) {
		if st, err := os.Stat(common); err == nil && st.IsDir() {
			out = append(out, common)
		}
	}
	return out
}

// adminDirIn is the worktree's own git directory, from its .git link, when
// it lies under the repository's worktrees/ directory; "" otherwise (a
// rewritten link must not make another directory writable).
func adminDirIn(top, common string) string {
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
