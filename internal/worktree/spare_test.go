package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/snapshot"
)

// spareRig is a repository, a data directory and a Manager keeping one
// spare, with a helper that frees a session's worktree into a spare.
type spareRig struct {
	repo string
	data string
	m    *Manager
}

func newSpareRig(t *testing.T) *spareRig {
	t.Helper()
	repo := gittest.NewRepo(t)
	gittest.WriteFile(t, repo, ".gitignore", "*.log\nnode_modules/\n")
	gittest.WriteFile(t, repo, "src/a.txt", "a\n")
	gittest.Commit(t, repo, "base")
	data := t.TempDir()
	return &spareRig{repo: repo, data: data, m: &Manager{DataDir: data, Spares: 1}}
}

// start is Manager.Start + Done, failing the test on error.
func (r *spareRig) start(t *testing.T, sid string) *Started {
	t.Helper()
	st, err := r.m.Start(context.Background(), detect(t, r.repo), sid, "title "+sid)
	if err != nil {
		t.Fatalf("Start(%s): %v", sid, err)
	}
	// The session is complete from here on, as the app makes it.
	if err := os.MkdirAll(filepath.Join(r.data, "sessions", sid), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.data, "sessions", sid, "workspace.json"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st.Done()
	return st
}

// retire removes the session sid (its directory) and parks its worktree.
func (r *spareRig) retire(t *testing.T, st *Started, sid string, force bool) string {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(r.data, "sessions", sid)); err != nil {
		t.Fatal(err)
	}
	_, parked, err := r.m.Retire(context.Background(), st.Info, sid, force)
	if err != nil {
		t.Fatalf("Retire(%s): %v", sid, err)
	}
	return parked
}

func (r *spareRig) spareDir() string {
	return filepath.Join(r.data, "worktrees", RepoID(detect0(r.repo).CommonDir))
}

func detect0(dir string) *Repo {
	repo, err := Detect(context.Background(), dir)
	if err != nil {
		panic(err)
	}
	return repo
}

// trackedTree is the worktree's files as git sees them at HEAD plus the
// disk state, for comparing a recycled worktree with a fresh one.
func headTree(t *testing.T, dir string) string {
	return gittest.Git(t, dir, "rev-parse", "HEAD^{tree}")
}

func TestParkKeepsDependenciesAndClaimMovesToHead(t *testing.T) {
	t.Parallel()
	r := newSpareRig(t)
	st := r.start(t, "s_1")
	if st.Recycled {
		t.Fatal("first session recycled a spare that does not exist")
	}
	wt := st.Path
	// The session's work: a commit on its branch, an edit, an untracked
	// file, an ignored file and a dependency directory.
	gittest.WriteFile(t, wt, "work.txt", "work\n")
	gittest.Commit(t, wt, "session work")
	gittest.WriteFile(t, wt, "src/a.txt", "edited\n")
	gittest.WriteFile(t, wt, "untracked.txt", "u\n")
	gittest.WriteFile(t, wt, "debug.log", "ignored\n")
	gittest.WriteFile(t, wt, "node_modules/dep/index.js", "dep\n")
	gittest.WriteFile(t, wt, "pkg/node_modules/x.js", "nested dep\n")
	addCheckpointRef(t, r.repo, "s_1", "cp1")
	branch := st.Branch

	parked := r.retire(t, st, "s_1", true)
	if filepath.Base(parked) != ".spare-1" {
		t.Fatalf("parked at %q, want .spare-1", parked)
	}
	if exists(wt) {
		t.Fatalf("%s still exists after parking", wt)
	}
	// The branch with the session's work is kept; the refs are gone.
	if got := gittest.Git(t, r.repo, "log", "-1", "--format=%s", branch); got != "session work" {
		t.Fatalf("branch %s lost its work: %q", branch, got)
	}
	if refs := gittest.Git(t, r.repo, "for-each-ref", RefPrefix); refs != "" {
		t.Fatalf("checkpoint refs left: %s", refs)
	}
	// Parked: detached, clean, only the dependency directories kept.
	if out := gittest.Git(t, parked, "status", "--porcelain", "--untracked-files=all", "--ignored"); out != "!! node_modules/dep/index.js\n!! pkg/node_modules/x.js" && out != "!! node_modules/\n!! pkg/node_modules/" {
		t.Fatalf("parked spare is not clean except dependencies:\n%s", out)
	}
	if _, err := os.ReadFile(filepath.Join(parked, "src/a.txt")); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(parked, "src/a.txt")); got != "work\n" && got != "a\n" {
		t.Fatalf("src/a.txt = %q", got)
	}

	// The user's HEAD moves on; the next session claims the spare.
	gittest.WriteFile(t, r.repo, "src/b.txt", "b\n")
	head := gittest.Commit(t, r.repo, "user moves on")
	st2 := r.start(t, "s_2")
	if !st2.Recycled {
		t.Fatalf("second session did not recycle the spare (notes %v)", st2.Notes)
	}
	if !st2.KnownClean || st2.Walk == nil {
		t.Fatalf("parked spare claimed without the proof of its cleanliness or its walk (%v, %+v)", st2.KnownClean, st2.Walk)
	}
	if st2.Path != filepath.Join(r.spareDir(), "s_2") || exists(parked) {
		t.Fatalf("claimed worktree at %s; spare still at %s: %v", st2.Path, parked, exists(parked))
	}
	if got := gittest.Git(t, st2.Path, "rev-parse", "HEAD"); got != head {
		t.Fatalf("claimed worktree at %s, want the user's HEAD %s", got, head)
	}
	if got := gittest.Git(t, st2.Path, "symbolic-ref", "--short", "HEAD"); got != st2.Branch || !strings.HasPrefix(got, BranchPrefix) {
		t.Fatalf("claimed worktree on %q, want the session branch %q", got, st2.Branch)
	}
	if headTree(t, st2.Path) != headTree(t, r.repo) {
		t.Fatal("trees differ")
	}
	if out := gittest.Git(t, st2.Path, "status", "--porcelain", "--untracked-files=all"); out != "" {
		t.Fatalf("claimed worktree is dirty:\n%s", out)
	}
	if readFile(t, filepath.Join(st2.Path, "node_modules/dep/index.js")) != "dep\n" {
		t.Fatal("the dependency cache was not kept")
	}
	if readFile(t, filepath.Join(st2.Path, "work.txt")) != "" {
		t.Fatal("the earlier session's committed work leaked into the new worktree")
	}
	// git's record of the worktree follows its new name.
	if out := gittest.Git(t, r.repo, "worktree", "list", "--porcelain"); !strings.Contains(out, "worktree "+st2.Path+"\n") || strings.Contains(out, "prunable") {
		t.Fatalf("git's worktree list:\n%s", out)
	}
}

