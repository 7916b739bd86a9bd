package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// fixture is a user repository with refs of every kind and four session
// worktrees:
//
//	s_01a   unreferenced, clean, with checkpoint refs (one packed, one loose)
//	s_01a0  referenced, clean; its id extends s_01a's, to catch prefix matches
//	s_dirty unreferenced, with a modified file and an untracked one
//	s_ign   unreferenced, only an ignored file: clean
type fixture struct {
	repo, data string
	m          *Manager
	info       map[string]Info
	refs       map[string][]string // session → its checkpoint refs
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	repo := gittest.NewRepo(t)
	gittest.WriteFile(t, repo, ".gitignore", "*.log\n")
	gittest.Commit(t, repo, "ignore logs")
	gittest.Git(t, repo, "branch", "feature")
	gittest.Git(t, repo, "tag", "v1")
	gittest.Git(t, repo, "update-ref", "refs/notes/commits", "HEAD")
	gittest.Git(t, repo, "update-ref", "refs/yolop/other/keep", "HEAD")
	r := detect(t, repo)
	f := &fixture{repo: repo, data: t.TempDir(), info: map[string]Info{}, refs: map[string][]string{}}
	f.m = &Manager{DataDir: f.data}
	for _, sid := range []string{"s_01a", "s_01a0", "s_dirty", "s_ign"} {
		f.info[sid] = create(t, f.m, r, sid, sid)
		f.refs[sid] = append(f.refs[sid], addCheckpointRef(t, repo, sid, "cp1"))
	}
	// Pack what exists so far: user refs and every session's cp1 live in
	// packed-refs, later refs are loose.
	gittest.Git(t, repo, "pack-refs", "--all")
	f.refs["s_01a"] = append(f.refs["s_01a"], addCheckpointRef(t, repo, "s_01a", "end-cp1"), addCheckpointRef(t, repo, "s_01a", "r1"))
	f.refs["s_01a0"] = append(f.refs["s_01a0"], addCheckpointRef(t, repo, "s_01a0", "cp2"))
	// The captures of the user's checkout taken before each apply hold the
	// user's files: they outlive their session (the tests check that every
	// ref not in f.refs is untouched).
	for _, sid := range []string{"s_01a", "s_01a0"} {
		gittest.Git(t, repo, "update-ref", "refs/yolop/apply/"+sid+"/1", "HEAD^{tree}")
	}

	gittest.WriteFile(t, f.info["s_dirty"].Path, "README.md", "edited\n")
	gittest.WriteFile(t, f.info["s_dirty"].Path, "new dir/new file.txt", "new\n")
	gittest.WriteFile(t, f.info["s_ign"].Path, "build.log", "ignored\n")
	// The worktree's branch has its own work: pruning must keep it.
	gittest.WriteFile(t, f.info["s_01a"].Path, "done.txt", "done\n")
	gittest.Commit(t, f.info["s_01a"].Path, "session work")
	return f
}

func referenced(ids ...string) func(string) bool {
	return func(sid string) bool {
		for _, id := range ids {
			if id == sid {
				return true
			}
		}
		return false
	}
}

func sessionIDs(es []Entry) []string {
	var ids []string
	for _, e := range es {
		ids = append(ids, e.SessionID)
	}
	return ids
}

