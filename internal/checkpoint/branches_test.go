package checkpoint_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/snapshot"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// Three branches made by rewinds; /branch to each restores its files and
// conversation exactly as they were when it was left, and /redo undoes
// every switch.
func TestBranchSwitchRestoresEndStateAndRedo(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	ctx := context.Background()
	type end struct {
		files   map[string]entry
		context string
		head    string
	}
	snapshotEnd := func() end {
		return end{files: manifest(t, r.root), context: r.contextText(), head: r.ctl.Head()}
	}
	r.turn("write base.txt\nbase\nEOF")
	r.turn("$ printf one > one.txt")
	ends := map[string]end{}
	// b1: base + one, plus an edit nobody committed to a turn.
	write(t, r.root, "scratch.txt", "typed by hand on b1\n")
	ends["b1"] = snapshotEnd()
	r.restore(checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp2"})
	beforeCp3 := snapshotEnd()
	r.turn("$ printf two > two.txt && rm base.txt")
	ends["b2"] = snapshotEnd()
	r.restore(checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp3"})
	r.turn("write three.txt\nthree\nEOF")
	ends["b3"] = snapshotEnd()

	rows := r.ctl.Branches()
	var got []string
	for _, b := range rows {
		got = append(got, fmt.Sprintf("%s:%s:%v:%d", b.ID, b.Tip, b.Active, b.Turns))
	}
	if want := "b1:cp2:false:2 b2:cp3:false:2 b3:cp4:true:2"; strings.Join(got, " ") != want {
		t.Fatalf("branches = %v, want %s", got, want)
	}

	// A rewind to a checkpoint of an abandoned branch switches to that
	// branch and rewinds there: one preview, one token; /redo comes back.
	atB3 := snapshotEnd()
	pv, err := r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp3"})
	if err != nil {
		t.Fatalf("rewind to abandoned cp3: %v", err)
	}
	if pv.Branch != "b2" || pv.BranchLeft != "b3" || pv.Mode != checkpoint.ModeBoth || !strings.HasPrefix(pv.Command, "/rewind cp3 both --confirm ") ||
		len(pv.TurnsLeaving) != 1 || pv.TurnsLeaving[0].ID != "cp4" {
		t.Fatalf("preview /rewind cp3 from b3: %+v", pv)
	}
	res, err := r.ctl.Confirm(ctx, checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp3", Mode: checkpoint.ModeBoth}, pv.Token)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Notice, "Switched to branch b2 and rewound to cp3") || res.Prompt != "$ printf two > two.txt && rm base.txt" {
		t.Fatalf("restored: %+v", res)
	}
	r.requireManifest(beforeCp3.files, "after /rewind cp3 from b3")
	if r.ctl.Head() != beforeCp3.head || r.contextText() != beforeCp3.context {
		t.Fatalf("after /rewind cp3 from b3: head %s", r.ctl.Head())
	}
	r.restore(checkpoint.Request{Action: checkpoint.ActionRedo})
	r.requireManifest(atB3.files, "after /redo of /rewind cp3")
	if r.ctl.Head() != atB3.head || r.contextText() != atB3.context {
		t.Fatalf("after /redo of /rewind cp3: head %s", r.ctl.Head())
	}
	// The /undo-like state (cp1, the files of before cp3) is what /rewind
	// cp3 restores: no entry.
	rows = r.ctl.Branches()
	got = nil
	for _, b := range rows {
		got = append(got, fmt.Sprintf("%s:%s:%v:%d", b.ID, b.Tip, b.Active, b.Own))
	}
	if want := "b1:cp2:false:2 b2:cp3:false:1 b3:cp4:true:1"; strings.Join(got, " ") != want {
		t.Fatalf("after the round trip: %v, want %s", got, want)
	}

	current := "b3"
	for _, to := range []string{"b1", "b2", "b3", "b1"} {
		before := snapshotEnd()
		pv, err := r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionBranch, Target: to})
		if err != nil {
			t.Fatalf("preview /branch %s: %v", to, err)
		}
		if pv.Branch != to || pv.BranchLeft != current || pv.Mode != checkpoint.ModeBoth || !strings.HasPrefix(pv.Command, "/branch "+to+" both --confirm ") {
			t.Fatalf("preview /branch %s: %+v", to, pv)
		}
		if _, err := r.ctl.Confirm(ctx, checkpoint.Request{Action: checkpoint.ActionBranch, Target: to}, pv.Token); err != nil {
			t.Fatalf("confirm /branch %s: %v", to, err)
		}
		want := ends[to]
		r.requireManifest(want.files, "after /branch "+to)
		if r.ctl.Head() != want.head || r.contextText() != want.context {
			t.Fatalf("after /branch %s: head %s, context differs: %v", to, r.ctl.Head(), r.contextText() != want.context)
		}
		// /redo undoes the switch exactly, and redo again re-enters.
		r.restore(checkpoint.Request{Action: checkpoint.ActionRedo})
		r.requireManifest(before.files, "after /redo of /branch "+to)
		if r.ctl.Head() != before.head || r.contextText() != before.context {
			t.Fatalf("after /redo of /branch %s: head %s", to, r.ctl.Head())
		}
		r.restore(checkpoint.Request{Action: checkpoint.ActionRedo})
		r.requireManifest(want.files, "after /redo /redo of /branch "+to)
		// Each branch's end state is what it was left with; record the
		// state we leave now for the next switch.
		ends[current] = before
		current = to
	}

	// Refusals change nothing.
	for _, tc := range []struct{ target, code string }{
		{"b9", checkpoint.CodeUnknownBranch},
		{current, checkpoint.CodeUnknownBranch},
		{"", checkpoint.CodeUnknownBranch},
	} {
		if _, err := r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionBranch, Target: tc.target}); checkpoint.CodeOf(err) != tc.code {
			t.Errorf("/branch %q: %v, want %s", tc.target, err, tc.code)
		}
	}
}

