// Package git runs the git CLI for yolop.
//
// Every call goes through one Runner: argv slices (never shell strings),
// per-call pinning of the settings that could make a snapshot slow, noisy or
// interactive (hooks, signing, auto-gc, maintenance, pagers, prompts,
// fsmonitor), and an environment cleared of variables that would redirect git
// to another repository or index. Failures are *Error values carrying the
// argv, exit code and stderr.
package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/fsutil"
)

// pinned are the -c settings applied to every call. They only affect the one
// process; no config file is written.
var pinned = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "commit.gpgSign=false",
	"-c", "tag.gpgSign=false",
	"-c", "gc.auto=0",
	"-c", "maintenance.auto=false",
	"-c", "core.pager=cat",
	"-c", "core.fsmonitor=false",
	"-c", "advice.detachedHead=false",
	"-c", "credential.helper=",
}

// clearedEnv are inherited variables that would point git somewhere else.
var clearedEnv = []string{
	"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_COMMON_DIR",
	"GIT_PREFIX", "GIT_CEILING_DIRECTORIES", "GIT_TRACE", "GIT_EXEC_PATH",
	"GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_EDITOR", "GIT_PAGER",
	"GIT_ASKPASS", "SSH_ASKPASS", "GIT_QUARANTINE_PATH",
}

// Argv is the argument list the Runner gives git for args: the pinned
// settings (with the repository's hooks on when userHooks), then args. A
// caller that starts git another way (under the spawn helper) uses it with
// PinnedEnv so the process is pinned the same way.
func Argv(userHooks bool, args ...string) []string {
	pins := pinned
	if userHooks {
		pins = pins[2:] // drop core.hooksPath=/dev/null
	}
	return append(append([]string{"git"}, pins...), args...)
}

// PinnedEnv are the variables Environ sets for every git process.
func PinnedEnv() []string {
	return []string{"GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "GIT_CONFIG_NOSYSTEM=1"}
}

// Error is a failed git invocation.
type Error struct {
	Args     []string
	ExitCode int
	Stderr   string
	Err      error
}

func (e *Error) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: exit %d: %s", strings.Join(e.Args, " "), e.ExitCode, msg)
}

func (e *Error) Unwrap() error { return e.Err }

// ErrNotFound is returned when no git binary is on PATH.
var ErrNotFound = fault.Plain("git: executable not found on PATH; install git 2.30 or newer")

// Runner runs git in one directory with a fixed extra environment.
type Runner struct {
	// Dir is the working directory of every call.
	Dir string
	// Env holds extra KEY=VALUE pairs (applied after the cleared set), e.g. a
	// private GIT_INDEX_FILE.
	Env []string
	// LockRetry is how long to keep retrying a call that failed on a held
	// index.lock or ref lock. Zero means the default (2s); negative disables.
	LockRetry time.Duration
	// userHooks lets the repository's own hooks run (see WithUserHooks).
	userHooks bool
}

// WithUserHooks returns a copy of r that runs the repository's hooks. Only a
// command the user asked for in so many words uses it (`yolop commit` runs
// the user's pre-commit and commit-msg hooks); every other call keeps them
// off.
func (r *Runner) WithUserHooks() *Runner {
	c := *r
	c.userHooks = true
	return &c
}

// New returns a runner for dir.
func New(dir string) *Runner { return &Runner{Dir: dir} }

// With returns a copy of r with extra environment entries.
func (r *Runner) With(env ...string) *Runner {
	c := *r
	c.Env = append(append([]string(nil), r.Env...), env...)
	return &c
}

// InDir returns a copy of r running in dir.
func (r *Runner) InDir(dir string) *Runner {
	c := *r
	c.Dir = dir
	return &c
}

// Run runs git with args and returns its stdout.
func (r *Runner) Run(ctx context.Context, args ...string) ([]byte, error) {
	return r.RunInput(ctx, nil, args...)
}

// RunInput runs git with stdin and returns its stdout.
func (r *Runner) RunInput(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	retry := r.LockRetry
	if retry == 0 {
		retry = 2 * time.Second
	}
	deadline := time.Now().Add(retry)
	delay := 10 * time.Millisecond
	for {
		out, err := r.once(ctx, stdin, nil, args)
		if err == nil || !IsLockError(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return out, err
		}
		select {
		case <-ctx.Done():
			return out, err
		case <-time.After(delay):
		}
		if delay < 200*time.Millisecond {
			delay *= 2
		}
	}
}

// Stream runs git writing its stdout to w (for large outputs such as
// cat-file --batch).
func (r *Runner) Stream(ctx context.Context, stdin io.Reader, w io.Writer, args ...string) error {
	cmd, stderr := r.command(ctx, args)
	cmd.Stdin = stdin
	cmd.Stdout = w
	return r.wrap(args, cmd.Run(), stderr)
}

