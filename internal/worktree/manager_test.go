package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// installHook makes the repository's post-checkout hook leave a marker, so a
// test can prove that no hook ran.
func installHook(t *testing.T, repo string) string {
	t.Helper()
	marker := filepath.Join(t.TempDir(), "hook-ran")
	hook := filepath.Join(repo, ".git", "hooks", "post-checkout")
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hook, []byte("#!/bin/sh\ntouch '"+marker+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Prove the hook works when git is allowed to run it.
	probe := filepath.Join(t.TempDir(), "probe")
	gittest.Git(t, repo, "-c", "core.hooksPath="+filepath.Join(repo, ".git", "hooks"), "worktree", "add", "-q", "--detach", probe)
	if !exists(marker) {
		t.Fatal("the test hook does not run even when allowed")
	}
	gittest.Git(t, repo, "worktree", "remove", "--force", probe)
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	return marker
}

func TestCreate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, repo string) (dir string)
	}{
		{"normal branch", func(t *testing.T, repo string) string { return repo }},
		{"detached HEAD", func(t *testing.T, repo string) string {
			gittest.Git(t, repo, "checkout", "-q", "--detach", "HEAD~1")
			return repo
		}},
		{"linked worktree of the user", func(t *testing.T, repo string) string {
			linked := filepath.Join(t.TempDir(), "linked")
			gittest.Git(t, repo, "worktree", "add", "-q", "-b", "topic", linked, "HEAD~1")
			gittest.WriteFile(t, linked, "topic.txt", "topic\n")
			gittest.Commit(t, linked, "topic")
			return linked
		}},
		{"subdirectory", func(t *testing.T, repo string) string { return filepath.Join(repo, "src", "pkg") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := gittest.NewRepo(t)
			gittest.WriteFile(t, repo, "src/pkg/code.go", "package pkg\n")
			gittest.Commit(t, repo, "code")
			marker := installHook(t, repo)
			dir := tc.setup(t, repo)
			r := detect(t, dir)
			userHead := gittest.Git(t, r.Root, "rev-parse", "HEAD")
			userStatus := gittest.Git(t, r.Root, "status", "--porcelain", "--branch")

			data := filepath.Join(t.TempDir(), "data")
			m := &Manager{DataDir: data}
			const sid = "s_01jf3k8p2qabcdef"
			info := create(t, m, r, sid, "Fix the parser")

			wantPath := filepath.Join(data, "worktrees", RepoID(r.CommonDir), sid)
			want := Info{Path: wantPath, Branch: "yolop/fix-the-parser-abcdef", Base: userHead, RepoRoot: r.Root, CommonDir: r.CommonDir}
			if info != want {
				t.Fatalf("Create = %+v\nwant     %+v", info, want)
			}
			for _, d := range []string{data, filepath.Join(data, "worktrees"), filepath.Dir(wantPath)} {
				st, err := os.Stat(d)
				if err != nil {
					t.Fatal(err)
				}
				if st.Mode().Perm() != 0o700 {
					t.Errorf("%s has mode %v, want 0700", d, st.Mode().Perm())
				}
			}
			if got := gittest.Git(t, info.Path, "symbolic-ref", "HEAD"); got != "refs/heads/"+info.Branch {
				t.Errorf("worktree HEAD = %s, want the session branch", got)
			}
			if got := gittest.Git(t, info.Path, "rev-parse", "HEAD"); got != userHead {
				t.Errorf("worktree starts at %s, want the user's HEAD %s", got, userHead)
			}
			if got := gittest.Git(t, info.Path, "status", "--porcelain"); got != "" {
				t.Errorf("new worktree is not clean:\n%s", got)
			}
			if got := gittest.Git(t, info.Path, "ls-files"); got != gittest.Git(t, r.Root, "ls-tree", "-r", "--name-only", "HEAD") {
				t.Errorf("worktree files %q differ from the user's HEAD", got)
			}
			if exists(marker) {
				t.Error("a post-checkout hook ran while creating the worktree")
			}
			if got := detect(t, info.Path); got.CommonDir != r.CommonDir {
				t.Errorf("worktree belongs to %s, want %s", got.CommonDir, r.CommonDir)
			}
			if gittest.Git(t, r.Root, "rev-parse", "HEAD") != userHead || gittest.Git(t, r.Root, "status", "--porcelain", "--branch") != userStatus {
				t.Error("the user's checkout changed")
			}

			// Creating the same session again is refused and changes nothing.
			if _, err := m.Create(context.Background(), r, sid, "again"); err == nil || !strings.Contains(err.Error(), "already exists") {
				t.Errorf("second Create: %v, want an 'already exists' error", err)
			}
			if exists := gittest.Git(t, r.Root, "branch", "--list", "yolop/again-*"); exists != "" {
				t.Errorf("refused Create left branch %s", exists)
			}
		})
	}
}