// Fifty unconfirmed previews leave one recovery ref, not fifty; refs a
// journal record or the redo slot needs stay.
func TestUnconfirmedPreviewRefsAreBounded(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	ctx := context.Background()
	r.turn("write a.txt\na\nEOF")
	r.turn("write b.txt\nb\nEOF")
	r.restore(checkpoint.Request{Action: checkpoint.ActionUndo}) // journaled: its recovery stays
	count := func() (int, []string) {
		refs, err := snapshot.ListRefs(ctx, r.repo, r.id)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		var names []string
		for _, ref := range refs {
			name := ref[strings.LastIndexByte(ref, '/')+1:]
			if strings.HasPrefix(name, "r") && !strings.HasPrefix(name, "re") {
				n++
				names = append(names, name)
			}
		}
		return n, names
	}
	base, _ := count()
	var tokens []string
	for i := 0; i < 50; i++ {
		write(t, r.root, "churn.txt", fmt.Sprint(i))
		pv, err := r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp1"})
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, pv.Token)
		if n, names := count(); n > base+1 {
			t.Fatalf("after %d previews: %d recovery refs %v (base %d)", i+1, n, names, base)
		}
	}
	// The superseded tokens say why they no longer work; the newest works.
	_, err := r.ctl.Confirm(ctx, checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp1"}, tokens[40])
	if checkpoint.CodeOf(err) != checkpoint.CodeTokenExpired || !strings.Contains(err.Error(), "newer preview") {
		t.Fatalf("old token: %v", err)
	}
	if _, err := r.ctl.Confirm(ctx, checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp1"}, tokens[49]); err != nil {
		t.Fatalf("newest token: %v", err)
	}
	// A preview left unconfirmed before a turn is removed by that turn.
	r.turn("$ true")
	if _, err := r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionUndo}); err != nil {
		t.Fatal(err)
	}
	r.turn("$ true")
	n, names := count()
	retained, err := r.ctl.Retained(ctx)
	if err != nil {
		t.Fatal(err)
	}
	recoveries := 0
	for _, ret := range retained {
		if ret.IsRecovery() {
			recoveries++
		}
	}
	if n != recoveries {
		t.Fatalf("refs %v, retained %+v", names, retained)
	}
	for _, ret := range retained {
		if ret.Why == "" || ret.Tree == "" {
			t.Errorf("retained without a reason or tree: %+v", ret)
		}
	}
	// Numbers are never reused.
	pv, err := r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionUndo})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Recovery != "r53" {
		t.Errorf("next recovery id %s, want r53", pv.Recovery)
	}
}

