// Package gittest builds real git repositories for tests.
package gittest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/spawn"
	"github.com/yolop-dev/yolop/internal/testenv"
)

// Isolate points git's global and system config away from the developer's
// own, so tests behave the same everywhere. Call it from TestMain or each
// test (it uses t.Setenv, so not with t.Parallel; prefer IsolateProcess in
// TestMain).
func IsolateProcess(dir string) {
	cfg := filepath.Join(dir, "gitconfig")
	_ = os.WriteFile(cfg, []byte("[user]\n\tname = yolop test\n\temail = test@example.invalid\n[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"), 0o600)
	os.Setenv("GIT_CONFIG_GLOBAL", cfg)
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	os.Setenv("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
	os.Setenv("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
}

// Main is a TestMain helper: turns off the race runtime's exit sleep for
// the processes the tests start (testenv.NoRaceExitSleep), runs the spawn
// helper when the test binary was started as one (tools' commands run
// through it), and isolates git config for the package's tests.
func Main(m *testing.M) int {
	testenv.NoRaceExitSleep()
	spawn.Main()
	dir, err := os.MkdirTemp("", "gittest-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	IsolateProcess(dir)
	return m.Run()
}

// MainWithHome is Main plus an empty HOME for the package's tests: the
// agent's shell commands run `bash -l`, which reads the user's profile, and
// tests must not depend on (or wait for) the machine's. The Go caches keep
// pointing where they did, so tests that build binaries stay warm.
func MainWithHome(m *testing.M) int {
	testenv.NoRaceExitSleep()
	spawn.Main()
	home, err := os.MkdirTemp("", "gittest-home-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(home)
	if old, err := os.UserHomeDir(); err == nil {
		if os.Getenv("GOPATH") == "" {
			os.Setenv("GOPATH", filepath.Join(old, "go"))
		}
		if os.Getenv("GOCACHE") == "" {
			if c, err := os.UserCacheDir(); err == nil {
				os.Setenv("GOCACHE", filepath.Join(c, "go-build"))
			}
		}
	}
	os.Setenv("HOME", home)
	return Main(m)
}

// Git runs git in dir and fails the test on error; it returns trimmed stdout.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := git.New(dir).Run(context.Background(), args...)
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return git.Trim(out)
}

// NewRepo creates a repository with one commit containing README.md and
// returns its path.
func NewRepo(t testing.TB) string {
	t.Helper()
	return NewRepoIn(t, t.TempDir())
}

// NewRepoIn is NewRepo in parent/repo (e.g. on a SmallDisk).
func NewRepoIn(t testing.TB, parent string) string {
	t.Helper()
	dir := filepath.Join(parent, "repo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "init", "-q", "-b", "main")
	Git(t, dir, "config", "user.name", "yolop test")
	Git(t, dir, "config", "user.email", "test@example.invalid")
	WriteFile(t, dir, "README.md", "hello\n")
	Commit(t, dir, "initial")
	return dir
}

// NewEmptyRepo creates a repository without commits.
func NewEmptyRepo(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "empty")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "init", "-q", "-b", "main")
	return dir
}

// WriteFile writes content to dir/rel, creating parents.
func WriteFile(t testing.TB, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Commit stages everything and commits it.
func Commit(t testing.TB, dir, msg string) string {
	t.Helper()
	Git(t, dir, "add", "-A")
	Git(t, dir, "commit", "-q", "--allow-empty", "-m", msg)
	return Git(t, dir, "rev-parse", "HEAD")
}
