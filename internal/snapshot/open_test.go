package snapshot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// TestOpenAsksGitOnce: opening an engine on a worktree with a commit asks
// git for what it needs of the repository in one rev-parse, the tree an
// earlier engine left included (every turn opens one); the other cases
// take the slower path that tells them apart. The settings a capture
// depends on come from one `git config`.
func TestOpenAsksGitOnce(t *testing.T) {
	wt := gittest.NewRepo(t)
	sh(t, wt, `printf 'a\n' > a; git add -A; git commit -qm base; printf 'b\n' > b`)
	state := filepath.Join(t.TempDir(), "state")
	trace := filepath.Join(t.TempDir(), "trace.json")
	// Not parallel: the variable reaches every git this process starts.
	t.Setenv("GIT_TRACE2_EVENT", trace)
	counts := func() (revParse, config int) {
		t.Helper()
		b, err := os.ReadFile(trace)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, `"event":"start"`) {
				continue
			}
			if strings.Contains(line, `"rev-parse"`) {
				revParse++
			}
			if strings.Contains(line, `"config"`) {
				config++
			}
		}
		if err := os.Remove(trace); err != nil {
			t.Fatal(err)
		}
		return revParse, config
	}
	open := func() *Engine {
		t.Helper()
		e, err := Open(context.Background(), Options{Worktree: wt, SessionID: "s_test", StateDir: state})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return e
	}
	e := open()
	if n, c := counts(); n != 1 || c != 1 {
		t.Fatalf("the first Open ran %d rev-parse and %d config processes, want 1 of each", n, c)
	}
	s := capture(t, e, "cp1")
	e.Wait()
	if _, c := counts(); c != 0 {
		t.Fatalf("the first capture ran %d config processes, want none (Open read the settings)", c)
	}
	e = open()
	if n, c := counts(); n != 1 || c != 1 {
		t.Fatalf("an Open after a capture ran %d rev-parse and %d config processes, want 1 of each", n, c)
	}
	if !e.headIsTree || e.head != s.Tree {
		t.Fatalf("the reopened engine starts from %s (a tree: %v), want the captured tree %s", e.head, e.headIsTree, s.Tree)
	}
	e.Wait()
}

// TestOpenReadsTheCaptureSettings: the one `git config` at Open finds
// core.excludesFile and core.attributesFile with ~ expanded (as git reads
// them), the last of a key set twice, and core.autocrlf; with none set,
// git's defaults.
func TestOpenReadsTheCaptureSettings(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	e := openEngine(t, wt)
	if e.exclFile != "" || e.autocrlf != "" || e.attrFile != "" {
		t.Fatalf("with nothing set: excludesFile %q, autocrlf %q, attributesFile %q; want all empty", e.exclFile, e.autocrlf, e.attrFile)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	wt = gittest.NewRepo(t)
	gittest.Git(t, wt, "config", "core.excludesFile", "/first/ignore")
	gittest.Git(t, wt, "config", "--add", "core.excludesFile", "~/second ignore")
	gittest.Git(t, wt, "config", "core.autoCRLF", "Input")
	gittest.Git(t, wt, "config", "core.attributesFile", "/etc/attrs")
	e = openEngine(t, wt)
	if want := filepath.Join(home, "second ignore"); e.exclFile != want {
		t.Errorf("excludesFile %q, want %q", e.exclFile, want)
	}
	if e.autocrlf != "Input" || e.attrFile != "/etc/attrs" {
		t.Errorf("autocrlf %q, attributesFile %q; want Input and /etc/attrs", e.autocrlf, e.attrFile)
	}
	if !e.conversionConfigured() {
		t.Error("core.autocrlf=input does not count as a conversion")
	}
}
