package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

func TestDetect(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t)
	gittest.WriteFile(t, repo, "sub/dir/f.txt", "f\n")
	head := gittest.Commit(t, repo, "sub")
	common := filepath.Join(repo, ".git")
	linked := filepath.Join(t.TempDir(), "linked")
	gittest.Git(t, repo, "worktree", "add", "-q", "-b", "feature", linked)
	detached := filepath.Join(t.TempDir(), "detached")
	gittest.Git(t, repo, "worktree", "add", "-q", "--detach", detached, "HEAD~1")
	first := gittest.Git(t, repo, "rev-parse", "HEAD~1")

	for _, tc := range []struct {
		name, dir, root, head string
	}{
		{"top level", repo, repo, head},
		{"subdirectory", filepath.Join(repo, "sub", "dir"), repo, head},
		{"linked worktree", linked, linked, head},
		{"detached HEAD", detached, detached, first},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := detect(t, tc.dir)
			want := Repo{Root: tc.root, CommonDir: common, Head: tc.head}
			if *got != want {
				t.Errorf("Detect = %+v\nwant     %+v", *got, want)
			}
		})
	}
}

// TestDetectAsksGitOnce: every yolop command detects its repository, so a
// checkout with a commit (the common case), from its top level or a
// subdirectory, even with a file named like the revision there, takes one
// git process.
func TestDetectAsksGitOnce(t *testing.T) {
	repo := gittest.NewRepo(t)
	gittest.WriteFile(t, repo, "sub/HEAD^{commit}", "a file named like the revision\n")
	head := gittest.Commit(t, repo, "sub")
	trace := filepath.Join(t.TempDir(), "trace.json")
	// Not parallel: the variable reaches every git this process starts.
	t.Setenv("GIT_TRACE2_EVENT", trace)
	for _, dir := range []string{repo, filepath.Join(repo, "sub")} {
		got := detect(t, dir)
		if got.Head != head || got.Root != repo {
			t.Fatalf("Detect(%s) = %+v, want HEAD %s at %s", dir, got, head, repo)
		}
		b, err := os.ReadFile(trace)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), `"event":"start"`); n != 1 {
			t.Fatalf("Detect(%s) ran %d git processes, want 1:\n%s", dir, n, b)
		}
		if err := os.Remove(trace); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDetectErrors(t *testing.T) {
	t.Parallel()
	plain := t.TempDir()
	bare := filepath.Join(t.TempDir(), "bare.git")
	gittest.Git(t, filepath.Dir(bare), "init", "-q", "--bare", bare)
	empty := gittest.NewEmptyRepo(t)
	repo := gittest.NewRepo(t)
	file := filepath.Join(repo, "README.md")

	for _, tc := range []struct {
		name, dir string
		is        error
		mentions  []string
	}{
		{"not a repository", plain, ErrNotRepo, []string{plain, "not inside a git repository"}},
		{"bare repository", bare, ErrBare, []string{bare, "bare repository", "checkout"}},
		{"inside .git", filepath.Join(repo, ".git"), ErrNotRepo, []string{"inside the git directory", "working tree"}},
		{"no commits", empty, ErrNoCommits, []string{empty, "no commits", "first commit"}},
		{"missing directory", filepath.Join(plain, "nope"), nil, []string{"nope", "no such file"}},
		{"a file", file, nil, []string{file, "not a directory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Detect(context.Background(), tc.dir)
			if err == nil {
				t.Fatal("Detect succeeded")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "worktree: ") {
				t.Errorf("error %q lacks the package prefix", msg)
			}
			for _, s := range tc.mentions {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q does not mention %q", msg, s)
				}
			}
		})
	}
}

func TestRepoID(t *testing.T) {
	t.Parallel()
	format := regexp.MustCompile(`^[a-z0-9._-]+-[0-9a-f]{8}$`)
	for _, tc := range []struct {
		commonDir, name string
	}{
		{"/home/u/code/Yolop/.git", "yolop"},
		{"/srv/mirror/project.git", "project"},
		{"/home/u/super/.git/modules/lib", "lib"},
		{"/x/My Repo (copy)/.git", "my-repo-copy"},
		{"/x/日本/.git", "repo"},
		{"/x/" + strings.Repeat("a", 60) + "/.git", strings.Repeat("a", 32)},
	} {
		id := RepoID(tc.commonDir)
		if !format.MatchString(id) || !strings.HasPrefix(id, tc.name+"-") {
			t.Errorf("RepoID(%q) = %q, want %s-<8 hex>", tc.commonDir, id, tc.name)
		}
		if again := RepoID(tc.commonDir); again != id {
			t.Errorf("RepoID(%q) not stable: %q then %q", tc.commonDir, id, again)
		}
		if cleaned := RepoID(tc.commonDir + "/"); cleaned != id {
			t.Errorf("RepoID with a trailing slash = %q, want %q", cleaned, id)
		}
	}
	// The same name in two places must not share a directory; the digest is
	// of the path, so it is fixed forever for a given repository.
	if a, b := RepoID("/a/proj/.git"), RepoID("/b/proj/.git"); a == b {
		t.Errorf("two repositories share the id %q", a)
	}
	if got, want := RepoID("/a/proj/.git"), "proj-d26dad6a"; got != want { // printf /a/proj/.git | sha256sum
		t.Errorf("RepoID(/a/proj/.git) = %q, want %q (ids must not change between versions)", got, want)
	}

	// A relative path and its absolute form give the same id.
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if RepoID("rel/.git") != RepoID(filepath.Join(wd, "rel/.git")) {
		t.Error("relative and absolute paths give different ids")
	}
}

func TestBranchName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ title, sid, want string }{
		{"Fix the login bug", "s_01jf3k8p2qabcdef", "yolop/fix-the-login-bug-abcdef"},
		{"", "s_01jf3k8p2qabcdef", "yolop/session-abcdef"},
		{"  ***  ", "s_01jf3k8p2qabcdef", "yolop/session-abcdef"},
		{"Refactor the whole storage layer now", "s_x1y2z3", "yolop/refactor-the-whole-stora-x1y2z3"},
		{"abcdefghijklmnopqrstuvw-xyz", "s_01jf3k8p2q123456", "yolop/abcdefghijklmnopqrstuvw-123456"},
		{"Über café", "s_01jf3k8p2q123456", "yolop/ber-caf-123456"},
		{"a/b..c~d^e:f?g*h[i\\j", "s_01jf3k8p2q123456", "yolop/a-b-c-d-e-f-g-h-i-j-123456"},
		{"short", "abc", "yolop/short-abc"},
		{"CASE", "s_01JF3K8P2QABCDEF", "yolop/case-abcdef"},
	} {
		if got := BranchName(tc.title, tc.sid); got != tc.want {
			t.Errorf("BranchName(%q, %q) = %q, want %q", tc.title, tc.sid, got, tc.want)
		}
		if len(strings.TrimPrefix(BranchName(tc.title, tc.sid), BranchPrefix)) > 24+1+6 {
			t.Errorf("BranchName(%q) too long", tc.title)
		}
	}
}