func TestCreateBranchCollision(t *testing.T) {
	t.Parallel()
	r := detect(t, gittest.NewRepo(t))
	m := &Manager{DataDir: t.TempDir()}
	// Same title and same last six characters: the names would collide.
	a := create(t, m, r, "s_aaaa123456", "Same")
	b := create(t, m, r, "s_bbbb123456", "Same")
	c := create(t, m, r, "s_cccc123456", "Same")
	if a.Branch != "yolop/same-123456" || b.Branch != "yolop/same-123456-2" || c.Branch != "yolop/same-123456-3" {
		t.Errorf("branches %q, %q, %q", a.Branch, b.Branch, c.Branch)
	}
}

func TestCreateRejects(t *testing.T) {
	t.Parallel()
	r := detect(t, gittest.NewRepo(t))
	for _, tc := range []struct {
		name    string
		m       *Manager
		repo    *Repo
		sid     string
		mention string
	}{
		{"path separator in id", &Manager{DataDir: t.TempDir()}, r, "../evil", "invalid session id"},
		{"empty id", &Manager{DataDir: t.TempDir()}, r, "", "invalid session id"},
		{"dot id", &Manager{DataDir: t.TempDir()}, r, ".", "invalid session id"},
		{"no data dir", &Manager{}, r, "s_1", "DataDir is empty"},
		{"no repository", &Manager{DataDir: t.TempDir()}, nil, "s_1", "needs a repository"},
		{"bare", &Manager{DataDir: t.TempDir()}, &Repo{Root: r.Root, CommonDir: r.CommonDir, Head: r.Head, Bare: true}, "s_1", "bare"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tc.m.Create(context.Background(), tc.repo, tc.sid, "t")
			if err == nil || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("Create: %v, want an error mentioning %q", err, tc.mention)
			}
			if tc.m.DataDir != "" && exists(filepath.Join(tc.m.DataDir, "worktrees")) {
				t.Error("a refused Create created directories")
			}
		})
	}
	if got := gittest.Git(t, r.Root, "branch", "--list", "yolop/*"); got != "" {
		t.Errorf("refused Creates left branches: %s", got)
	}
}

func TestCreateFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		breakRepo func(t *testing.T, repo string)
		mention   string
	}{
		// A branch named "yolop" makes every "yolop/..." branch impossible
		// (a ref cannot be both a file and a directory).
		{"branch named yolop", func(t *testing.T, repo string) { gittest.Git(t, repo, "branch", "yolop") }, "rename it"},
		// git creates the branch, then fails to record the worktree and
		// keeps the branch: Create must delete it again.
		{"worktree cannot be recorded", func(t *testing.T, repo string) {
			gittest.WriteFile(t, repo, ".git/worktrees", "not a directory")
		}, "add the session worktree"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := gittest.NewRepo(t)
			r := detect(t, repo)
			tc.breakRepo(t, repo)
			before := allRefs(t, repo)
			m := &Manager{DataDir: t.TempDir()}
			if _, err := m.Create(context.Background(), r, "s_1", "x"); err == nil || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("Create: %v, want an error mentioning %q", err, tc.mention)
			}
			equalLines(t, "refs", allRefs(t, repo), before)
			if p, _ := m.PathFor(r, "s_1"); exists(p) {
				t.Errorf("failed Create left %s", p)
			}
			if got := gittest.Git(t, repo, "worktree", "list", "--porcelain"); strings.Count(got, "worktree ") != 1 {
				t.Errorf("failed Create left a worktree record:\n%s", got)
			}
		})
	}
}

