package checkpoint_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// A turn whose end capture fails (the disk filled up during it) is not
// listed as a completed turn that changed nothing: the record says why,
// the listing shows it, and the user is warned when the turn ends.
func TestFailedEndCaptureIsRecordedAndShown(t *testing.T) {
	t.Parallel()
	disk := gittest.SmallDisk(t, 8<<20)
	repo := gittest.NewRepoIn(t, disk)
	// The command fills the disk beside the worktree, which the write
	// sandbox would (rightly) refuse.
	r := newRig(t, rigOpts{repo: repo, sandbox: "off"})
	filler := filepath.Join(disk, "filler")
	out := r.turn("$ echo a > a.txt && echo b > b.txt && (head -c 100000000 /dev/zero > " + filler + " || true)")

	const cause = "no space left on device"
	if len(out.Warnings) != 1 || !strings.Contains(out.Warnings[0], cause) || !strings.Contains(out.Warnings[0], out.ID) {
		t.Errorf("turn warnings = %q, want one naming %q and %s", out.Warnings, cause, out.ID)
	}
	var done *timeline.Record
	recs, err := timeline.ReadRecords(r.sess.Path(session.TimelineFile))
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if recs[i].Type == timeline.TypeTurnCompleted && recs[i].Checkpoint == out.ID {
			done = &recs[i]
		}
	}
	if done == nil || done.End != nil || done.EndError != cause {
		t.Fatalf("turn.completed = %+v, want end_error %q and no end snapshot", done, cause)
	}
	rows, err := r.ctl.List(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || !rows[0].Workspace || !strings.Contains(rows[0].Reason, cause) || strings.Contains(rows[0].Reason, "cannot list") {
		t.Fatalf("rows = %+v, want the end capture failure as the reason", rows)
	}
	b, _ := json.Marshal(rows[0])
	if !strings.Contains(string(b), `"reason":"end-of-turn capture failed (no space left on device)`) {
		t.Errorf("JSON row = %s", b)
	}
	if c := rows[0].Cells(); c.Files != "?" || !strings.HasPrefix(c.Workspace, "yes; end-of-turn capture failed (no space left on device)") {
		t.Errorf("row cells = %+v, want the count unknown and the reason", c)
	}
	if lt := checkpoint.ListText(rows, func(time.Time) string { return "now" }); !strings.Contains(lt, cause) {
		t.Errorf("list text = %q", lt)
	}
	text, err := r.ctl.ListForModel(context.Background())
	if err != nil || !strings.Contains(text, cause) {
		t.Errorf("model listing = %q (%v), want the cause", text, err)
	}
	// Space again: the checkpoint itself is intact and the next turn
	// captures the files the failed one left.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	next := r.turn("$ echo c > c.txt")
	if len(next.Warnings) != 0 {
		t.Errorf("warnings after space came back: %q", next.Warnings)
	}
}

// The same turn, closed by Repair after a crash, records the failure too.
func TestRepairRecordsFailedEndCapture(t *testing.T) {
	t.Parallel()
	disk := gittest.SmallDisk(t, 8<<20)
	repo := gittest.NewRepoIn(t, disk)
	r := newRig(t, rigOpts{repo: repo})
	r.turn("$ echo a > a.txt")
	// A turn that was running when the process died: only its checkpoint
	// record exists.
	if err := r.tl.Append(timeline.Record{Type: timeline.TypeCheckpointCreated, Checkpoint: "cp2", Parent: "cp1", SeqBefore: r.sess.LastSeq(), Prompt: "killed", Snapshot: mustCapture(t, r, "cp2")}); err != nil {
		t.Fatal(err)
	}
	gittest.WriteFile(t, r.root, "b.txt", "b\n")
	gittest.Fill(t, filepath.Join(disk, "filler"))
	r.reopen()
	joined := strings.Join(r.notes, "\n")
	if !strings.Contains(joined, "could not be captured at the end of turn cp2 (no space left on device)") {
		t.Errorf("repair notes = %q", r.notes)
	}
}