// A state a restore leaves that no rewind reaches again is listed as a
// branch and entering it restores it exactly: the files a workspace-only
// rewind replaced, and files edited by hand on a head that has no turns
// of its own. States a rewind reaches (the files before a turn) are not
// listed twice.
func TestBranchListsEveryStateARestoreLeft(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	ctx := context.Background()
	r.turn("write a.txt\na\nEOF")
	r.turn("write b.txt\nb\nEOF")
	r.turn("$ printf c > c.txt")
	endOfThree := manifest(t, r.root)
	// The model context of the branch (restore notices the workspace
	// rewinds add to it follow).
	ctxThree := strings.TrimSuffix(r.contextText(), "]")

	// Workspace rewinds, then a rewind of both: the files of the end of
	// turn 3 are no checkpoint's snapshot; the states the workspace
	// rewinds made (turns to cp3, the files of before cp2, then cp1) are
	// listed too, each reachable by its /branch.
	r.restore(checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp2", Mode: checkpoint.ModeWorkspace})
	beforeTwo := manifest(t, r.root)
	r.restore(checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp1", Mode: checkpoint.ModeWorkspace})
	r.restore(checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp2", Mode: checkpoint.ModeBoth})
	rows := r.ctl.Branches()
	var got []string
	for _, b := range rows {
		got = append(got, fmt.Sprintf("%s:%s:%v:%d:%v", b.ID, b.Tip, b.Active, b.Own, b.Workspace))
	}
	if want := "b1:cp3:false:3:true b2:cp3:false:0:true b3:cp3:false:0:true b4:cp1:true:0:false"; strings.Join(got, " ") != want {
		t.Fatalf("branches = %v, want %s", got, want)
	}
	r.restore(checkpoint.Request{Action: checkpoint.ActionBranch, Target: "b2"})
	r.requireManifest(beforeTwo, "after /branch b2")
	if r.ctl.Head() != "cp3" {
		t.Fatalf("after /branch b2: head %s", r.ctl.Head())
	}
	r.restore(checkpoint.Request{Action: checkpoint.ActionBranch, Target: "b1"})
	r.requireManifest(endOfThree, "after /branch b1")
	if r.ctl.Head() != "cp3" || !strings.HasPrefix(r.contextText(), ctxThree) {
		t.Fatalf("after /branch b1: head %s\n%q\nwant prefix\n%q", r.ctl.Head(), r.contextText(), ctxThree)
	}
	// The workspace notices on cp3 describe other files: the model is told
	// which ones it has now.
	if !strings.Contains(r.contextText(), "Switched to branch b1 (tip cp3)") {
		t.Fatalf("the model is not told the branch's files are back: %s", r.contextText())
	}
	// The state at cp1 is what /rewind cp2 restores: no entry.
	if rows := r.ctl.Branches(); len(rows) != 3 || !rows[0].Active || rows[1].ID != "b2" || rows[2].ID != "b3" {
		t.Fatalf("after /branch b1 the states are not all listed under their ids: %+v", rows)
	}

	// A conversation rewind keeps the files; editing them by hand makes a
	// state (head cp2, edited files) that only the branch list holds once
	// another rewind leaves it.
	r.restore(checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp3", Mode: checkpoint.ModeConversation})
	write(t, r.root, "b.txt", "edited by hand at cp2\n")
	edited := manifest(t, r.root)
	ctxTwo := strings.TrimSuffix(r.contextText(), "]")
	r.restore(checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp2", Mode: checkpoint.ModeBoth})
	var kept *checkpoint.BranchRow
	for _, b := range r.ctl.Branches() {
		if !b.Active && b.Tip == "cp2" && b.Own == 0 {
			kept = &b
		}
	}
	if kept == nil {
		t.Fatalf("the edited state at cp2 is not listed: %+v", r.ctl.Branches())
	}
	pv, err := r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionBranch, Target: kept.ID})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Mode != checkpoint.ModeBoth {
		t.Fatalf("preview /branch %s: mode %s", kept.ID, pv.Mode)
	}
	if _, err := r.ctl.Confirm(ctx, checkpoint.Request{Action: checkpoint.ActionBranch, Target: kept.ID}, pv.Token); err != nil {
		t.Fatal(err)
	}
	r.requireManifest(edited, "after /branch "+kept.ID)
	if r.ctl.Head() != "cp2" || !strings.HasPrefix(r.contextText(), ctxTwo) {
		t.Fatalf("after /branch %s: head %s", kept.ID, r.ctl.Head())
	}
	// And b1 is still exactly what it was.
	r.restore(checkpoint.Request{Action: checkpoint.ActionBranch, Target: "b1"})
	r.requireManifest(endOfThree, "after /branch b1 again")
	if r.ctl.Head() != "cp3" || !strings.HasPrefix(r.contextText(), ctxThree) {
		t.Fatalf("after /branch b1 again: head %s", r.ctl.Head())
	}
}

// Many turns, previews, restores and a failed restore leave a bounded set
// of snapshot refs: two per turn, one per confirmed restore, at most one
// unconfirmed preview, and no scratch capture. Every snapshot the journal
// names is still anchored by its ref and readable, and `checkpoints
// --all` (Retained) lists exactly the refs that exist.
func TestSnapshotRefsStayBoundedAndJournalTreesReachable(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{journal: func(tl checkpoint.Timeline) checkpoint.Timeline {
		return &failingJournal{Timeline: tl, typ: timeline.TypeHeadMoved}
	}})
	ctx := context.Background()
	r.turn("write a.txt\na\nEOF")
	r.turn("write b.txt\nb\nEOF")
	// A restore whose journal write fails is rolled back: the files come
	// back and its scratch capture goes.
	before := manifest(t, r.root)
	pv, err := r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionUndo})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ctl.Confirm(ctx, checkpoint.Request{Action: checkpoint.ActionUndo}, pv.Token); checkpoint.CodeOf(err) != checkpoint.CodeRestoreFailed {
		t.Fatalf("confirm with a failing journal: %v", err)
	}
	r.requireManifest(before, "after the failed restore")
	r.reopen()
	refs := func() []string {
		list, err := snapshot.ListRefs(ctx, r.repo, r.id)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, ref := range list {
			names = append(names, ref[strings.LastIndexByte(ref, '/')+1:])
		}
		return names
	}
	for _, n := range refs() {
		if strings.HasPrefix(n, "rollback-") || strings.HasPrefix(n, "repair-") {
			t.Fatalf("a scratch capture is left: %v", refs())
		}
	}
	// The failed restore's recovery snapshot is kept: its error named it.
	if !slices.Contains(refs(), pv.Recovery) {
		t.Fatalf("the failed restore's recovery %s is gone: %v", pv.Recovery, refs())
	}

	confirmed := 1 // the failed restore's intent names its recovery
	for i := 0; i < 12; i++ {
		r.turn(fmt.Sprintf("write c.txt\n%d\nEOF", i))
		for j := 0; j < 3; j++ {
			write(t, r.root, "hand.txt", fmt.Sprint(i, j))
			if _, err := r.ctl.Preview(ctx, checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp1"}); err != nil {
				t.Fatal(err)
			}
		}
		if i%3 == 0 {
			r.restore(checkpoint.Request{Action: checkpoint.ActionUndo})
			r.restore(checkpoint.Request{Action: checkpoint.ActionRedo})
			confirmed += 2
		}
		st := r.tl.State()
		if n, limit := len(refs()), 2*len(st.Order)+confirmed+1; n > limit {
			t.Fatalf("round %d: %d refs > %d (%d turns, %d restores): %v", i, n, limit, len(st.Order), confirmed, refs())
		}
	}

	// Every tree the journal names is anchored by the ref it names.
	st := r.tl.State()
	named := map[string]string{}
	for _, id := range st.Order {
		cp := st.Checkpoints[id]
		for _, s := range []*timeline.SnapshotRef{cp.Snapshot, cp.End} {
			if s != nil {
				named[s.Ref] = s.Tree
			}
		}
	}
	for _, rec := range st.Recoveries() {
		named[rec.Recovery.Ref] = rec.Recovery.Tree
	}
	for ref, tree := range named {
		out, err := exec.Command("git", "-C", r.repo, "rev-parse", "--verify", ref).Output()
		if err != nil || strings.TrimSpace(string(out)) != tree {
			t.Errorf("%s: %q %v, want %s", ref, out, err, tree)
		}
		if err := exec.Command("git", "-C", r.repo, "cat-file", "-e", tree).Run(); err != nil {
			t.Errorf("tree %s of %s: %v", tree, ref, err)
		}
	}
	if out, err := exec.Command("git", "-C", r.repo, "fsck", "--connectivity-only", "--no-dangling").CombinedOutput(); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
	// Retained lists every ref, each with why.
	kept, err := r.ctl.Retained(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != len(refs()) {
		t.Fatalf("retained %d entries, %d refs exist", len(kept), len(refs()))
	}
	for _, k := range kept {
		if k.Why == "" || k.Tree == "" || strings.HasPrefix(k.Why, "not ") {
			t.Errorf("retained %+v", k)
		}
	}
}

// An edited state at the very start (no turn active) is a branch too, and
// entering it gives back an empty conversation with those files.
func TestBranchAtTheStart(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{})
	r.turn("write a.txt\na\nEOF")
	r.turn("write b.txt\nb\nEOF")
	r.restore(checkpoint.Request{Action: checkpoint.ActionRewind, Target: "cp1", Mode: checkpoint.ModeConversation})
	write(t, r.root, "start.txt", "typed before any turn\n")
	edited := manifest(t, r.root)
	r.restore(checkpoint.Request{Action: checkpoint.ActionRedo})
	var start *checkpoint.BranchRow
	for _, b := range r.ctl.Branches() {
		if !b.Active && b.Tip == "" {
			start = &b
		}
	}
	if start == nil || !start.Workspace || start.Turns != 0 {
		t.Fatalf("the edited start is not a branch: %+v", r.ctl.Branches())
	}
	r.restore(checkpoint.Request{Action: checkpoint.ActionBranch, Target: start.ID})
	r.requireManifest(edited, "after /branch "+start.ID)
	if r.ctl.Head() != "" || strings.Contains(r.contextText(), "write a.txt") {
		t.Fatalf("after /branch %s: head %q, context %s", start.ID, r.ctl.Head(), r.contextText())
	}
}