func TestEnsure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	marker := installHook(t, repo)
	r := detect(t, repo)
	m := &Manager{DataDir: t.TempDir()}
	info := create(t, m, r, "s_keep", "work")
	gittest.WriteFile(t, info.Path, "work.txt", "committed work\n")
	work := gittest.Commit(t, info.Path, "session work")

	// An intact worktree is used as it is.
	got, err := m.Ensure(ctx, info)
	if err != nil || got != info {
		t.Fatalf("Ensure on an intact worktree = %+v, %v", got, err)
	}

	// Deleted directory, branch still there: re-added on the branch.
	if err := os.RemoveAll(info.Path); err != nil {
		t.Fatal(err)
	}
	got, err = m.Ensure(ctx, info)
	want := info
	want.Recreated = true
	if err != nil || got != want {
		t.Fatalf("Ensure after rm -rf = %+v, %v; want it recreated", got, err)
	}
	if h := gittest.Git(t, info.Path, "rev-parse", "HEAD"); h != work {
		t.Errorf("re-added worktree at %s, want the branch tip %s", h, work)
	}
	if b := gittest.Git(t, info.Path, "symbolic-ref", "--short", "HEAD"); b != info.Branch {
		t.Errorf("re-added worktree on %s, want %s", b, info.Branch)
	}
	if readFile(t, filepath.Join(info.Path, "work.txt")) != "committed work\n" {
		t.Error("re-added worktree lacks the branch's files")
	}
	if exists(marker) {
		t.Error("a hook ran while re-adding the worktree")
	}
	if n := strings.Count(gittest.Git(t, repo, "worktree", "list", "--porcelain"), "worktree "); n != 2 {
		t.Errorf("git records %d worktrees, want the user's and the session's", n)
	}

	// Deleted directory and deleted branch: the branch is made again at
	// the session's base (the caller puts the files back from snapshots).
	if err := os.RemoveAll(info.Path); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, repo, "worktree", "prune")
	gittest.Git(t, repo, "branch", "-D", info.Branch)
	got, err = m.Ensure(ctx, info)
	want.BranchRecreated = true
	if err != nil || got != want {
		t.Fatalf("Ensure without branch = %+v, %v; want it recreated with its branch", got, err)
	}
	if h := gittest.Git(t, info.Path, "rev-parse", "HEAD"); h != info.Base {
		t.Errorf("re-made branch at %s, want the base %s", h, info.Base)
	}
	if b := gittest.Git(t, info.Path, "symbolic-ref", "--short", "HEAD"); b != info.Branch {
		t.Errorf("re-added worktree on %s, want %s", b, info.Branch)
	}

	// Deleted directory, branch and base commit: a clear error.
	if err := os.RemoveAll(info.Path); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, repo, "worktree", "prune")
	gittest.Git(t, repo, "branch", "-D", info.Branch)
	gone := info
	gone.Base = strings.Repeat("1", len(info.Base))
	_, err = m.Ensure(ctx, gone)
	if !errors.Is(err, ErrBranchGone) || !strings.Contains(err.Error(), info.Branch) || !strings.Contains(err.Error(), "is gone too") {
		t.Errorf("Ensure without branch and base: %v, want ErrBranchGone naming the branch", err)
	}
	if exists(info.Path) {
		t.Error("failed Ensure created the worktree directory")
	}
	if out := gittest.Git(t, repo, "branch", "--list", info.Branch); out != "" {
		t.Errorf("failed Ensure left branch %s", info.Branch)
	}

	// A directory at the path that is not a worktree of this repository.
	other := create(t, m, detect(t, gittest.NewRepo(t)), "s_other", "")
	foreign := info
	foreign.Path = other.Path
	if _, err := m.Ensure(ctx, foreign); err == nil || !strings.Contains(err.Error(), "is not a worktree of") {
		t.Errorf("Ensure on another repository's worktree: %v", err)
	} else {
		requireNoDeleteAdvice(t, err, info.Branch)
	}
	plain := info
	plain.Path = t.TempDir()
	gittest.WriteFile(t, plain.Path, "mine.txt", "the user's file\n")
	if _, err := m.Ensure(ctx, plain); err == nil || !strings.Contains(err.Error(), "is not a worktree of") {
		t.Errorf("Ensure on a plain directory: %v", err)
	} else {
		requireNoDeleteAdvice(t, err, info.Branch)
	}
	if !exists(filepath.Join(plain.Path, "mine.txt")) {
		t.Error("a refused Ensure touched the foreign directory")
	}
	// A subdirectory of the right worktree is not its top level.
	sub := create(t, m, r, "s_sub", "")
	gittest.WriteFile(t, sub.Path, "d/f", "x")
	inner := sub
	inner.Path = filepath.Join(sub.Path, "d")
	if _, err := m.Ensure(ctx, inner); err == nil {
		t.Error("Ensure accepted a subdirectory of a worktree")
	}
	if _, err := m.Ensure(ctx, Info{Path: info.Path}); err == nil || !strings.Contains(err.Error(), "incomplete") {
		t.Errorf("Ensure with an incomplete record: %v", err)
	}
}

