package git

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestVersionCache: the kept version answers only for the executable it
// was kept for; another git on the PATH, or the same path replaced, asks
// git again, and a damaged cache is no answer.
func TestVersionCache(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake git is a shell script")
	}
	bin := t.TempDir()
	fake := filepath.Join(bin, "git")
	write := func(version string, mtime time.Time) {
		t.Helper()
		if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'git version "+version+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(fake, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	then := time.Now().Add(-time.Hour)
	write("2.40.0", then)
	cache := filepath.Join(t.TempDir(), "yolop", "git-version")
	id := executableID("git")
	if id == "" {
		t.Fatal("no identity for the git on the PATH")
	}
	if _, ok := cachedVersion(cache, id); ok {
		t.Fatal("an answer before anything was kept")
	}
	keepVersion(cache, id, "git version 2.40.0\n")
	if out, ok := cachedVersion(cache, id); !ok || out != "git version 2.40.0\n" {
		t.Fatalf("kept %q, %v", out, ok)
	}
	// Upgraded in place: same path, another file.
	write("2.41.0", then.Add(time.Minute))
	if again := executableID("git"); again == id {
		t.Fatal("a replaced git kept its identity")
	} else if _, ok := cachedVersion(cache, again); ok {
		t.Fatal("the version of the replaced git answered for the new one")
	}
	// Another git first on the PATH.
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "git"), []byte("#!/bin/sh\necho 'git version 2.40.0'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", other+string(os.PathListSeparator)+bin)
	if _, ok := cachedVersion(cache, executableID("git")); ok {
		t.Fatal("the version of one git answered for another")
	}
	if err := os.WriteFile(cache, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := cachedVersion(cache, id); ok {
		t.Fatal("a damaged cache answered")
	}
	t.Setenv("PATH", t.TempDir())
	if executableID("git") != "" {
		t.Fatal("an identity for a git that is not on the PATH")
	}
}