func mustCapture(t *testing.T, r *rig, name string) *timeline.SnapshotRef {
	t.Helper()
	s, err := r.eng.Capture(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return &timeline.SnapshotRef{Tree: s.Tree, Ref: s.Ref}
}

// Rewinding a turn that turned a captured directory into a repository
// leaves the repository alone, says so in the preview, and verifies.
func TestRewindLeavesNewNestedRepoAlone(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	r.turn("$ mkdir lib2 && echo A > lib2/a.txt && echo B > lib2/b.txt")
	b := r.turn("$ rm -rf lib2 && mkdir lib2 && cd lib2 && git init -q && echo nested > a.txt && git add a.txt && git -c user.name=t -c user.email=t@t commit -qm n && echo u > u.txt && cd .. && echo top > top.txt")
	lib2 := filepath.Join(r.root, "lib2")
	before := manifest(t, lib2)
	nestedGit := manifest(t, filepath.Join(lib2, ".git"))

	req := checkpoint.Request{Action: checkpoint.ActionRewind, Target: b.ID, Mode: checkpoint.ModeWorkspace}
	pv, err := r.ctl.Preview(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pv.Paths {
		if strings.HasPrefix(p.Path, "lib2/") {
			t.Errorf("preview lists %s inside the nested repository", p.Path)
		}
	}
	found := false
	for _, e := range pv.Excluded {
		found = found || e == "lib2/"
	}
	if !found {
		t.Errorf("preview excluded = %q, want lib2/", pv.Excluded)
	}
	if _, err := r.ctl.Confirm(context.Background(), req, pv.Token); err != nil {
		t.Fatalf("confirm: %v", err)
	}
	if d := diffManifests(before, manifest(t, lib2)); len(d) > 0 {
		t.Errorf("the nested repository's files changed: %q", d)
	}
	if d := diffManifests(nestedGit, manifest(t, filepath.Join(lib2, ".git"))); len(d) > 0 {
		t.Errorf("the nested repository's .git changed: %q", d)
	}
	if _, err := os.Stat(filepath.Join(r.root, "top.txt")); !os.IsNotExist(err) {
		t.Errorf("top.txt was not removed by the rewind (%v)", err)
	}
}

// A deleted 0600 secret comes back 0600.
func TestRewindKeepsSecretPermissions(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	r.turn("$ echo s3cret > secret.key && chmod 600 secret.key")
	del := r.turn("$ rm secret.key")
	r.restore(checkpoint.Request{Action: checkpoint.ActionRewind, Target: del.ID, Mode: checkpoint.ModeWorkspace})
	st, err := os.Stat(filepath.Join(r.root, "secret.key"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("secret.key came back %o, want 600", st.Mode().Perm())
	}
}

// A shell command that points the worktree's .git at another repository
// neither wedges the session nor hides the work done with it.
func TestTurnRewritingDotGitIsRepaired(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	other := gittest.NewRepo(t)
	link := filepath.Join(r.root, ".git")
	orig, err := os.ReadFile(link)
	if err != nil {
		t.Fatal(err)
	}
	out := r.turn("$ echo \"gitdir: " + other + "/.git\" > .git; echo b > b.txt")
	if got, _ := os.ReadFile(link); string(got) != string(orig) {
		t.Errorf(".git = %q after the turn, want the link restored", got)
	}
	if !strings.Contains(strings.Join(out.Warnings, "\n"), ".git file had been changed") {
		t.Errorf("warnings = %q, want the link repair reported", out.Warnings)
	}
	rows, err := r.ctl.List(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if rows[0].FilesChanged != 1 || rows[0].Reason != "" {
		t.Errorf("row = %+v, want b.txt counted and no failure", rows[0])
	}
	// The other repository was never written.
	if st := gittest.Git(t, other, "status", "--porcelain"); st != "" {
		t.Errorf("the other repository changed: %q", st)
	}
	// Rewritten again between processes: the next open repairs it too.
	if err := os.WriteFile(link, []byte("gitdir: "+other+"/.git\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.reopen()
	// Notes follow "repaired:" / "warning:": they start in lower case.
	if !strings.Contains(strings.Join(r.notes, "\n"), "the worktree's .git file had been changed") {
		t.Errorf("notes after reopen = %q", r.notes)
	}
	undo := r.restore(checkpoint.Request{Action: checkpoint.ActionUndo})
	if undo.PathsChanged != 1 {
		t.Errorf("undo changed %d paths, want 1 (b.txt)", undo.PathsChanged)
	}
}

// Every file yolop writes under the data directory, outside the worktrees,
// is owner-only (0600, directories 0700): after turns, a background index
// update, a preview and a restore.
func TestDataDirIsOwnerOnly(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	r.turn("$ echo a > a.txt && seq 1 50000 > big.txt")
	b := r.turn("$ echo b > b.txt && rm a.txt")
	r.restore(checkpoint.Request{Action: checkpoint.ActionRewind, Target: b.ID, Mode: checkpoint.ModeBoth})
	r.close()
	err := filepath.WalkDir(r.data, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == r.data {
			return nil
		}
		rel, _ := filepath.Rel(r.data, path)
		if d.IsDir() && filepath.Dir(rel) == "worktrees" {
			return fs.SkipDir // <data>/worktrees/<repo-id>/: the worktrees themselves are the user's files
		}
		st, err := os.Lstat(path)
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %o, want %o", rel, st.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A repository created at the worktree's top level replaces its .git link
// with data yolop must not touch: the session still opens, lists its
// checkpoints read-only, refuses turns and restores with advice that loses
// nothing, and opens normally again once the directory is renamed.
func TestUnrepairableDotGitOpensReadOnly(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	r.turn("$ echo a > a.txt")
	link := filepath.Join(r.root, ".git")
	orig, err := os.ReadFile(link)
	if err != nil {
		t.Fatal(err)
	}
	r.turn("$ rm .git && git init -q . && echo b > b.txt")
	r.reopen()
	ro := r.ctl.ReadOnly()
	if !strings.Contains(ro, "rename it") || strings.Contains(ro, "remove") || strings.Contains(ro, "delete") {
		t.Errorf("read-only reason = %q, want advice to rename, never to remove", ro)
	}
	rows, err := r.ctl.List(context.Background(), false)
	if err != nil || len(rows) != 2 {
		t.Fatalf("listing = %+v, %v; want both checkpoints", rows, err)
	}
	if _, err := r.ctl.RunTurn(context.Background(), "$ echo c > c.txt", func(agent.Update) {}); checkpoint.CodeOf(err) != checkpoint.CodeReadOnly {
		t.Errorf("turn on a broken link: %v, want read_only", err)
	}
	if _, err := os.Stat(filepath.Join(r.root, "b.txt")); err != nil {
		t.Errorf("b.txt: %v", err)
	}
	// The user follows the advice; the next open repairs the link.
	if err := os.Rename(link, link+".moved"); err != nil {
		t.Fatal(err)
	}
	r.reopen()
	if ro := r.ctl.ReadOnly(); ro != "" {
		t.Fatalf("still read-only after the rename: %s", ro)
	}
	if got, _ := os.ReadFile(link); string(got) != string(orig) {
		t.Errorf(".git = %q, want the link back", got)
	}
	r.turn("$ echo c > c.txt")
}