func TestList(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// A second repository, and a directory whose repository is gone.
	other := detect(t, gittest.NewRepo(t))
	otherInfo := create(t, f.m, other, "s_zz", "")
	broken := filepath.Join(f.data, "worktrees", "gone-00000000", "s_gone")
	gittest.WriteFile(t, broken, ".git", "gitdir: /nonexistent/.git/worktrees/s_gone\n")
	gittest.WriteFile(t, broken, "precious.txt", "work\n")
	// Files beside the directories are not worktrees.
	gittest.WriteFile(t, f.data, "worktrees/stray-file", "x")

	entries, err := f.m.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Entry{}
	for _, e := range entries {
		byID[e.SessionID] = e
	}
	if got := sessionIDs(entries); len(got) != 6 {
		t.Fatalf("List found %v", got)
	}
	for i := 1; i < len(entries); i++ {
		a, b := entries[i-1], entries[i]
		if a.RepoID > b.RepoID || a.RepoID == b.RepoID && a.SessionID >= b.SessionID {
			t.Errorf("List not sorted at %d: %s/%s then %s/%s", i, a.RepoID, a.SessionID, b.RepoID, b.SessionID)
		}
	}
	common := detect(t, f.repo).CommonDir
	for _, tc := range []struct {
		sid     string
		want    Entry
		problem string
	}{
		{"s_01a", Entry{Path: f.info["s_01a"].Path, RepoID: RepoID(common), SessionID: "s_01a", Branch: f.info["s_01a"].Branch, CommonDir: common}, ""},
		{"s_ign", Entry{Path: f.info["s_ign"].Path, RepoID: RepoID(common), SessionID: "s_ign", Branch: f.info["s_ign"].Branch, CommonDir: common}, ""},
		{"s_dirty", Entry{Path: f.info["s_dirty"].Path, RepoID: RepoID(common), SessionID: "s_dirty", Branch: f.info["s_dirty"].Branch, CommonDir: common,
			Dirty: true, DirtyPaths: []string{"README.md", "new dir/"}}, ""},
		{"s_zz", Entry{Path: otherInfo.Path, RepoID: RepoID(other.CommonDir), SessionID: "s_zz", Branch: otherInfo.Branch, CommonDir: other.CommonDir}, ""},
		{"s_gone", Entry{Path: broken, RepoID: "gone-00000000", SessionID: "s_gone", Missing: true}, "worktree repair"},
	} {
		got := byID[tc.sid]
		if !strings.Contains(got.Problem, tc.problem) {
			t.Errorf("%s: Problem %q, want it to mention %q", tc.sid, got.Problem, tc.problem)
		}
		got.Problem = ""
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.sid, got, tc.want)
		}
	}

	// A detached worktree reports no branch.
	gittest.Git(t, f.info["s_01a"].Path, "checkout", "-q", "--detach")
	entries, err = f.m.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.SessionID == "s_01a" && e.Branch != "" {
			t.Errorf("detached worktree lists branch %q", e.Branch)
		}
	}

	// No data directory yet: nothing to list, no error.
	if got, err := (&Manager{DataDir: filepath.Join(t.TempDir(), "none")}).List(context.Background()); err != nil || len(got) != 0 {
		t.Errorf("List on an empty data dir = %v, %v", got, err)
	}
}

func TestPruneDryRunChangesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	refsBefore := allRefs(t, f.repo)
	packedBefore := readFile(t, filepath.Join(f.repo, ".git", "packed-refs"))
	dataBefore := tree(t, f.data)
	adminBefore := tree(t, filepath.Join(f.repo, ".git", "worktrees"))
	branchesBefore := gittest.Git(t, f.repo, "branch", "--list", "-v")

	for _, force := range []bool{false, true} {
		rep, err := f.m.Prune(context.Background(), PruneOptions{DryRun: true, Force: force, Referenced: referenced("s_01a0")})
		if err != nil {
			t.Fatal(err)
		}
		wantWould := []string{"s_01a", "s_ign"}
		wantKept := []string{"s_dirty"}
		wantRefs := map[string][]string{"s_01a": sortedCopy(f.refs["s_01a"]), "s_ign": f.refs["s_ign"]}
		if force {
			wantWould, wantKept = []string{"s_01a", "s_dirty", "s_ign"}, nil
			wantRefs["s_dirty"] = f.refs["s_dirty"]
		}
		if got := sessionIDs(rep.WouldRemove); !reflect.DeepEqual(got, wantWould) {
			t.Errorf("force=%v: WouldRemove %v, want %v", force, got, wantWould)
		}
		if got := sessionIDs(rep.KeptDirty); !reflect.DeepEqual(got, wantKept) {
			t.Errorf("force=%v: KeptDirty %v, want %v", force, got, wantKept)
		}
		if !reflect.DeepEqual(rep.RefsDeleted, wantRefs) {
			t.Errorf("force=%v: RefsDeleted (would) %v, want %v", force, rep.RefsDeleted, wantRefs)
		}
		if len(rep.Removed) != 0 || len(rep.Errors) != 0 {
			t.Errorf("force=%v: dry run reports Removed %v, Errors %v", force, rep.Removed, rep.Errors)
		}
	}
	equalLines(t, "ref list", allRefs(t, f.repo), refsBefore)
	equalLines(t, "packed-refs", strings.Split(readFile(t, filepath.Join(f.repo, ".git", "packed-refs")), "\n"), strings.Split(packedBefore, "\n"))
	equalLines(t, "data directory", tree(t, f.data), dataBefore)
	equalLines(t, "worktree records", tree(t, filepath.Join(f.repo, ".git", "worktrees")), adminBefore)
	if got := gittest.Git(t, f.repo, "branch", "--list", "-v"); got != branchesBefore {
		t.Errorf("branches changed:\n%s\nwant\n%s", got, branchesBefore)
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

func TestPrune(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	refsBefore := allRefs(t, f.repo)
	packedBefore := readFile(t, filepath.Join(f.repo, ".git", "packed-refs"))
	branchesBefore := gittest.Git(t, f.repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/")
	userStatus := gittest.Git(t, f.repo, "status", "--porcelain", "--branch")

	if _, err := f.m.Prune(ctx, PruneOptions{}); err == nil || !strings.Contains(err.Error(), "Referenced is required") {
		t.Fatalf("Prune without Referenced: %v", err)
	}

	rep, err := f.m.Prune(ctx, PruneOptions{Referenced: referenced("s_01a0")})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Errors) != 0 {
		t.Fatalf("Prune errors: %v", rep.Errors)
	}
	if got := sessionIDs(rep.Removed); !reflect.DeepEqual(got, []string{"s_01a", "s_ign"}) {
		t.Errorf("Removed %v", got)
	}
	if len(rep.KeptDirty) != 1 || rep.KeptDirty[0].SessionID != "s_dirty" || !reflect.DeepEqual(rep.KeptDirty[0].DirtyPaths, []string{"README.md", "new dir/"}) {
		t.Errorf("KeptDirty %+v, want s_dirty with its two paths", rep.KeptDirty)
	}
	wantRefs := map[string][]string{"s_01a": sortedCopy(f.refs["s_01a"]), "s_ign": f.refs["s_ign"]}
	if !reflect.DeepEqual(rep.RefsDeleted, wantRefs) {
		t.Errorf("RefsDeleted %v, want %v", rep.RefsDeleted, wantRefs)
	}
	for _, sid := range []string{"s_01a", "s_ign"} {
		if exists(f.info[sid].Path) {
			t.Errorf("%s's worktree is still there", sid)
		}
	}
	for _, sid := range []string{"s_01a0", "s_dirty"} {
		if !exists(filepath.Join(f.info[sid].Path, "README.md")) {
			t.Errorf("%s's worktree was touched", sid)
		}
	}
	if got := readFile(t, filepath.Join(f.info["s_dirty"].Path, "new dir/new file.txt")); got != "new\n" {
		t.Errorf("dirty worktree's untracked file = %q", got)
	}

	// Everything but the pruned sessions' checkpoint refs is byte-identical:
	// the ref list, packed-refs (minus their packed lines) and every branch,
	// including the pruned sessions' own branches.
	gone := append(append([]string(nil), f.refs["s_01a"]...), f.refs["s_ign"]...)
	equalLines(t, "ref list", allRefs(t, f.repo), without(refsBefore, gone...))
	equalLines(t, "packed-refs", strings.Split(readFile(t, filepath.Join(f.repo, ".git", "packed-refs")), "\n"), without(strings.Split(packedBefore, "\n"), gone...))
	if got := gittest.Git(t, f.repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/"); got != branchesBefore {
		t.Errorf("branches changed:\n%s\nwant\n%s", got, branchesBefore)
	}
	if got := gittest.Git(t, f.repo, "status", "--porcelain", "--branch"); got != userStatus {
		t.Errorf("user checkout changed: %s", got)
	}
	if got := gittest.Git(t, f.repo, "worktree", "list", "--porcelain"); strings.Contains(got, "s_01a\n") || strings.Contains(got, "s_ign") {
		t.Errorf("git still records pruned worktrees:\n%s", got)
	}

	// --force removes the dirty one too; the referenced one stays.
	before := allRefs(t, f.repo)
	rep, err = f.m.Prune(ctx, PruneOptions{Force: true, Referenced: referenced("s_01a0")})
	if err != nil || len(rep.Errors) != 0 {
		t.Fatalf("forced Prune: %v %v", err, rep.Errors)
	}
	if got := sessionIDs(rep.Removed); !reflect.DeepEqual(got, []string{"s_dirty"}) || len(rep.KeptDirty) != 0 {
		t.Errorf("forced Prune removed %v, kept %v", got, sessionIDs(rep.KeptDirty))
	}
	if exists(f.info["s_dirty"].Path) || !exists(f.info["s_01a0"].Path) {
		t.Error("forced Prune removed the wrong worktrees")
	}
	equalLines(t, "ref list after forced prune", allRefs(t, f.repo), without(before, f.refs["s_dirty"]...))
	for _, r := range f.refs["s_01a0"] {
		if gittest.Git(t, f.repo, "for-each-ref", r) == "" {
			t.Errorf("referenced session lost %s", r)
		}
	}

	// Nothing left to prune: a no-op.
	rep, err = f.m.Prune(ctx, PruneOptions{Referenced: referenced("s_01a0")})
	if err != nil || len(rep.Removed)+len(rep.KeptDirty)+len(rep.Errors)+len(rep.RefsDeleted) != 0 {
		t.Errorf("second Prune = %+v, %v", rep, err)
	}
}

func TestPruneMissingRepository(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	m := &Manager{DataDir: t.TempDir()}
	info := create(t, m, detect(t, repo), "s_lost", "")
	gittest.WriteFile(t, info.Path, "uncommitted.txt", "work\n")
	if err := os.RemoveAll(repo); err != nil {
		t.Fatal(err)
	}
	none := func(string) bool { return false }
	rep, err := m.Prune(ctx, PruneOptions{Referenced: none})
	if err != nil || len(rep.KeptDirty) != 1 || !rep.KeptDirty[0].Missing || len(rep.Removed) != 0 {
		t.Fatalf("Prune with the repository gone = %+v, %v; want it kept", rep, err)
	}
	if !exists(filepath.Join(info.Path, "uncommitted.txt")) {
		t.Fatal("unforced Prune deleted a worktree it could not check")
	}
	rep, err = m.Prune(ctx, PruneOptions{Referenced: none, Force: true})
	if err != nil || len(rep.Removed) != 1 || len(rep.Errors) != 0 {
		t.Fatalf("forced Prune = %+v, %v", rep, err)
	}
	if exists(info.Path) {
		t.Error("forced Prune left the unreachable worktree")
	}
}

func TestRemove(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	refsBefore := allRefs(t, f.repo)

	// Dirty: refused with the paths, nothing changes.
	dirty := f.info["s_dirty"]
	_, err := f.m.Remove(ctx, dirty, "s_dirty", false)
	var de *DirtyError
	if !errors.Is(err, ErrDirty) || !errors.As(err, &de) || !reflect.DeepEqual(de.Paths, []string{"README.md", "new dir/"}) {
		t.Fatalf("Remove of a dirty worktree: %v", err)
	}
	if !strings.Contains(err.Error(), "README.md") || !strings.Contains(err.Error(), "force") {
		t.Errorf("dirty error %q does not name the paths and the way out", err)
	}
	if !exists(dirty.Path) {
		t.Fatal("refused Remove deleted the worktree")
	}
	equalLines(t, "refs after refused Remove", allRefs(t, f.repo), refsBefore)

	// Clean: removed with its refs; the branch stays.
	clean := f.info["s_01a"]
	tip := gittest.Git(t, clean.Path, "rev-parse", "HEAD")
	refs, err := f.m.Remove(ctx, clean, "s_01a", false)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(refs, sortedCopy(f.refs["s_01a"])) {
		t.Errorf("Remove deleted refs %v, want %v", refs, f.refs["s_01a"])
	}
	if exists(clean.Path) {
		t.Error("worktree still there")
	}
	if got := gittest.Git(t, f.repo, "rev-parse", "refs/heads/"+clean.Branch); got != tip {
		t.Errorf("session branch now at %q, want kept at %s", got, tip)
	}
	equalLines(t, "refs after Remove", allRefs(t, f.repo), without(refsBefore, f.refs["s_01a"]...))

	// Forced: the dirty worktree goes too, its branch stays.
	if _, err := f.m.Remove(ctx, dirty, "s_dirty", true); err != nil {
		t.Fatal(err)
	}
	if exists(dirty.Path) || gittest.Git(t, f.repo, "branch", "--list", dirty.Branch) == "" {
		t.Error("forced Remove: worktree kept or branch lost")
	}

	// Already deleted by hand: refs still go, git's record is pruned.
	gone := f.info["s_ign"]
	if err := os.RemoveAll(gone.Path); err != nil {
		t.Fatal(err)
	}
	refs, err = f.m.Remove(ctx, gone, "s_ign", false)
	if err != nil || !reflect.DeepEqual(refs, f.refs["s_ign"]) {
		t.Errorf("Remove of a deleted worktree = %v, %v", refs, err)
	}
	if strings.Contains(gittest.Git(t, f.repo, "worktree", "list", "--porcelain"), "s_ign") {
		t.Error("git still records the deleted worktree")
	}

	// Paths that are not this session's worktree are refused, untouched.
	kept := f.info["s_01a0"]
	for _, tc := range []struct {
		name string
		info Info
		sid  string
	}{
		{"other session's id", kept, "s_01a"},
		{"the user's checkout", Info{Path: f.repo, CommonDir: kept.CommonDir}, filepath.Base(f.repo)},
		{"outside the data dir", Info{Path: filepath.Join(t.TempDir(), "x", "s_01a0"), CommonDir: kept.CommonDir}, "s_01a0"},
	} {
		if _, err := f.m.Remove(ctx, tc.info, tc.sid, true); !errors.Is(err, ErrNotOwned) {
			t.Errorf("%s: Remove = %v, want ErrNotOwned", tc.name, err)
		}
	}
	if !exists(kept.Path) || !exists(filepath.Join(f.repo, "README.md")) {
		t.Error("a refused Remove deleted something")
	}
	equalLines(t, "referenced session's refs", allRefs(t, f.repo), without(refsBefore, append(append(f.refs["s_01a"], f.refs["s_dirty"]...), f.refs["s_ign"]...)...))
}
