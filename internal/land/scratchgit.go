package land

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/yolop-dev/yolop/internal/git"
)

// A commit in place runs the user's hooks and clean filters, which the
// agent may have written (a relative core.hooksPath such as husky's .husky
// lies in the checkout), so git commit runs confined like the agent's
// commands. Those cannot write the checkout's .git (the sandbox makes it
// read-only), so the confined git works in a scratch git directory of its
// own:
//
//   - HEAD names the checkout's branch, whose ref holds the checkout's
//     HEAD commit;
//   - objects/ is empty, with the repository's object directory as its
//     alternate: new objects land in the scratch directory, nothing is
//     written to the repository's;
//   - index is a copy of the checkout's index with its modification time
//     (so git trusts the same stat data and rehashes the same racily clean
//     entries), with the shared part of a split index beside it;
//   - config is the configuration git reads in the checkout (system,
//     global, the repository's and the worktree's, includes resolved there
//     so includeIf gitdir: conditions hold as in the checkout), flattened
//     into one file; the global file is not read again. Without a
//     core.hooksPath it names the repository's hooks directory.
//
// Afterwards yolop itself, unconfined and with no hook, checks that the
// scratch branch descends from the checkout's HEAD, copies the objects of
// the new commits into the repository (unpack-objects verifies every
// one), moves the branch with HEAD's reflog from the checkout's HEAD to
// the new commit (refused if it moved meanwhile), and resets the
// committed paths in the checkout's index to the commit, as `git commit
// --only` would leave them. Everything the confined git or its hooks could
// write lies in the scratch directory or the checkout's files.
type scratchGit struct {
	dir    string // the scratch git directory
	branch string // refs/heads/<branch>
	top    string // the checkout's top level
}

// newScratchGit makes the scratch git directory under parent for a commit
// on branch (short name) whose checkout HEAD is head.
func newScratchGit(ctx context.Context, r *git.Runner, parent, top, branch, head string) (*scratchGit, error) {
	out, err := r.Run(ctx, "rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir")
	if err != nil {
		return nil, fmt.Errorf("find the git directory of %s: %w", top, err)
	}
	f := strings.Split(git.Trim(out), "\n")
	if len(f) != 2 {
		return nil, fmt.Errorf("find the git directory of %s: git said %q", top, git.Trim(out))
	}
	gitDir, common := f[0], f[1]
	dir, err := os.MkdirTemp(parent, "commit-git-")
	if err != nil {
		return nil, err
	}
	g := &scratchGit{dir: dir, branch: "refs/heads/" + branch, top: top}
	if err := os.MkdirAll(filepath.Join(dir, "objects", "info"), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "objects", "info", "alternates"), []byte(filepath.Join(common, "objects")+"\n"), 0o600); err != nil {
		return nil, err
	}
	ref := filepath.Join(dir, filepath.FromSlash(g.branch))
	if err := os.MkdirAll(filepath.Dir(ref), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(ref, []byte(head+"\n"), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: "+g.branch+"\n"), 0o600); err != nil {
		return nil, err
	}
	cfg, err := flatConfig(ctx, r, filepath.Join(common, "hooks"))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "config"), cfg, 0o600); err != nil {
		return nil, err
	}
	if err := copyIndex(gitDir, common, dir); err != nil {
		return nil, fmt.Errorf("copy the index of %s: %w", top, err)
	}
	return g, nil
}

// env pins a git process to the scratch directory and the checkout.
func (g *scratchGit) env() []string {
	return []string{"GIT_DIR=" + g.dir, "GIT_WORK_TREE=" + g.top, "GIT_INDEX_FILE=" + filepath.Join(g.dir, "index"), "GIT_CONFIG_GLOBAL=/dev/null"}
}

// tip reads the scratch branch: the commit the confined git made.
func (g *scratchGit) tip() (string, error) {
	b, err := os.ReadFile(filepath.Join(g.dir, filepath.FromSlash(g.branch)))
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	packed, err := os.ReadFile(filepath.Join(g.dir, "packed-refs"))
	if err != nil {
		return "", fmt.Errorf("the commit's branch %s is gone", g.branch)
	}
	for _, line := range strings.Split(string(packed), "\n") {
		if oid, name, ok := strings.Cut(line, " "); ok && name == g.branch {
			return oid, nil
		}
	}
	return "", fmt.Errorf("the commit's branch %s is gone", g.branch)
}

