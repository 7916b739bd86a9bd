package git

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestParseVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Version
		err  bool
	}{
		{"git version 2.39.5", Version{2, 39, 5}, false},
		{"git version 2.45.1.windows.1", Version{2, 45, 1}, false},
		{"git version 2.40.1 (Apple Git-143)", Version{2, 40, 1}, false},
		{"git version 2.30", Version{2, 30, 0}, false},
		{"hg version 1", Version{}, true},
		{"git version x", Version{}, true},
	} {
		got, err := ParseVersion(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v, err=%v", tc.in, got, err, tc.want, tc.err)
		}
	}
	if !(Version{2, 39, 5}).AtLeast(MinVersion) || (Version{2, 29, 9}).AtLeast(MinVersion) {
		t.Fatal("AtLeast")
	}
}

func TestSplitZ(t *testing.T) {
	t.Parallel()
	got := SplitZ([]byte("a\x00b c\x00new\nline\x00"))
	if len(got) != 3 || got[1] != "b c" || got[2] != "new\nline" {
		t.Fatalf("SplitZ = %q", got)
	}
	if SplitZ(nil) != nil {
		t.Fatal("SplitZ(nil)")
	}
}

func TestErrorCarriesStderrAndClearsEnv(t *testing.T) {
	dir := t.TempDir()
	// An inherited GIT_DIR must not redirect the runner.
	t.Setenv("GIT_DIR", filepath.Join(dir, "elsewhere"))
	r := New(dir)
	ctx := context.Background()
	if _, err := r.Run(ctx, "init", "-q", "-b", "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		t.Fatalf("GIT_DIR was not cleared: %v", err)
	}
	_, err := r.Run(ctx, "rev-parse", "--verify", "no-such-ref")
	var ge *Error
	if !errors.As(err, &ge) || ge.ExitCode == 0 || ge.Stderr == "" || ge.Args[0] != "rev-parse" {
		t.Fatalf("want *Error with stderr, got %#v", err)
	}
	if _, err := CheckVersion(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestLockRetryGivesUp(t *testing.T) {
	dir := t.TempDir()
	r := New(dir)
	r.LockRetry = 50 * 1e6
	ctx := context.Background()
	if _, err := r.Run(ctx, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", "index.lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := r.Run(ctx, "add", "f")
	if !IsLockError(err) {
		t.Fatalf("want lock error, got %v", err)
	}
	os.Remove(filepath.Join(dir, ".git", "index.lock"))
	if _, err := r.Run(ctx, "add", "f"); err != nil {
		t.Fatal(err)
	}
}