// Command returns a prepared *exec.Cmd for interactive pipelines (for
// example cat-file --batch with stdin and stdout pipes). The caller starts
// and waits for it; use WrapError on the result of Wait.
func (r *Runner) Command(ctx context.Context, args ...string) (*exec.Cmd, *bytes.Buffer) {
	return r.command(ctx, args)
}

// WrapError converts an exec error into *Error with stderr.
func (r *Runner) WrapError(args []string, err error, stderr *bytes.Buffer) error {
	return r.wrap(args, err, stderr)
}

func (r *Runner) once(ctx context.Context, stdin []byte, _ io.Writer, args []string) ([]byte, error) {
	cmd, stderr := r.command(ctx, args)
	if stdin != nil {
		in, err := filledPipe(stdin)
		if err != nil {
			return nil, r.wrap(args, err, nil)
		}
		if in != nil {
			defer in.Close()
			cmd.Stdin = in
		} else {
			cmd.Stdin = bytes.NewReader(stdin)
		}
	}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	err := cmd.Run()
	return stdout.Bytes(), r.wrap(args, err, stderr)
}

// pipeAtomic is the least a pipe holds anywhere (POSIX's PIPE_BUF).
const pipeAtomic = 512

// filledPipe returns the read end of a pipe that already holds all of b,
// its write end closed, or nil when b does not fit the pipe's buffer.
// A git process then reads its input without this process copying it
// in: os/exec copies any other reader from a goroutine, which on a busy
// machine may wait milliseconds for the Go runtime to give it a
// processor (a thread stuck in a slow system call holds one) while git
// waits for its input.
func filledPipe(b []byte) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	if len(b) > pipeCapacity(r) {
		r.Close()
		w.Close()
		return nil, nil
	}
	_, err = w.Write(b)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Runner) command(ctx context.Context, args []string) (*exec.Cmd, *bytes.Buffer) {
	pins := pinned
	if r.userHooks {
		pins = pins[2:] // drop core.hooksPath=/dev/null
	}
	full := append(append([]string(nil), pins...), args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = r.Dir
	cmd.Env = Environ(r.Env...)
	if g, ok := ctx.Value(groupKey{}).(int); ok && g > 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: g}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 2 * time.Second
	return cmd, &stderr
}

type groupKey struct{}

// InProcessGroup returns ctx whose git processes start in the process
// group pgid (0: their caller's, as without it), so that one signal to
// the group reaches each of them and the processes they start: a spare
// preparation stops its checkout that way while a turn runs.
func InProcessGroup(ctx context.Context, pgid int) context.Context {
	return context.WithValue(ctx, groupKey{}, pgid)
}

func (r *Runner) wrap(args []string, err error, stderr *bytes.Buffer) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, exec.ErrNotFound) {
		return ErrNotFound
	}
	ge := &Error{Args: append([]string(nil), args...), ExitCode: -1, Err: err}
	if stderr != nil {
		ge.Stderr = stderr.String()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ge.ExitCode = ee.ExitCode()
	}
	return ge
}

// Environ returns the process environment with the redirecting git
// variables removed, prompts disabled, a stable locale, and extra appended.
func Environ(extra ...string) []string {
	skip := make(map[string]bool, len(clearedEnv))
	for _, k := range clearedEnv {
		skip[k] = true
	}
	env := make([]string, 0, len(os.Environ())+len(extra)+4)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if skip[k] || k == "GIT_TERMINAL_PROMPT" || k == "LC_ALL" || k == "GIT_OPTIONAL_LOCKS" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, PinnedEnv()...)
	return append(env, extra...)
}

// IsLockError reports whether err is a git failure caused by a lock file
// held by another process (index.lock, a ref lock).
func IsLockError(err error) bool {
	var ge *Error
	if !errors.As(err, &ge) {
		return false
	}
	s := ge.Stderr
	return strings.Contains(s, ".lock': File exists") ||
		strings.Contains(s, "Unable to create") && strings.Contains(s, ".lock") ||
		strings.Contains(s, "cannot lock ref")
}

// IsWorktreeRace reports whether err is git failing because another
// worktree of the repository was being added at that moment: `git worktree
// add` creates $GIT_COMMON_DIR/worktrees/<id> before it writes the files in
// it, and a git that lists the worktrees in between dies reading them
// ("failed to read .git/worktrees/<id>/commondir"). Trying again succeeds.
func IsWorktreeRace(err error) bool {
	var ge *Error
	if !errors.As(err, &ge) {
		return false
	}
	s := ge.Stderr
	return strings.Contains(s, "failed to read ") && strings.Contains(s, "worktrees/") &&
		(strings.Contains(s, "/commondir") || strings.Contains(s, "/gitdir"))
}

