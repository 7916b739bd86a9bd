package land

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/git"
)

// CommitOptions configure Commit.
type CommitOptions struct {
	Message  string // "" = the session title and its turn prompts
	NoVerify bool   // run no hook at all
}

// CommitResult describes a commit on the session branch.
type CommitResult struct {
	SessionID string `json:"session_id"`
	// Branch is the branch the commit is on: the session's, or the one
	// the agent switched its worktree to (MovedFrom then names the
	// session's, which does not have the commit).
	Branch    string `json:"branch"`
	MovedFrom string `json:"moved_from,omitempty"`
	// InPlace: the commit is on the user's own branch, of the paths an
	// in-place session's turns changed.
	InPlace bool   `json:"in_place,omitempty"`
	Commit  string `json:"commit"`
	Files   int    `json:"files"`
	Message string `json:"message"`
	// Notes are what the host must tell along with the commit (repairs
	// made when the session was opened).
	Notes []string `json:"notes,omitempty"`
}

// HookError is a commit refused by one of the user's hooks.
type HookError struct{ Output string }

// FaultCode is hook_failed.
func (e *HookError) FaultCode() fault.Code { return fault.HookFailed }

func (e *HookError) Error() string {
	return "a git hook refused the commit (nothing was committed; fix what it reports, or commit with --no-verify):\n" + strings.TrimSpace(e.Output)
}

// ErrFolderNoGit refuses a commit of a session in a folder outside git.
var ErrFolderNoGit = fault.New(fault.NotARepository, "no git repository to commit to")