func TestKeepNothingMakesAFullyCleanSpare(t *testing.T) {
	t.Parallel()
	r := newSpareRig(t)
	r.m.SpareKeeps = KeepNothing
	st := r.start(t, "s_1")
	gittest.WriteFile(t, st.Path, "node_modules/dep/index.js", "dep\n")
	parked := r.retire(t, st, "s_1", true)
	if out := gittest.Git(t, parked, "status", "--porcelain", "--untracked-files=all", "--ignored"); out != "" {
		t.Fatalf("spare not fully clean:\n%s", out)
	}
}

func TestSpareBehindMovesOnlyTheDiff(t *testing.T) {
	t.Parallel()
	r := newSpareRig(t)
	repo := detect(t, r.repo)
	if _, err := r.m.PrepareSpare(context.Background(), repo, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.m.PrepareSpare(context.Background(), repo, ""); !errors.Is(err, ErrSpareLimit) {
		t.Fatalf("second preparation: %v, want ErrSpareLimit", err)
	}
	spare := filepath.Join(r.spareDir(), ".spare-1")
	untouched := filepath.Join(spare, ".gitignore")
	before, err := os.Stat(untouched)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		gittest.WriteFile(t, r.repo, fmt.Sprintf("src/n%d.txt", i), "n\n")
		gittest.Commit(t, r.repo, "ahead")
	}
	gittest.Git(t, r.repo, "rm", "-q", "src/a.txt")
	gittest.Commit(t, r.repo, "delete a")
	st := r.start(t, "s_1")
	if !st.Recycled {
		t.Fatalf("not recycled: %v", st.Notes)
	}
	// The claim's status proved it clean, and the walk made when it was
	// prepared comes along for the first capture, once.
	if !st.KnownClean || st.Walk == nil || st.Walk.At.IsZero() {
		t.Fatalf("claimed spare: KnownClean %v, walk %+v", st.KnownClean, st.Walk)
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(st.Path), "*"+recordSuffix)); len(m) > 0 {
		t.Fatalf("the parking record stays after the claim: %v", m)
	}
	if headTree(t, st.Path) != headTree(t, r.repo) || exists(filepath.Join(st.Path, "src/a.txt")) {
		t.Fatal("claimed worktree is not at the user's HEAD")
	}
	after, err := os.Stat(filepath.Join(st.Path, ".gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	if !after.ModTime().Equal(before.ModTime()) || !os.SameFile(before, after) {
		t.Fatal("a file equal in both commits was rewritten: the claim did a full checkout")
	}
}

