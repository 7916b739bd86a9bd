package git_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// TestConfigValues: none set is an empty map, not an error; a key set
// twice has its last value; paths have ~ expanded; a broken config file
// is an error.
func TestConfigValues(t *testing.T) {
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull) // the machine's settings are not the test's
	repo := gittest.NewRepo(t)
	r := git.New(repo)
	ctx := context.Background()
	v, err := git.ConfigValues(ctx, r, "core.autocrlf", "core.attributesfile")
	if err != nil || len(v) != 0 {
		t.Fatalf("with none set: %v, %v; want an empty map", v, err)
	}
	gittest.Git(t, repo, "config", "core.attributesFile", "/first")
	gittest.Git(t, repo, "config", "--add", "core.attributesFile", "~/attrs")
	gittest.Git(t, repo, "config", "core.autoCRLF", "input")
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	v, err = git.ConfigValues(ctx, r, "core.autocrlf", "core.attributesfile")
	if err != nil || v["core.autocrlf"] != "input" || v["core.attributesfile"] != filepath.Join(home, "attrs") || len(v) != 2 {
		t.Fatalf("got %v, %v", v, err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".git", "config"), []byte("[core\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if v, err := git.ConfigValues(ctx, r, "core.autocrlf"); err == nil {
		t.Fatalf("a broken config read as %v without an error", v)
	}
}

func TestConvertsOutsideTree(t *testing.T) {
	dir := t.TempDir()
	empty, full := filepath.Join(dir, "empty"), filepath.Join(dir, "full")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte("* text\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg")) // no default file
	for _, c := range []struct {
		autocrlf, attrs, info string
		want                  bool
	}{
		{"", "", "", false},
		{"false", empty, empty, false},
		{"FALSE", "", filepath.Join(dir, "missing"), false},
		{"true", "", "", true},
		{"input", "", "", true},
		{"", full, "", true},
		{"", "", full, true},
	} {
		if got := git.ConvertsOutsideTree(c.autocrlf, c.attrs, c.info); got != c.want {
			t.Errorf("ConvertsOutsideTree(%q, %q, %q) = %v, want %v", c.autocrlf, c.attrs, c.info, got, c.want)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "xdg", "git"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "xdg", "git", "attributes"), []byte("* -text\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !git.ConvertsOutsideTree("", "", "") {
		t.Error("git's default attributes file is not looked at when core.attributesFile is unset")
	}
	if git.ConvertsOutsideTree("", empty, "") {
		t.Error("the default attributes file counted although core.attributesFile names another")
	}
}