// Commit commits the session worktree's current files on the session's
// branch with the user's identity, running the user's hooks unless
// NoVerify. Exactly the captured paths are staged: ignored and
// write-blocklisted paths never are, nested repositories are left alone.
//
// Every git process runs pinned to the session's recorded git dirs. The
// ones that write the index and the commit (and so run clean filters and
// hooks) run through s.Confine, confined like the agent's commands: a hook
// in a worktree-relative core.hooksPath (husky's .husky) is the agent's to
// write. NoVerify runs no hook at all (core.hooksPath is an empty
// directory of yolop's): not pre-commit and commit-msg only, but also
// prepare-commit-msg, post-commit, reference-transaction and
// post-index-change.
func Commit(ctx context.Context, s Session, o CommitOptions) (*CommitResult, error) {
	if s.Folder {
		return nil, fmt.Errorf("%w: session %s works in %s, which is not in a git repository, so there is no branch to commit to; its files are already there (`yolop diff %s` shows the changes; run `git init` there first to start a repository of your own)", ErrFolderNoGit, s.ID, s.Worktree, s.ID)
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	if err := s.Engine.Guard(); err != nil {
		return nil, err
	}
	if s.InPlace {
		return commitInPlace(ctx, s, o)
	}
	r := git.New(s.Worktree)
	d := s.Engine.Dirs()
	if d.Set() {
		r = d.Runner()
	}
	if err := identity(ctx, r); err != nil {
		return nil, err
	}
	branch, err := commitBranch(ctx, r, s)
	if err != nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp("", "yolop-commit-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	ch, err := s.changesSinceHead(ctx, r, "the session's files")
	if err != nil {
		return nil, err
	}
	var paths []string
	subs := gitlinks(ch)
	for _, c := range ch {
		if blocked(c.Path) || atOrUnder(c.Path, subs) {
			// The capture leaves blocklisted directories and nested
			// repositories out; their absence is not a deletion. A
			// submodule is not checked out in the worktree: files written
			// into its empty directory cannot be committed there.
			continue
		}
		paths = append(paths, c.Path)
	}
	// confined runs one command that writes the index or the commit.
	confined := func(hooks bool, extra []string, args ...string) error {
		if s.Confine == nil {
			rr := r.With(extra...)
			if hooks {
				rr = r.WithUserHooks()
			}
			_, err := rr.Run(ctx, args...)
			return err
		}
		if err := s.Engine.Guard(); err != nil {
			return err
		}
		argv := git.Argv(hooks, args...)
		env := git.PinnedEnv()
		if d.Set() {
			env = append(env, d.Env()...)
		}
		env = append(env, extra...)
		_, err := s.Confine(ctx, s.Worktree, env, argv...)
		return err
	}
	// The index holds exactly HEAD plus the captured paths: whatever was
	// staged by other means (a shell `git add -f`) is not committed.
	if err := confined(false, nil, "reset", "-q", "--no-refresh"); err != nil {
		return nil, fmt.Errorf("prepare the index of %s: %w", s.Worktree, err)
	}
	if len(paths) > 0 {
		list := filepath.Join(scratch, "paths")
		if err := os.WriteFile(list, []byte(strings.Join(paths, "\x00")+"\x00"), 0o600); err != nil {
			return nil, err
		}
		if err := confined(false, []string{"GIT_LITERAL_PATHSPECS=1"}, "add", "-A", "-f", "--pathspec-from-file="+list, "--pathspec-file-nul"); err != nil {
			return nil, fmt.Errorf("stage the session's files: %w", err)
		}
	}
	if _, err := r.Run(ctx, "diff", "--cached", "--quiet", "--exit-code"); err == nil {
		return nil, fmt.Errorf("%w: the session's files equal %s's last commit", ErrNothingToCommit, branch)
	}
	msg := o.Message
	if strings.TrimSpace(msg) == "" {
		msg = defaultMessage(s)
	}
	msgFile := filepath.Join(scratch, "message")
	if err := os.WriteFile(msgFile, []byte(msg), 0o600); err != nil {
		return nil, err
	}
	args := []string{"commit", "-q", "--no-edit", "-F", msgFile}
	if o.NoVerify {
		// No hook at all: an empty directory of yolop's own, which no
		// command of the session can write.
		none := filepath.Join(scratch, "no-hooks")
		if err := os.Mkdir(none, 0o700); err != nil {
			return nil, err
		}
		args = append([]string{"-c", "core.hooksPath=" + none}, append(args, "--no-verify")...)
	}
	if err := confined(!o.NoVerify, nil, args...); err != nil {
		var ge *git.Error
		if errors.As(err, &ge) && ge.ExitCode == 1 {
			return nil, &HookError{Output: ge.Stderr}
		}
		return nil, fmt.Errorf("commit: %w", err)
	}
	out, err := r.Run(ctx, "rev-parse", "HEAD")
	if err != nil {
		return nil, err
	}
	files, err := committedFiles(ctx, r, "HEAD")
	if err != nil {
		return nil, err
	}
	res := &CommitResult{SessionID: s.ID, Branch: branch, Commit: git.Trim(out), Files: files, Message: msg}
	if branch != s.Branch {
		res.MovedFrom = s.Branch
	}
	return res, nil
}

// BranchPrefix is the namespace of the branches of sessions (the sandbox
// lets a turn create and switch branches there only).
const BranchPrefix = "yolop/"

// commitBranch returns the branch the worktree's HEAD is on: the
// session's, or another session-namespace branch the agent switched to
// (committed on, and said). A detached HEAD or a branch of the user's is
// refused: the commit would be on no branch, or on the user's.
func commitBranch(ctx context.Context, r *git.Runner, s Session) (string, error) {
	out, err := r.Run(ctx, "symbolic-ref", "-q", "HEAD")
	var ge *git.Error
	if err != nil && !(errors.As(err, &ge) && ge.ExitCode == 1) {
		return "", fmt.Errorf("read the branch of %s: %w", s.Worktree, err)
	}
	ref := git.Trim(out)
	branch, onBranch := strings.CutPrefix(ref, "refs/heads/")
	if err == nil && onBranch && branch == s.Branch {
		return branch, nil
	}
	if err == nil && onBranch && strings.HasPrefix(branch, BranchPrefix) {
		return branch, nil
	}
	back := fmt.Sprintf("`git -C %s switch %s`", shellQuote(s.Worktree), s.Branch)
	if err != nil || !onBranch {
		at := ""
		if h, herr := r.Run(ctx, "rev-parse", "--short", "HEAD"); herr == nil {
			at = " at " + git.Trim(h)
		}
		return "", fmt.Errorf("%w: %s is on no branch (the agent detached its HEAD%s), so a commit would belong to no branch; put it on one first: %s to return to the session's branch, or `git -C %s switch -c %sNAME` to keep what the agent committed since, then commit again (nothing was committed)", ErrBranchMoved, s.Worktree, at, back, shellQuote(s.Worktree), BranchPrefix)
	}
	return "", fmt.Errorf("%w: the agent switched %s to the branch %s, which is not a session branch (%s…); yolop does not commit on it: switch back with %s, then commit again (nothing was committed)", ErrBranchMoved, s.Worktree, branch, BranchPrefix, back)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '+' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// WorktreeBranch returns the branch a session's worktree is on and, when
// the agent moved it off the session's branch (recorded), a sentence
// saying so ("" otherwise, and when HEAD cannot be read).
func WorktreeBranch(worktree, recorded string) (branch, note string) {
	h, err := git.WorktreeHead(worktree)
	switch {
	case err != nil || h.Branch == recorded:
		return recorded, ""
	case h.Branch != "":
		return h.Branch, fmt.Sprintf("the agent switched to it from the session's branch %s", recorded)
	default:
		return recorded, fmt.Sprintf("the agent detached HEAD at %s: the worktree is on no branch, and commits made there do not move this one", git.ShortOID(h.Detached))
	}
}

// identity refuses when git has no user name or email to commit with.
func identity(ctx context.Context, r *git.Runner) error {
	get := func(env, key string) string {
		if v := os.Getenv(env); v != "" {
			return v
		}
		out, err := r.Run(ctx, "config", "--get", key)
		if err != nil {
			return ""
		}
		return git.Trim(out)
	}
	name := get("GIT_AUTHOR_NAME", "user.name")
	email := get("GIT_AUTHOR_EMAIL", "user.email")
	if email == "" {
		email = os.Getenv("EMAIL")
	}
	if name == "" || email == "" {
		return fmt.Errorf("%w: set one with `git config --global user.name \"Your Name\"` and `git config --global user.email you@example.com`", ErrNoIdentity)
	}
	return nil
}

// defaultMessage is the session title and the list of its turn prompts.
func defaultMessage(s Session) string {
	title := strings.TrimSpace(s.Title)
	if title == "" {
		title = "yolop session " + s.ID
	}
	var b strings.Builder
	b.WriteString(title + "\n")
	if len(s.Prompts) > 0 {
		b.WriteString("\nTurns:\n")
		for _, p := range s.Prompts {
			first, _, _ := strings.Cut(strings.TrimSpace(p), "\n")
			if r := []rune(first); len(r) > 72 {
				first = string(r[:71]) + "…"
			}
			b.WriteString("- " + first + "\n")
		}
	}
	b.WriteString("\nyolop-session: " + s.ID + "\n")
	return b.String()
}

// committedFiles counts the files commit rev changed as git's own commit
// summary does: a rename is one file (-M whatever diff.renames says, which
// --name-only then lists once, by its new path).
func committedFiles(ctx context.Context, r *git.Runner, rev string) (int, error) {
	out, err := r.Run(ctx, "diff-tree", "--no-commit-id", "--name-only", "-M", "-r", "-z", rev)
	if err != nil {
		return 0, err
	}
	return len(git.SplitZ(out)), nil
}