func TestUnusableSparesAreSetAside(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		spoil func(t *testing.T, r *spareRig, spare string)
		want  string
	}{
		{"modified by hand", func(t *testing.T, r *spareRig, spare string) {
			gittest.WriteFile(t, spare, "src/a.txt", "hand edit\n")
		}, "changes made outside yolop"},
		{"untracked file", func(t *testing.T, r *spareRig, spare string) {
			gittest.WriteFile(t, spare, "notes/mine.txt", "mine\n")
		}, "changes made outside yolop"},
		{"branch checked out", func(t *testing.T, r *spareRig, spare string) {
			gittest.Git(t, spare, "checkout", "-q", "-b", "by-hand")
		}, "a branch is checked out"},
		{"locked", func(t *testing.T, r *spareRig, spare string) {
			gittest.Git(t, r.repo, "worktree", "lock", spare)
		}, "locked"},
		{"leftover refs", func(t *testing.T, r *spareRig, spare string) {
			addCheckpointRef(t, r.repo, "s_old", "cp1")
			rec, err := readRecord(spare)
			if err != nil {
				t.Fatal(err)
			}
			rec.From = "s_old"
			if err := writeRecord(spare, rec); err != nil {
				t.Fatal(err)
			}
		}, "checkpoint refs of its earlier session"},
		{"index locked", func(t *testing.T, r *spareRig, spare string) {
			admin, _, err := adminDir(spare)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(admin, "index.lock"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "index is locked"},
		{"merge in progress", func(t *testing.T, r *spareRig, spare string) {
			admin, _, err := adminDir(spare)
			if err != nil {
				t.Fatal(err)
			}
			head := gittest.Git(t, spare, "rev-parse", "HEAD")
			if err := os.WriteFile(filepath.Join(admin, "MERGE_HEAD"), []byte(head+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "in progress"},
		{"foreign", func(t *testing.T, r *spareRig, spare string) {
			other := gittest.NewRepo(t)
			if err := os.RemoveAll(spare); err != nil {
				t.Fatal(err)
			}
			gittest.Git(t, r.repo, "worktree", "prune")
			gittest.Git(t, other, "worktree", "add", "-q", "--detach", spare)
		}, "belongs to the repository"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newSpareRig(t)
			spare, err := r.m.PrepareSpare(context.Background(), detect(t, r.repo), "")
			if err != nil {
				t.Fatal(err)
			}
			c.spoil(t, r, spare)
			keep := tree(t, spare)
			st := r.start(t, "s_1")
			if st.Recycled {
				t.Fatal("an unusable spare was used")
			}
			if !strings.Contains(strings.Join(st.Notes, "\n"), c.want) {
				t.Fatalf("notes %q do not say %q", st.Notes, c.want)
			}
			if out := gittest.Git(t, st.Path, "status", "--porcelain", "--untracked-files=all"); out != "" {
				t.Fatalf("the fresh worktree is dirty:\n%s", out)
			}
			stale := filepath.Join(r.spareDir(), ".stale-1")
			if !exists(stale) {
				t.Fatalf("the unusable spare was not set aside at %s", stale)
			}
			// Nothing in it was lost (the .git link aside).
			equalLines(t, "set-aside spare", drop(tree(t, stale), ".git "), drop(keep, ".git "))
			es, err := r.m.List(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, e := range es {
				found = found || (e.Path == stale && e.Stale)
			}
			if !found {
				t.Fatalf("List does not show %s as a stale spare: %+v", stale, es)
			}
		})
	}
}

func drop(lines []string, prefix string) []string {
	var out []string
	for _, l := range lines {
		if !strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

func TestFourStartsAgainstOneSpare(t *testing.T) {
	t.Parallel()
	r := newSpareRig(t)
	repo := detect(t, r.repo)
	if _, err := r.m.PrepareSpare(context.Background(), repo, ""); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	res := make([]*Started, 4)
	errs := make([]error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := &Manager{DataDir: r.data, Spares: 1}
			res[i], errs[i] = m.Start(context.Background(), detect0(r.repo), fmt.Sprintf("s_%d", i), "same title")
		}()
	}
	wg.Wait()
	recycled := 0
	seen := map[string]bool{}
	for i, st := range res {
		if errs[i] != nil {
			t.Fatalf("start %d: %v", i, errs[i])
		}
		st.Done()
		if st.Recycled {
			recycled++
		}
		if seen[st.Path] || seen[st.Branch] {
			t.Fatalf("two sessions share %s / %s", st.Path, st.Branch)
		}
		seen[st.Path], seen[st.Branch] = true, true
		if got := gittest.Git(t, st.Path, "symbolic-ref", "--short", "HEAD"); got != st.Branch {
			t.Fatalf("%s is on %s, want %s", st.Path, got, st.Branch)
		}
		if out := gittest.Git(t, st.Path, "status", "--porcelain", "--untracked-files=all"); out != "" {
			t.Fatalf("%s is dirty: %s", st.Path, out)
		}
	}
	if recycled != 1 {
		t.Fatalf("%d sessions recycled the one spare", recycled)
	}
	if exists(filepath.Join(r.spareDir(), ".spare-1")) {
		t.Fatal("the spare is still there")
	}
	if out := gittest.Git(t, r.repo, "worktree", "list", "--porcelain"); strings.Count(out, "worktree ") != 5 || strings.Contains(out, "prunable") {
		t.Fatalf("git's worktrees:\n%s", out)
	}
}

func TestInterruptedStartIsAdoptedByTheNextStart(t *testing.T) {
	t.Parallel()
	r := newSpareRig(t)
	repo := detect(t, r.repo)
	// A start whose process dies before its session is complete (its
	// directory made, workspace.json not yet): its pending mark stays,
	// its lock goes with the process.
	st, err := r.m.Start(context.Background(), repo, "s_dead", "dead")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(r.data, "sessions", "s_dead"), 0o700); err != nil {
		t.Fatal(err)
	}
	st.pending.Close()
	dead, branch := st.Path, st.Branch

	st2 := r.start(t, "s_next")
	if exists(dead) {
		t.Fatalf("the orphaned worktree %s is still there", dead)
	}
	if ok, _ := refExists(context.Background(), gitRunner(r.repo), "refs/heads/"+branch); ok {
		t.Fatalf("the unused branch %s of the interrupted start is left", branch)
	}
	if !strings.Contains(strings.Join(st2.Notes, "\n"), "interrupted") {
		t.Fatalf("no note about the cleanup: %v", st2.Notes)
	}
	// It was parked, and this very start claimed it; nothing leaks.
	if !st2.Recycled {
		t.Fatalf("the orphan was not recycled: %v", st2.Notes)
	}
	ents, _ := os.ReadDir(r.spareDir())
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != ".lock s_next" {
		t.Fatalf("leftovers in %s: %v", r.spareDir(), names)
	}
}

func TestSweepRemovesHalfMadeSpares(t *testing.T) {
	t.Parallel()
	r := newSpareRig(t)
	dir := r.spareDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	tmp, err := newTmp(dir)
	if err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, r.repo, "worktree", "add", "-q", "--detach", tmp.path)
	// Alive: nobody touches it.
	if notes := r.m.sweep(context.Background(), dir); len(notes) != 0 || !exists(tmp.path) {
		t.Fatalf("a live preparation was swept: %v", notes)
	}
	tmp.lock.Close() // the preparing process dies
	// A fork by another test of this process holds a copy of the lock's
	// descriptor until its exec: the lock may look held a moment longer,
	// and a later sweep removes the spare.
	var notes []string
	for try := 0; try < 100 && len(notes) == 0; try++ {
		if try > 0 {
			time.Sleep(20 * time.Millisecond)
		}
		notes = r.m.sweep(context.Background(), dir)
	}
	if len(notes) != 1 || exists(tmp.path) || exists(tmp.path+lockSuffix) {
		t.Fatalf("the half-made spare was not removed: %v", notes)
	}
	if out := gittest.Git(t, r.repo, "worktree", "list", "--porcelain"); strings.Count(out, "worktree ") != 1 {
		t.Fatalf("git still records it:\n%s", out)
	}
}

func TestPruneParksAndRemovesSpares(t *testing.T) {
	t.Parallel()
	r := newSpareRig(t)
	a, b := r.start(t, "s_a"), r.start(t, "s_b")
	for _, sid := range []string{"s_a", "s_b"} {
		if err := os.RemoveAll(filepath.Join(r.data, "sessions", sid)); err != nil {
			t.Fatal(err)
		}
	}
	none := func(string) bool { return false }
	rep, err := r.m.Prune(context.Background(), PruneOptions{DryRun: true, Referenced: none})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.WouldPark) != 1 || len(rep.WouldRemove) != 1 || rep.WouldPark[0].Path != a.Path {
		t.Fatalf("dry run: park %v, remove %v", rep.WouldPark, rep.WouldRemove)
	}
	if !exists(a.Path) || !exists(b.Path) {
		t.Fatal("dry run changed something")
	}
	rep, err = r.m.Prune(context.Background(), PruneOptions{Referenced: none})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Parked) != 1 || len(rep.Removed) != 1 || filepath.Base(rep.ParkedAs[0]) != ".spare-1" {
		t.Fatalf("prune: parked %v as %v, removed %v", rep.Parked, rep.ParkedAs, rep.Removed)
	}
	// Spares stay without --spares, go with it.
	rep, err = r.m.Prune(context.Background(), PruneOptions{Referenced: none})
	if err != nil || len(rep.Removed)+len(rep.Parked) != 0 {
		t.Fatalf("prune touched the spare: %+v %v", rep, err)
	}
	rep, err = r.m.Prune(context.Background(), PruneOptions{DryRun: true, Spares: true, Referenced: none})
	if err != nil || len(rep.WouldRemove) != 1 || !rep.WouldRemove[0].Spare {
		t.Fatalf("dry run --spares: %+v %v", rep, err)
	}
	rep, err = r.m.Prune(context.Background(), PruneOptions{Spares: true, Referenced: none})
	if err != nil || len(rep.Removed) != 1 {
		t.Fatalf("prune --spares: %+v %v", rep, err)
	}
	if out := gittest.Git(t, r.repo, "worktree", "list", "--porcelain"); strings.Count(out, "worktree ") != 1 {
		t.Fatalf("worktrees left:\n%s", out)
	}
}

func gitRunner(dir string) *git.Runner { return git.New(dir) }

func TestStartDetachedThenBranchOrAbandon(t *testing.T) {
	t.Parallel()
	r := newSpareRig(t)
	repo := detect(t, r.repo)
	if _, err := r.m.PrepareSpare(context.Background(), repo, ""); err != nil {
		t.Fatal(err)
	}
	// Opened: the spare is claimed at once, detached, without a branch.
	st, err := r.m.StartDetached(context.Background(), repo, "s_open")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Recycled || st.Branch != "" {
		t.Fatalf("recycled %v, branch %q", st.Recycled, st.Branch)
	}
	if out := gittest.Git(t, r.repo, "for-each-ref", "refs/heads/yolop/"); out != "" {
		t.Fatalf("a branch was made before the first prompt: %s", out)
	}
	// The first prompt names the branch; nothing is written when HEAD
	// did not move.
	before, err := os.Stat(filepath.Join(st.Path, "src/a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.MakeBranch(context.Background(), "fix the parser", "s_open", repo.Head); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(filepath.Join(st.Path, "src/a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) || !before.ModTime().Equal(after.ModTime()) {
		t.Fatal("making the branch rewrote files")
	}
	if got := gittest.Git(t, st.Path, "symbolic-ref", "--short", "HEAD"); got != "yolop/fix-the-parser-s-open" || got != st.Branch {
		t.Fatalf("branch %q (recorded %q)", got, st.Branch)
	}
	st.Done()

	// Opened and closed unused: the worktree goes back to being a spare
	// and leaves no branch.
	st2, err := r.m.StartDetached(context.Background(), repo, "s_unused")
	if err != nil {
		t.Fatal(err)
	}
	r.m.Abandon(context.Background(), st2)
	if exists(st2.Path) || !exists(filepath.Join(r.spareDir(), ".spare-1")) {
		t.Fatalf("abandoned worktree not parked: %v", exists(st2.Path))
	}
	if out := gittest.Git(t, r.repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/yolop/"); out != "yolop/fix-the-parser-s-open" {
		t.Fatalf("branches: %s", out)
	}
}

func TestDetachedUserHeadAndMovedRepository(t *testing.T) {
	t.Parallel()
	r := newSpareRig(t)
	if _, err := r.m.PrepareSpare(context.Background(), detect(t, r.repo), ""); err != nil {
		t.Fatal(err)
	}
	// The user is on a detached HEAD one commit back (as mid-rebase).
	gittest.WriteFile(t, r.repo, "later.txt", "later\n")
	gittest.Commit(t, r.repo, "later")
	gittest.Git(t, r.repo, "checkout", "-q", "--detach", "HEAD~1")
	st := r.start(t, "s_1")
	if !st.Recycled || exists(filepath.Join(st.Path, "later.txt")) || headTree(t, st.Path) != headTree(t, r.repo) {
		t.Fatalf("recycled %v at the wrong commit", st.Recycled)
	}
	oldDir := r.spareDir()
	if _, err := r.m.PrepareSpare(context.Background(), detect(t, r.repo), ""); err != nil {
		t.Fatal(err)
	}
	// The repository moves: its spare can no longer reach it and is not used.
	moved := filepath.Join(t.TempDir(), "moved")
	if err := os.Rename(r.repo, moved); err != nil {
		t.Fatal(err)
	}
	st2, err := r.m.Start(context.Background(), detect(t, moved), "s_2", "after the move")
	if err != nil {
		t.Fatal(err)
	}
	st2.Done()
	if st2.Recycled {
		t.Fatal("a spare of the repository's old place was used")
	}
	es, err := r.m.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var old *Entry
	for i := range es {
		if es[i].Spare && filepath.Dir(es[i].Path) == oldDir {
			old = &es[i]
		}
	}
	if old == nil || !old.Missing {
		t.Fatalf("the old place's spare is not listed as missing: %+v", es)
	}
	rep, err := r.m.Prune(context.Background(), PruneOptions{Spares: true, Referenced: func(sid string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	removed := false
	for _, e := range rep.Removed {
		removed = removed || e.Path == old.Path
	}
	if !removed || exists(old.Path) {
		t.Fatalf("prune --spares did not remove the unreachable spare: %+v", rep)
	}
}

func TestSpareDeletedByHand(t *testing.T) {
	t.Parallel()
	r := newSpareRig(t)
	repo := detect(t, r.repo)
	spare, err := r.m.PrepareSpare(context.Background(), repo, "")
	if err != nil {
		t.Fatal(err)
	}
	// Deleted by hand: git still records it.
	if err := os.RemoveAll(spare); err != nil {
		t.Fatal(err)
	}
	st := r.start(t, "s_1")
	if st.Recycled {
		t.Fatal("a deleted spare was claimed")
	}
	// A new spare can take the same name.
	again, err := r.m.PrepareSpare(context.Background(), repo, "")
	if err != nil || again != spare {
		t.Fatalf("prepare after a spare was deleted by hand: %q %v", again, err)
	}
	if st := r.start(t, "s_2"); !st.Recycled {
		t.Fatalf("the new spare was not claimed: %v", st.Notes)
	}
	if out := gittest.Git(t, r.repo, "worktree", "list", "--porcelain"); strings.Contains(out, "prunable") {
		t.Fatalf("git records a missing worktree:\n%s", out)
	}
}

// TestFailedPreparationIsShown: a spare preparation that fails leaves a
// note that PrepareFailures lists and the next start reports, without
// failing that start; a preparation that succeeds clears it.
func TestFailedPreparationIsShown(t *testing.T) {
	t.Parallel()
	r := newSpareRig(t)
	repo := detect(t, r.repo)
	missing := strings.Repeat("0", 39) + "1"
	if _, err := r.m.PrepareSpare(context.Background(), repo, missing); err == nil {
		t.Fatal("preparing a spare at a missing commit succeeded")
	}
	fs, err := r.m.PrepareFailures()
	if err != nil || len(fs) != 1 || fs[0].Repo != repo.Root || !strings.Contains(fs[0].Err, "prepare a spare worktree") || fs[0].At.IsZero() {
		t.Fatalf("failures %+v %v", fs, err)
	}
	st := r.start(t, "s_1")
	if st.Recycled || !strings.Contains(strings.Join(st.Notes, "\n"), "background preparation of a spare worktree for "+repo.Root+" failed") {
		t.Fatalf("start: recycled %v, notes %q", st.Recycled, st.Notes)
	}
	if out := gittest.Git(t, st.Path, "status", "--porcelain"); out != "" || st.Branch == "" {
		t.Fatalf("the session's fresh worktree: branch %q, status %q", st.Branch, out)
	}
	// Nothing half made is left by the failure.
	if ents, _ := filepath.Glob(filepath.Join(r.spareDir(), ".tmp-*")); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
	if _, err := r.m.PrepareSpare(context.Background(), repo, ""); err != nil {
		t.Fatal(err)
	}
	if fs, err := r.m.PrepareFailures(); err != nil || len(fs) != 0 {
		t.Fatalf("a successful preparation left the failure note: %+v %v", fs, err)
	}
	// A preparation that finds the spares all there: nothing is missing.
	recordPrepare(r.spareDir(), repo.Root, errors.New("disk full"))
	if _, err := r.m.PrepareSpare(context.Background(), repo, ""); !errors.Is(err, ErrSpareLimit) {
		t.Fatalf("second preparation: %v", err)
	}
	if fs, _ := r.m.PrepareFailures(); len(fs) != 0 {
		t.Fatalf("failures after a preparation found the spare there: %+v", fs)
	}
}

// TestUserRepositoryMidRebaseOrUnborn: with the user's checkout stopped in
// a conflicted rebase, a start claims the spare at the commit the rebase
// is on and leaves the rebase, its conflict and the user's files alone, and
// a spare can still be prepared; on an unborn branch there is no commit to
// start from, so nothing claims or touches the spare.
func TestUserRepositoryMidRebaseOrUnborn(t *testing.T) {
	t.Parallel()
	r := newSpareRig(t)
	gittest.Git(t, r.repo, "checkout", "-q", "-b", "topic")
	gittest.WriteFile(t, r.repo, "src/a.txt", "topic\n")
	gittest.Commit(t, r.repo, "topic edit")
	gittest.Git(t, r.repo, "checkout", "-q", "main")
	gittest.WriteFile(t, r.repo, "src/a.txt", "main\n")
	onto := gittest.Commit(t, r.repo, "main edit")
	gittest.Git(t, r.repo, "checkout", "-q", "topic")
	if _, err := git.New(r.repo).Run(context.Background(), "rebase", "main"); err == nil {
		t.Fatal("the rebase did not stop on its conflict")
	}
	conflicted, err := os.ReadFile(filepath.Join(r.repo, "src/a.txt"))
	if err != nil || !strings.Contains(string(conflicted), "<<<<<<<") {
		t.Fatalf("no conflict in the checkout: %q %v", conflicted, err)
	}
	repo := detect(t, r.repo)
	if repo.Head != onto {
		t.Fatalf("mid-rebase HEAD %s, want the commit the rebase is on %s", repo.Head, onto)
	}
	if _, err := r.m.PrepareSpare(context.Background(), repo, ""); err != nil {
		t.Fatalf("prepare mid-rebase: %v", err)
	}
	st := r.start(t, "s_1")
	if !st.Recycled || gittest.Git(t, st.Path, "rev-parse", "HEAD") != onto {
		t.Fatalf("start mid-rebase: recycled %v, notes %q", st.Recycled, st.Notes)
	}
	if out := gittest.Git(t, st.Path, "status", "--porcelain", "--untracked-files=all"); out != "" {
		t.Fatalf("the session's worktree is not clean:\n%s", out)
	}
	after, _ := os.ReadFile(filepath.Join(r.repo, "src/a.txt"))
	if string(after) != string(conflicted) || !exists(filepath.Join(r.repo, ".git", "rebase-merge")) {
		t.Fatal("the user's rebase or its conflicted file was touched")
	}
	gittest.Git(t, r.repo, "rebase", "--abort")

	// Unborn: nothing to start from.
	if _, err := r.m.PrepareSpare(context.Background(), detect(t, r.repo), ""); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, r.repo, "checkout", "-q", "--orphan", "fresh")
	if repo, err := Detect(context.Background(), r.repo); err == nil && repo.Head != "" {
		t.Fatalf("an unborn branch detected at %s", repo.Head)
	}
	es, err := r.m.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	spares := 0
	for _, e := range es {
		if e.Spare && !e.Dirty && !e.Missing {
			spares++
		}
	}
	if spares != 1 {
		t.Fatalf("the spare is not intact on an unborn branch: %+v", es)
	}
}

// TestHurriedSpareIsWalkedBesideItsProof: a spare whose preparation kept
// no walk (it hurried for a waiting start) gets one at its claim, made
// while the claim's status ran, for the first capture; with a watcher
// armed by the claim (Linux), the walk says it began under it.
func TestHurriedSpareIsWalkedBesideItsProof(t *testing.T) {
	t.Parallel()
	for _, watch := range []bool{false, true} {
		t.Run(fmt.Sprintf("watch=%v", watch), func(t *testing.T) {
			t.Parallel()
			testHurriedSpareIsWalkedBesideItsProof(t, watch)
		})
	}
}

func testHurriedSpareIsWalkedBesideItsProof(t *testing.T, watch bool) {
	r := newSpareRig(t)
	if watch {
		r.m.Watch = &snapshot.WatchOptions{}
	}
	if _, err := r.m.PrepareSpare(context.Background(), detect(t, r.repo), ""); err != nil {
		t.Fatal(err)
	}
	spare := filepath.Join(r.spareDir(), ".spare-1")
	rec, err := readRecord(spare)
	if err != nil {
		t.Fatal(err)
	}
	rec.Walk = nil
	if err := writeRecord(spare, rec); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	st := r.start(t, "s_1")
	if !st.Recycled || !st.KnownClean {
		t.Fatalf("claimed: recycled %v, known clean %v (%v)", st.Recycled, st.KnownClean, st.Notes)
	}
	if st.Walk == nil || st.Walk.At.Before(began) {
		t.Fatalf("claimed spare's walk: %+v, want one made during the claim (began %v)", st.Walk, began)
	}
	t.Cleanup(st.Watch.Close)
	if want := watch && runtime.GOOS == "linux"; (st.Watch != nil) != want || st.Walk.Watched != want {
		t.Fatalf("claim's watcher %v, walk made under it %v; want %v", st.Watch != nil, st.Walk.Watched, want)
	}
}

// TestKilledPreparationsGitRecordIsDropped: a preparation killed during
// its `git worktree add` leaves the repository a half-written record of
// the worktree (locked "initializing", commondir empty), which makes
// every later `git worktree add` of the repository fail and which `git
// worktree prune` keeps. The next start removes it, says so, and starts;
// the record of a preparation still at work (its lock held) is left.
func TestKilledPreparationsGitRecordIsDropped(t *testing.T) {
	t.Parallel()
	r := newSpareRig(t)
	r.m.Spares = 0
	common := filepath.Join(r.repo, ".git")
	// Elsewhere (another data directory, say): the preparation's
	// worktree was never made.
	spareDir := filepath.Join(t.TempDir(), "worktrees", "repo-0123abcd")
	if err := os.MkdirAll(spareDir, 0o700); err != nil {
		t.Fatal(err)
	}
	halfMade := func(name string) string {
		admin := filepath.Join(common, "worktrees", name)
		for f, body := range map[string]string{
			"gitdir":    filepath.Join(spareDir, "."+name[1:], ".git") + "\n",
			"commondir": "",
			"HEAD":      strings.Repeat("0", 40) + "\n",
			"locked":    "initializing\n",
		} {
			gittest.WriteFile(t, admin, f, body)
		}
		return admin
	}
	dead := halfMade("-tmp-0123456789ab")
	if out, err := exec.Command("git", "-C", r.repo, "worktree", "add", "--quiet", "--detach", filepath.Join(t.TempDir(), "w")).CombinedOutput(); err == nil {
		t.Fatalf("git worktree add succeeded beside the half-written record (the test's premise): %s", out)
	}
	gittest.Git(t, r.repo, "worktree", "prune")
	if !exists(dead) {
		t.Fatal("git worktree prune removed the record: the test's premise is gone")
	}
	// A preparation at work: its lock is held.
	live := halfMade("-tmp-ba9876543210")
	lock, err := createLocked(filepath.Join(spareDir, ".tmp-ba9876543210"+lockSuffix))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	// Git refuses to add beside a record in the making (a real add
	// writes it whole in milliseconds); the dead one is gone already.
	if _, err := r.m.Start(context.Background(), detect(t, r.repo), "s_1", "one"); err == nil {
		t.Fatal("started beside a preparation's record in the making")
	}
	if exists(dead) || !exists(live) {
		t.Fatalf("records left: dead %v (want gone), live %v (want kept)", exists(dead), exists(live))
	}
	lock.Close() // that preparation died
	st := r.start(t, "s_2")
	if exists(live) {
		t.Fatal("the record of the preparation that died since is left")
	}
	if n := strings.Join(st.Notes, "\n"); !strings.Contains(n, "-tmp-ba9876543210 of a spare worktree whose preparation was interrupted") {
		t.Fatalf("notes %q do not say the record was removed", n)
	}
}

// TestOthersGitRecordsAreKept: a git record that only looks like a killed
// preparation's is left: a worktree of the user's named .tmp-<something>
// and locked (on a disk not mounted now), one named as a preparation's
// but not in a data directory's layout, one in that layout but not named
// as a preparation's, and a preparation's whose record someone locked
// with git worktree lock.
func TestOthersGitRecordsAreKept(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t)
	gittest.Commit(t, repo, "base")
	usb := filepath.Join(t.TempDir(), "usb")
	mine := filepath.Join(usb, ".tmp-mywork")
	gittest.Git(t, repo, "worktree", "add", "--quiet", "--detach", mine)
	gittest.Git(t, repo, "worktree", "lock", "--reason", "on a usb disk", mine)
	elsewhere := filepath.Join(usb, ".tmp-0123456789ab")
	gittest.Git(t, repo, "worktree", "add", "--quiet", "--detach", elsewhere)
	spareDir := filepath.Join(usb, "data", "worktrees", "repo-0123abcd")
	locked := filepath.Join(spareDir, ".tmp-ba9876543210")
	gittest.Git(t, repo, "worktree", "add", "--quiet", "--detach", locked)
	gittest.Git(t, repo, "worktree", "lock", locked)
	gittest.Git(t, repo, "worktree", "add", "--quiet", "--detach", filepath.Join(spareDir, ".tmp-notours"))
	if err := os.Rename(usb, usb+".away"); err != nil { // unmounted
		t.Fatal(err)
	}
	common := filepath.Join(repo, ".git")
	before, err := os.ReadDir(filepath.Join(common, "worktrees"))
	if err != nil || len(before) != 4 {
		t.Fatalf("git records: %v (%v)", before, err)
	}
	if notes := dropDeadAdmins(common); len(notes) != 0 {
		t.Fatalf("dropped: %v", notes)
	}
	after, _ := os.ReadDir(filepath.Join(common, "worktrees"))
	if len(after) != 4 {
		t.Fatalf("git records left: %v, want all 4", after)
	}
}