// requireNoDeleteAdvice: the refusal for a directory that is not the
// session's worktree must not tell the user to delete it (it may be theirs,
// or hold work that is in no snapshot), and should say where the session's
// work is.
func requireNoDeleteAdvice(t *testing.T, err error, branch string) {
	t.Helper()
	msg := strings.ToLower(err.Error())
	for _, bad := range []string{"remove it", "delete it,", "rm -", "move it away"} {
		if strings.Contains(msg, bad) {
			t.Errorf("the refusal advises destroying a directory yolop does not own (%q): %v", bad, err)
		}
	}
	if !strings.Contains(err.Error(), branch) {
		t.Errorf("the refusal does not say the work is on branch %s: %v", branch, err)
	}
}

// Sessions starting at the same moment in one repository: git dies listing
// worktrees while another is half added ("failed to read
// .git/worktrees/<id>/commondir"), after it made the -b branch, and a
// `git worktree prune` run meanwhile (a failed start's cleanup) deletes a
// half-added worktree's record under it. Every Create must succeed, each on
// its own branch, with no branch left over.
func TestCreateConcurrently(t *testing.T) {
	t.Parallel()
	r := detect(t, gittest.NewRepo(t))
	m := &Manager{DataDir: t.TempDir()}
	const rounds, each = 4, 6
	for round := range rounds {
		var wg sync.WaitGroup
		errs := make([]error, each)
		stop := make(chan struct{})
		pruned := make(chan error, 1)
		go func() {
			for {
				select {
				case <-stop:
					pruned <- nil
					return
				default:
				}
				if err := pruneWorktrees(context.Background(), r.CommonDir); err != nil {
					pruned <- err
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
		for i := range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := fmt.Sprintf("s_%02d%02dconcurrent", round, i)
				_, errs[i] = m.Create(context.Background(), r, id, fmt.Sprintf("start %d %d", round, i))
			}()
		}
		wg.Wait()
		close(stop)
		if err := <-pruned; err != nil {
			t.Fatalf("round %d: prune: %v", round, err)
		}
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, start %d: %v", round, i, err)
			}
		}
	}
	branches := strings.Fields(gittest.Git(t, r.Root, "for-each-ref", "--format=%(refname)", "refs/heads/yolop/"))
	worktrees := strings.Count(gittest.Git(t, r.Root, "worktree", "list", "--porcelain"), "worktree ")
	if len(branches) != rounds*each || worktrees != rounds*each+1 {
		t.Errorf("%d session branches and %d worktrees (with the checkout) after %d starts", len(branches), worktrees, rounds*each)
	}
}