// publish brings the confined commit into the checkout's repository: the
// branch moves from head to the scratch branch's tip (which must descend
// from head), and the paths the commit changed are reset in the
// checkout's index. With only, a commit that changes any other path is
// refused (no hook ran that could have staged it). It returns the new
// commit and notes for the user.
func (g *scratchGit) publish(ctx context.Context, r *git.Runner, branch, head, subject string, only map[string]bool) (string, []string, error) {
	tip, err := g.tip()
	if err != nil {
		return "", nil, err
	}
	if tip == head {
		return "", nil, fmt.Errorf("%w: git made no commit", ErrNothingToCommit)
	}
	// The scratch objects are read as an alternate: only read.
	alt := r.With("GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(g.dir, "objects"))
	if _, err := alt.Run(ctx, "rev-parse", "--verify", "--quiet", tip+"^{commit}"); err != nil {
		return "", nil, fmt.Errorf("the commit git made (%s) is not a commit: %w", tip, err)
	}
	if _, err := alt.Run(ctx, "merge-base", "--is-ancestor", head, tip); err != nil {
		return "", nil, fmt.Errorf("the commit git made (%s) does not descend from %s's HEAD %s (a hook rewrote the branch?); nothing was committed", git.ShortOID(tip), branch, git.ShortOID(head))
	}
	pack, err := alt.RunInput(ctx, []byte(tip+"\n^"+head+"\n"), "pack-objects", "--revs", "--stdout", "-q")
	if err != nil {
		return "", nil, fmt.Errorf("pack the new commit: %w", err)
	}
	if _, err := r.RunInput(ctx, pack, "unpack-objects", "-q"); err != nil {
		return "", nil, fmt.Errorf("store the new commit in %s: %w", g.top, err)
	}
	names, err := r.Run(ctx, "diff-tree", "-r", "--name-only", "-z", "--no-renames", head, tip)
	if err != nil {
		return "", nil, fmt.Errorf("read the new commit: %w", err)
	}
	paths := git.SplitZ(names)
	if only != nil {
		for _, p := range paths {
			if !only[p] {
				return "", nil, fmt.Errorf("the commit git made (%s) changes %s, which is not one of the session's paths (a process of the session changed it while git ran?); nothing was committed", git.ShortOID(tip), p)
			}
		}
	}
	out, err := r.Run(ctx, "symbolic-ref", "-q", "HEAD")
	if err != nil || git.Trim(out) != g.branch {
		return "", nil, fmt.Errorf("%w: %s left the branch %s while the commit was made; nothing was committed (the commit %s is kept in no branch)", ErrBranchMoved, g.top, branch, git.ShortOID(tip))
	}
	if _, err := r.Run(ctx, "update-ref", "-m", "commit: "+subject, "HEAD", tip, head); err != nil {
		return "", nil, fmt.Errorf("%w: %s moved while the commit was made (%v); nothing was committed", ErrBranchMoved, branch, err)
	}
	if len(paths) > 0 {
		// No refresh: the entries get the commit's blobs without stat data,
		// so git rehashes those paths once; the user's other staged changes
		// stay staged.
		in := []byte(strings.Join(paths, "\x00") + "\x00")
		if _, err := r.With("GIT_LITERAL_PATHSPECS=1").RunInput(ctx, in, "reset", "-q", "--no-refresh", tip, "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
			return tip, []string{fmt.Sprintf("committed %s, but the committed paths' entries in the index of %s could not be updated (%v): `git reset -q -- PATH` for each committed path makes them match", git.ShortOID(tip), g.top, err)}, nil
		}
	}
	return tip, nil, nil
}

// flatConfig is the configuration git reads in r's checkout, as one
// config file: every entry of the system, global, repository and worktree
// files in git's order, includes resolved (their include entries left
// out), command-line entries (yolop's own pins) left out. hooks is the
// hooks directory named when the configuration names none.
func flatConfig(ctx context.Context, r *git.Runner, hooks string) ([]byte, error) {
	out, err := r.Run(ctx, "config", "--list", "-z", "--includes", "--show-scope")
	if err != nil {
		var ge *git.Error
		if !errors.As(err, &ge) || ge.ExitCode != 1 || ge.Stderr != "" {
			return nil, fmt.Errorf("read the git configuration: %w", err)
		}
	}
	var b bytes.Buffer
	hooksSet := false
	f := strings.Split(string(out), "\x00")
	for i := 0; i+1 < len(f); i += 2 {
		scope, kv := f[i], f[i+1]
		if scope == "command" {
			continue
		}
		key, val, hasVal := strings.Cut(kv, "\n")
		dot, last := strings.IndexByte(key, '.'), strings.LastIndexByte(key, '.')
		if dot <= 0 || last == len(key)-1 {
			continue
		}
		section, name := key[:dot], key[last+1:]
		if section == "include" || section == "includeif" {
			continue // resolved in place by --includes
		}
		if section == "core" && dot == last && name == "hookspath" {
			hooksSet = true
		}
		b.WriteString("[" + section)
		if dot < last {
			b.WriteString(" " + quoteConfig(key[dot+1:last]))
		}
		b.WriteString("]\n\t" + name)
		if hasVal {
			b.WriteString(" = " + quoteConfig(val))
		}
		b.WriteString("\n")
	}
	if !hooksSet {
		b.WriteString("[core]\n\thooksPath = " + quoteConfig(hooks) + "\n")
	}
	return b.Bytes(), nil
}

// quoteConfig quotes s as a config value or subsection name.
func quoteConfig(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}

// copyIndex copies the index of gitDir (and the shared index of a split
// one) into dir with their modification times: the racy-git check then
// treats the copy's entries exactly as the original's.
func copyIndex(gitDir, common, dir string) error {
	if err := copyKeepTime(filepath.Join(gitDir, "index"), filepath.Join(dir, "index")); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	dirs := []string{gitDir}
	if filepath.Clean(common) != filepath.Clean(gitDir) {
		dirs = append(dirs, common)
	}
	for _, d := range dirs {
		shared, _ := filepath.Glob(filepath.Join(d, "sharedindex.*"))
		for _, p := range shared {
			if err := copyKeepTime(p, filepath.Join(dir, filepath.Base(p))); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

func copyKeepTime(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chtimes(to, st.ModTime(), st.ModTime())
}
