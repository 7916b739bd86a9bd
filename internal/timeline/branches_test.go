package timeline

import (
	"fmt"
	"strings"
	"testing"
)

func describeBranches(bs []Branch) string {
	var parts []string
	for _, b := range bs {
		s := fmt.Sprintf("%s tip=%s from=%s turns=%d own=%d", b.ID, b.Tip, b.ForkedFrom, b.Turns, b.Own)
		if b.Active {
			s += " active"
		} else {
			s += " end=" + b.LeftBy
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func TestBranches(t *testing.T) {
	t.Parallel()
	// Three branches made by rewinds: cp1-cp3, cp1+cp4, cp1+cp5.
	base := cat(three(),
		rewind("r1", "cp2", ModeBoth, "cp3", "cp1"),
		[]Record{created("cp4", "cp1", 15), completed("cp4", 20, StatusCompleted)},
		rewind("r2", "cp4", ModeBoth, "cp4", "cp1"),
		[]Record{created("cp5", "cp1", 20), completed("cp5", 25, StatusCompleted)},
	)
	cases := []struct {
		name string
		recs []Record
		want string
	}{
		{"one line of work", three(), "b1 tip=cp3 from= turns=3 own=3 active"},
		{"undo keeps the branch, no empty one", cat(three(), rewind("r1", "cp3", ModeBoth, "cp3", "cp2")),
			"b1 tip=cp3 from= turns=3 own=3 end=r1; b2 tip=cp2 from=cp2 turns=2 own=0 active"},
		{"undo then redo leaves no trace", cat(three(),
			move("r1", "cp3", ModeBoth, "cp3", "cp2", "F3", "tree-cp3", false),
			move("r2", "", ModeBoth, "cp2", "cp3", "tree-cp3", "F3", true)),
			"b1 tip=cp3 from= turns=3 own=3 active"},
		{"workspace-only restore without trees stays on the branch", cat(three(), rewind("r1", "cp2", ModeWorkspace, "cp3", "cp3")),
			"b1 tip=cp3 from= turns=3 own=3 active"},
		{"workspace-only restore to the files already there stays on the branch", cat(three(),
			move("r1", "cp2", ModeWorkspace, "cp3", "cp3", "tree-cp2", "tree-cp2", false)),
			"b1 tip=cp3 from= turns=3 own=3 active"},
		// The files a workspace rewind replaced (the end of turn 3) are no
		// checkpoint's snapshot: the branch keeps them as its end.
		{"workspace-only restore leaves the files it replaced as a branch", cat(three(),
			move("r1", "cp2", ModeWorkspace, "cp3", "cp3", "F3", "tree-cp2", false)),
			"b1 tip=cp3 from= turns=3 own=3 end=r1; b2 tip=cp3 from=cp3 turns=3 own=0 active"},
		{"a turn after a workspace rewind grows the new branch", cat(three(),
			move("r1", "cp2", ModeWorkspace, "cp3", "cp3", "F3", "tree-cp2", false),
			[]Record{created("cp4", "cp3", 15), completed("cp4", 20, StatusCompleted)}),
			"b1 tip=cp3 from= turns=3 own=3 end=r1; b2 tip=cp4 from=cp3 turns=4 own=1 active"},
		// Every state a workspace rewind left is listed (turns to cp3 with
		// the files of before cp2, then of before cp1): only another
		// branch's /branch and a workspace rewind from there reach them.
		{"workspace rewinds then a rewind", cat(three(),
			move("r1", "cp2", ModeWorkspace, "cp3", "cp3", "F3", "tree-cp2", false),
			move("r2", "cp1", ModeWorkspace, "cp3", "cp3", "tree-cp2", "tree-cp1", false),
			move("r3", "cp2", ModeBoth, "cp3", "cp1", "tree-cp1", "tree-cp2", false)),
			"b1 tip=cp3 from= turns=3 own=3 end=r1; b2 tip=cp3 from=cp3 turns=3 own=0 end=r2; b3 tip=cp3 from=cp3 turns=3 own=0 end=r3; b4 tip=cp1 from=cp1 turns=1 own=0 active"},
		{"workspace rewinds then back to the first end", cat(three(),
			move("r1", "cp2", ModeWorkspace, "cp3", "cp3", "F3", "tree-cp2", false),
			move("r2", "cp1", ModeWorkspace, "cp3", "cp3", "tree-cp2", "tree-cp1", false),
			move("r3", "cp2", ModeBoth, "cp3", "cp1", "tree-cp1", "tree-cp2", false),
			move("r4", "cp3", ModeBoth, "cp1", "cp3", "tree-cp2", "F3", false)),
			"b1 tip=cp3 from= turns=3 own=3 active; b2 tip=cp3 from=cp3 turns=3 own=0 end=r2; b3 tip=cp3 from=cp3 turns=3 own=0 end=r3"},
		// The sequence of a user's report: /rewind cp3 workspace, /undo,
		// /redo, /rewind cp2 conversation, a new turn. The state the
		// workspace rewind made (turns to cp3, the files of before cp3)
		// keeps its id when /redo enters it again and stays listed; the
		// /undo state is what /rewind cp3 restores, so it needs no entry.
		{"a state keeps its id and stays listed", cat(three(),
			move("r1", "cp3", ModeWorkspace, "cp3", "cp3", "F3", "tree-cp3", false),
			move("r2", "cp3", ModeBoth, "cp3", "cp2", "tree-cp3", "tree-cp3", false),
			move("r3", "", ModeBoth, "cp2", "cp3", "tree-cp3", "tree-cp3", true),
			move("r4", "cp2", ModeConversation, "cp3", "cp1", "tree-cp3", "", false),
			[]Record{created("cp4", "cp1", 15), completed("cp4", 20, StatusCompleted)}),
			"b1 tip=cp3 from= turns=3 own=3 end=r1; b2 tip=cp3 from=cp3 turns=3 own=0 end=r4; b4 tip=cp4 from=cp1 turns=2 own=1 active"},
		{"a dropped state entered again gets its id back", cat(three(),
			move("r1", "cp3", ModeBoth, "cp3", "cp2", "F3", "tree-cp3", false),
			move("r2", "", ModeBoth, "cp2", "cp3", "tree-cp3", "F3", true),
			move("r3", "cp3", ModeBoth, "cp3", "cp2", "F3", "tree-cp3", false)),
			"b1 tip=cp3 from= turns=3 own=3 end=r3; b2 tip=cp2 from=cp2 turns=2 own=0 active"},
		// A branch without turns of its own whose files were edited by
		// hand: its end is reachable no other way, so it is listed, and
		// entering it restores it.
		{"an edited state without turns is kept", cat(three(),
			move("r1", "cp3", ModeConversation, "cp3", "cp2", "F3", "", false),
			move("r2", "cp2", ModeBoth, "cp2", "cp1", "G", "tree-cp2", false)),
			"b1 tip=cp3 from= turns=3 own=3 end=r1; b2 tip=cp2 from=cp2 turns=2 own=0 end=r2; b3 tip=cp1 from=cp1 turns=1 own=0 active"},
		{"entering the kept state", cat(three(),
			move("r1", "cp3", ModeConversation, "cp3", "cp2", "F3", "", false),
			move("r2", "cp2", ModeBoth, "cp2", "cp1", "G", "tree-cp2", false),
			move("r3", "cp2", ModeBoth, "cp1", "cp2", "tree-cp2", "G", false)),
			"b1 tip=cp3 from= turns=3 own=3 end=r1; b2 tip=cp2 from=cp2 turns=2 own=0 active"},
		// Entering a branch's tip with other files than it was left with
		// keeps that branch's end; leaving with the very same state again
		// is a duplicate.
		{"a branch's tip with other files is another state", cat(three(),
			move("r1", "cp2", ModeBoth, "cp3", "cp1", "F3", "tree-cp2", false),
			[]Record{created("cp4", "cp1", 15), completed("cp4", 20, StatusCompleted)},
			move("r2", "cp3", ModeConversation, "cp4", "cp3", "E4", "", false)),
			"b1 tip=cp3 from= turns=3 own=3 end=r1; b2 tip=cp4 from=cp1 turns=2 own=1 end=r2; b3 tip=cp3 from=cp3 turns=3 own=0 active"},
		{"the same state twice is listed once", cat(three(),
			move("r1", "cp2", ModeBoth, "cp3", "cp1", "F3", "tree-cp2", false),
			[]Record{created("cp4", "cp1", 15), completed("cp4", 20, StatusCompleted)},
			move("r2", "cp3", ModeConversation, "cp4", "cp3", "E4", "", false),
			move("r3", "cp2", ModeBoth, "cp3", "cp1", "F3", "tree-cp2", false)),
			"b1 tip=cp3 from= turns=3 own=3 end=r1; b2 tip=cp4 from=cp1 turns=2 own=1 end=r2; b4 tip=cp1 from=cp1 turns=1 own=0 active"},
		{"three branches", base,
			"b1 tip=cp3 from= turns=3 own=3 end=r1; b2 tip=cp4 from=cp1 turns=2 own=1 end=r2; b3 tip=cp5 from=cp1 turns=2 own=1 active"},
		{"switching to b1 leaves b3", cat(base, rewind("r3", "cp3", ModeBoth, "cp5", "cp3")),
			"b1 tip=cp3 from= turns=3 own=3 active; b2 tip=cp4 from=cp1 turns=2 own=1 end=r2; b3 tip=cp5 from=cp1 turns=2 own=1 end=r3"},
		{"a turn on a switched-to branch extends it", cat(base, rewind("r3", "cp3", ModeBoth, "cp5", "cp3"), []Record{created("cp6", "cp3", 25), completed("cp6", 30, StatusCompleted)}),
			"b1 tip=cp6 from= turns=4 own=4 active; b2 tip=cp4 from=cp1 turns=2 own=1 end=r2; b3 tip=cp5 from=cp1 turns=2 own=1 end=r3"},
		{"rewind to the root", cat(three(), rewind("r1", "cp1", ModeConversation, "cp3", ""), []Record{created("cp4", "", 15), completed("cp4", 20, StatusCompleted)}),
			"b1 tip=cp3 from= turns=3 own=3 end=r1; b2 tip=cp4 from= turns=1 own=1 active"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if st := Build(tc.recs); st.ReadOnly {
				t.Fatalf("records do not fit: %s", st.ReadOnlyReason)
			}
			if got := describeBranches(Branches(tc.recs)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// move is restore.started + head.moved with the trees recorded: the
// recovery snapshot of the files before the restore and the tree it
// restored ("" in conversation mode).
func move(id, target, mode, oldHead, newHead, recovery, targetTree string, redo bool) []Record {
	rs := rewind(id, target, mode, oldHead, newHead)
	for i := range rs {
		rs[i].Recovery = &SnapshotRef{Tree: recovery, Ref: "refs/yolop/checkpoints/s/" + id}
		rs[i].TargetTree = targetTree
		rs[i].Redo = redo
	}
	return rs
}

func TestBranchOf(t *testing.T) {
	t.Parallel()
	recs := cat(three(),
		rewind("r1", "cp2", ModeBoth, "cp3", "cp1"),
		[]Record{created("cp4", "cp1", 15), completed("cp4", 20, StatusCompleted)},
	)
	bs := Branches(recs)
	st := Build(recs)
	var ids []string
	for _, b := range BranchOf(bs, st, "cp3") {
		ids = append(ids, b.ID)
	}
	if strings.Join(ids, ",") != "b1" {
		t.Errorf("BranchOf(cp3) = %v", ids)
	}
	ids = nil
	for _, b := range BranchOf(bs, st, "cp1") {
		ids = append(ids, b.ID)
	}
	if strings.Join(ids, ",") != "b1,b2" {
		t.Errorf("BranchOf(cp1) = %v", ids)
	}
}
