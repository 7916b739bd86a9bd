package gitstate

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

func TestMain(m *testing.M) { os.Exit(gittest.Main(m)) }

// TestTurnRecords: a turn that plants a hook and commits is recorded with
// what it changed and HEAD before it; a preview that undoes it names the
// changed git files, and one whose target saw another HEAD says HEAD moved.
// A torn last line costs only its own note.
func TestTurnRecords(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t)
	common := filepath.Join(repo, ".git")
	dir := t.TempDir()

	before := Read(repo, common)
	head := gittest.Git(t, repo, "rev-parse", "HEAD")
	if before.Head() != head {
		t.Fatalf("Head = %q, want %q", before.Head(), head)
	}
	// The turn: a hook, a commit, and a yolop ref, which is not git's
	// state that matters.
	gittest.WriteFile(t, common, "hooks/pre-commit", "#!/bin/sh\n")
	gittest.WriteFile(t, repo, "a.txt", "a\n")
	gittest.Commit(t, repo, "agent")
	gittest.Git(t, repo, "update-ref", "refs/yolop/checkpoints/s/cp1", "HEAD")
	changed := Read(repo, common).ChangedSince(before)
	for _, want := range []string{".git/hooks/pre-commit", ".git/refs/heads/main"} {
		if !slices.Contains(changed, want) {
			t.Errorf("changed lacks %s: %q", want, changed)
		}
	}
	if slices.ContainsFunc(changed, func(p string) bool { return filepath.Base(filepath.Dir(p)) == "s" }) {
		t.Errorf("yolop's own refs are listed: %q", changed)
	}
	if err := Append(dir, Record{Turn: "cp1", Head: before.Head(), Changed: changed}); err != nil {
		t.Fatal(err)
	}
	if err := Append(dir, Record{Turn: "cp2", Head: Read(repo, common).Head()}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, File), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"turn":"cp3","chan`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	warn := PreviewWarnings(dir, repo, common)
	ws := warn("cp1", []string{"cp1", "cp2", "cp3"})
	kinds := map[string]string{}
	for _, w := range ws {
		kinds[w.Kind] = w.Turn
	}
	if kinds["git_changed"] != "cp1" || kinds["head_moved"] != "cp1" || len(ws) != 2 {
		t.Fatalf("warnings: %+v", ws)
	}
	if ws := warn("cp2", []string{"cp2"}); len(ws) != 0 {
		t.Fatalf("a turn that changed nothing of git's, at today's HEAD, warns: %+v", ws)
	}
}
