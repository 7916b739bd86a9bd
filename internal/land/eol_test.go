package land

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// With eol=crlf attributes the files on disk hold CRLF while the objects
// hold LF: apply must merge the way git does (no line differs only by its
// ending) and write CRLF back; undo must return the raw bytes.
func TestApplyWithLineEndingConversion(t *testing.T) {
	repo := gittest.NewRepo(t)
	gittest.WriteFile(t, repo, ".gitattributes", "*.txt text eol=crlf\n")
	gittest.WriteFile(t, repo, "a.txt", lines)
	base := gittest.Commit(t, repo, "crlf")
	// Check the file out again so the disk holds CRLF.
	os.Remove(filepath.Join(repo, "a.txt"))
	gittest.Git(t, repo, "checkout", "--", "a.txt")
	crlf := strings.ReplaceAll(lines, "\n", "\r\n")
	if read(t, repo, "a.txt") != crlf {
		t.Fatalf("the checkout does not hold CRLF: %q", read(t, repo, "a.txt"))
	}
	r := attachSession(t, repo, base, "s_eol")
	wt := r.sess.Worktree
	if read(t, wt, "a.txt") != crlf {
		t.Fatalf("the session worktree does not hold CRLF")
	}
	write(t, wt, "a.txt", strings.Replace(crlf, "one", "ONE", 1))
	write(t, repo, "a.txt", strings.Replace(crlf, "seven", "SEVEN", 1))
	before := manifest(t, repo)

	d, err := Diff(ctx, r.sess, DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Stat.Files != 1 || d.Stat.Insertions != 1 || d.Stat.Deletions != 1 {
		t.Fatalf("diff compares raw line endings: %+v\n%s", d.Stat, d.Text)
	}
	res, err := Apply(ctx, r.sess, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := read(t, repo, "a.txt"), strings.Replace(strings.Replace(crlf, "one", "ONE", 1), "seven", "SEVEN", 1); got != want {
		t.Fatalf("merged a.txt = %q, want %q (outcomes %v)", got, want, res.Paths)
	}
	if _, err := Undo(ctx, r.sess, UndoOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := diffManifests(before, manifest(t, repo)); d != "" {
		t.Fatalf("undo is not byte-exact:\n%s", d)
	}
}