// SplitZ splits NUL-separated git output, dropping the trailing empty field.
func SplitZ(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	parts := strings.Split(string(b), "\x00")
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// Trim returns out as a string without the trailing newline.
func Trim(out []byte) string { return strings.TrimRight(string(out), "\n") }

// IsOID reports whether s is a full object id, SHA-1 or SHA-256, in
// lowercase hex.
func IsOID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Version is a parsed git version.
type Version struct{ Major, Minor, Patch int }

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// AtLeast reports whether v >= o.
func (v Version) AtLeast(o Version) bool {
	if v.Major != o.Major {
		return v.Major > o.Major
	}
	if v.Minor != o.Minor {
		return v.Minor > o.Minor
	}
	return v.Patch >= o.Patch
}

// MinVersion is the oldest git yolop supports.
var MinVersion = Version{2, 30, 0}

// ParseVersion parses "git version 2.39.5" (and vendor suffixes).
func ParseVersion(s string) (Version, error) {
	s = strings.TrimSpace(s)
	rest, ok := strings.CutPrefix(s, "git version ")
	if !ok {
		return Version{}, fmt.Errorf("git: unrecognised version output %q", s)
	}
	fields := strings.FieldsFunc(rest, func(r rune) bool { return r == '.' || r == ' ' || r == '-' })
	var nums [3]int
	for i := 0; i < 3 && i < len(fields); i++ {
		n, err := strconv.Atoi(fields[i])
		if err != nil {
			if i == 0 {
				return Version{}, fmt.Errorf("git: unrecognised version output %q", s)
			}
			break
		}
		nums[i] = n
	}
	return Version{nums[0], nums[1], nums[2]}, nil
}

var (
	versionOnce sync.Once
	versionVal  Version
	versionErr  error
)

// CheckVersion runs `git version` once per process and fails when git is
// missing or older than MinVersion. What it printed is kept in the user's
// cache directory under the identity of the git executable the PATH names
// (its path, size and modification time), so that a later process running
// the same git reads it instead of starting one more (every process of a
// session start pays for each git it starts).
func CheckVersion(ctx context.Context) (Version, error) {
	versionOnce.Do(func() {
		versionVal, versionErr = checkVersion(ctx, versionCache())
	})
	return versionVal, versionErr
}

// checkVersion is CheckVersion's question, with the version kept in cache
// ("" keeps none).
func checkVersion(ctx context.Context, cache string) (Version, error) {
	id := executableID("git")
	out, ok := cachedVersion(cache, id)
	if !ok {
		b, err := New("").Run(ctx, "version")
		if err != nil {
			return Version{}, err
		}
		out = string(b)
		keepVersion(cache, id, out)
	}
	v, err := ParseVersion(out)
	if err == nil && !v.AtLeast(MinVersion) {
		err = fmt.Errorf("git: version %s is too old; yolop needs %s or newer", v, MinVersion)
	}
	return v, err
}

// versionCache is the file CheckVersion keeps git's version in ("" when
// the user has no cache directory). Only on Linux: elsewhere the git on
// the PATH may be a launcher that runs whichever git is selected (macOS's
// /usr/bin/git), whose own identity says nothing of the git it runs.
func versionCache() string {
	if runtime.GOOS != "linux" {
		return ""
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "yolop", "git-version")
}

// executableID identifies the executable name resolves to on the PATH:
// its absolute path, size and modification time ("" when it is not
// found). An upgrade replaces the file, and with it the identity.
func executableID(name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		return ""
	}
	if p, err = filepath.Abs(p); err != nil {
		return ""
	}
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() {
		return ""
	}
	return fmt.Sprintf("%s\x00%d\x00%d", p, st.Size(), st.ModTime().UnixNano())
}

// cachedVersion is the `git version` output kept for the executable id.
func cachedVersion(cache, id string) (string, bool) {
	if cache == "" || id == "" {
		return "", false
	}
	b, err := os.ReadFile(cache)
	if err != nil {
		return "", false
	}
	key, out, ok := strings.Cut(string(b), "\n")
	if !ok || key != id || !strings.HasPrefix(out, "git version ") {
		return "", false
	}
	return out, true
}

// keepVersion records out for the executable id. The cache only spares a
// process: a failure to write it is not one to report, and the next
// process asks git again.
func keepVersion(cache, id, out string) {
	if cache == "" || id == "" || strings.Contains(id, "\n") {
		return
	}
	if err := os.MkdirAll(filepath.Dir(cache), 0o700); err != nil {
		return
	}
	_ = fsutil.WriteFileCache(cache, []byte(id+"\n"+out), 0o600) // checked when read
}
