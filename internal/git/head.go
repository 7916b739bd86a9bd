package git

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Head is what a work tree's HEAD names: a branch (Branch, without
// refs/heads/), or a commit when detached (Detached).
type Head struct {
	Branch   string
	Detached string
}

// WorktreeHead reads the HEAD of the work tree at dir (a linked worktree,
// through its .git file, or a main one) without running git: two small
// file reads, cheap enough for listings.
func WorktreeHead(dir string) (Head, error) {
	gitDir := filepath.Join(dir, ".git")
	st, err := os.Stat(gitDir)
	if err != nil {
		return Head{}, fmt.Errorf("read the HEAD of %s: %w", dir, err)
	}
	if !st.IsDir() {
		b, err := os.ReadFile(gitDir)
		if err != nil {
			return Head{}, fmt.Errorf("read the HEAD of %s: %w", dir, err)
		}
		admin, ok := parseGitFile(b, dir)
		if !ok {
			return Head{}, fmt.Errorf("read the HEAD of %s: %s is not a gitdir link", dir, gitDir)
		}
		gitDir = admin
	}
	b, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return Head{}, fmt.Errorf("read the HEAD of %s: %w", dir, err)
	}
	s := strings.TrimSpace(string(b))
	if ref, ok := strings.CutPrefix(s, "ref: "); ok {
		if br, ok := strings.CutPrefix(strings.TrimSpace(ref), "refs/heads/"); ok && br != "" {
			return Head{Branch: br}, nil
		}
		return Head{}, fmt.Errorf("read the HEAD of %s: it names %q, not a branch", dir, ref)
	}
	if len(s) < 40 || strings.Trim(s, "0123456789abcdef") != "" {
		return Head{}, fmt.Errorf("read the HEAD of %s: unexpected content %q", dir, s)
	}
	return Head{Detached: s}, nil
}
