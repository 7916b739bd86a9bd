package git

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fakeGit writes an executable named git in dir that prints version and
// appends a line to calls at each run, with the given mtime.
func fakeGit(t *testing.T, dir, version, calls string, mtime time.Time) {
	t.Helper()
	script := "#!/bin/sh\necho run >> '" + calls + "'\necho 'git version " + version + "'\n"
	p := filepath.Join(dir, "git")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func runs(t *testing.T, calls string) int {
	t.Helper()
	b, err := os.ReadFile(calls)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "run\n")
}

// TestVersionCache: a second question about the same git reads the kept
// version instead of running git; a git that differs in path, size or
// modification time is asked again, and a damaged cache is no answer.
func TestVersionCache(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake git is a shell script")
	}
	ctx := context.Background()
	calls := filepath.Join(t.TempDir(), "calls")
	cache := filepath.Join(t.TempDir(), "yolop", "git-version")
	bin := t.TempDir()
	then := time.Now().Add(-time.Hour).Truncate(time.Second)
	fakeGit(t, bin, "2.40.0", calls, then)
	t.Setenv("PATH", bin)
	ask := func(want string, wantRuns int) {
		t.Helper()
		v, err := checkVersion(ctx, cache)
		if err != nil || v.String() != want {
			t.Fatalf("checkVersion: %v, %v; want %s", v, err, want)
		}
		if got := runs(t, calls); got != wantRuns {
			t.Fatalf("git ran %d times, want %d", got, wantRuns)
		}
	}
	ask("2.40.0", 1)
	ask("2.40.0", 1) // kept
	// Same path and size, another modification time.
	fakeGit(t, bin, "2.40.1", calls, then.Add(time.Minute))
	ask("2.40.1", 2)
	ask("2.40.1", 2)
	// Same path and modification time, another size.
	fakeGit(t, bin, "2.40.10", calls, then.Add(time.Minute))
	ask("2.40.10", 3)
	// Another path first on the PATH, same size and modification time.
	other := t.TempDir()
	fakeGit(t, other, "2.40.11", calls, then.Add(time.Minute))
	t.Setenv("PATH", other+string(os.PathListSeparator)+bin)
	ask("2.40.11", 4)
	// A damaged cache.
	if err := os.WriteFile(cache, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	ask("2.40.11", 5)
	ask("2.40.11", 5)
	// Too old, whether asked or kept.
	fakeGit(t, other, "2.20.0", calls, then)
	for range 2 {
		if _, err := checkVersion(ctx, cache); err == nil || !strings.Contains(err.Error(), "too old") {
			t.Fatalf("git 2.20.0: %v, want too old", err)
		}
	}
	if got := runs(t, calls); got != 6 {
		t.Fatalf("git ran %d times, want 6", got)
	}
	// No cache: git is asked every time.
	ask2 := func() {
		if _, err := checkVersion(ctx, ""); err == nil {
			t.Fatal("git 2.20.0 passed")
		}
	}
	ask2()
	ask2()
	if got := runs(t, calls); got != 8 {
		t.Fatalf("git ran %d times without a cache, want 8", got)
	}
	t.Setenv("PATH", t.TempDir())
	if executableID("git") != "" {
		t.Fatal("an identity for a git that is not on the PATH")
	}
}
