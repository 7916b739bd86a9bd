package timeline

import (
	"strings"
	"testing"
)

func snap(name string) *SnapshotRef {
	return &SnapshotRef{Tree: "tree-" + name, Ref: "refs/yolop/checkpoints/s/" + name}
}

func created(cp, parent string, seqBefore int64) Record {
	return Record{V: 1, Type: TypeCheckpointCreated, Checkpoint: cp, Parent: parent, SeqBefore: seqBefore, Prompt: "prompt " + cp, Snapshot: snap(cp)}
}

func completed(cp string, final int64, status string) Record {
	return Record{V: 1, Type: TypeTurnCompleted, Checkpoint: cp, FinalSeq: final, Status: status, End: snap("end-" + cp)}
}

func started(id, target, mode, oldHead, newHead string, redo bool) Record {
	return Record{V: 1, Type: TypeRestoreStarted, Restore: id, Target: target, Mode: mode, OldHead: oldHead, NewHead: newHead, AbandonedHead: oldHead, Recovery: snap(id), Redo: redo}
}

func moved(id, target, mode, oldHead, newHead string, redo bool) Record {
	r := started(id, target, mode, oldHead, newHead, redo)
	r.Type = TypeHeadMoved
	return r
}

// rewind is restore.started + head.moved.
func rewind(id, target, mode, oldHead, newHead string) []Record {
	return []Record{started(id, target, mode, oldHead, newHead, false), moved(id, target, mode, oldHead, newHead, false)}
}

func three() []Record {
	return []Record{
		created("cp1", "", 0), completed("cp1", 5, StatusCompleted),
		created("cp2", "cp1", 5), completed("cp2", 10, StatusCompleted),
		created("cp3", "cp2", 10), completed("cp3", 15, StatusCompleted),
	}
}

func cat(parts ...[]Record) []Record {
	var out []Record
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func ids(cps []*Checkpoint) string {
	var s []string
	for _, cp := range cps {
		s = append(s, cp.ID)
	}
	return strings.Join(s, ",")
}

func TestBuild(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		records   []Record
		head      string
		active    string // ids of ActiveChain
		redoHead  string // "-" = no redo slot
		pending   string // pending restore id
		open      string // open turn id
		readOnly  string // substring of the reason; "" = writable
		nextCP    int
		nextR     int
		checkTail func(*testing.T, *State)
	}{
		{name: "empty", head: "", active: "", redoHead: "-", nextCP: 1, nextR: 1},
		{name: "three turns", records: three(), head: "cp3", active: "cp1,cp2,cp3", redoHead: "-", nextCP: 4, nextR: 1},
		{name: "open turn", records: three()[:5], head: "cp2", active: "cp1,cp2,cp3", redoHead: "-", open: "cp3", nextCP: 4, nextR: 1},
		{name: "rewind to cp2 (head becomes cp1)", records: cat(three(), rewind("r1", "cp2", ModeBoth, "cp3", "cp1")),
			head: "cp1", active: "cp1", redoHead: "cp3", nextCP: 4, nextR: 2},
		{name: "rewind to cp1 then redo", records: cat(three(), rewind("r1", "cp1", ModeBoth, "cp3", ""),
			[]Record{started("r2", "", ModeBoth, "", "cp3", true), moved("r2", "", ModeBoth, "", "cp3", true)}),
			head: "cp3", active: "cp1,cp2,cp3", redoHead: "", nextCP: 4, nextR: 3,
			checkTail: func(t *testing.T, s *State) {
				// Redo after redo toggles: the slot now holds the root.
				if s.Redo == nil || s.Redo.From != "r2" || s.Redo.Recovery.Tree != "tree-r2" {
					t.Fatalf("redo slot %+v", s.Redo)
				}
			}},
		{name: "rewind, new turn clears redo, rewind again", records: cat(three(), rewind("r1", "cp2", ModeBoth, "cp3", "cp1"),
			[]Record{created("cp4", "cp1", 16), {V: 1, Type: TypeRedoCleared, Reason: "new turn"}, completed("cp4", 20, StatusCompleted)},
			rewind("r2", "cp4", ModeConversation, "cp4", "cp1")),
			head: "cp1", active: "cp1", redoHead: "cp4", nextCP: 5, nextR: 3},
		{name: "new turn after rewind branches", records: cat(three(), rewind("r1", "cp2", ModeBoth, "cp3", "cp1"),
			[]Record{created("cp4", "cp1", 16), completed("cp4", 20, StatusFailed)}),
			head: "cp4", active: "cp1,cp4", redoHead: "-", nextCP: 5, nextR: 2},
		{name: "workspace-only move keeps the head", records: cat(three(), rewind("r1", "cp1", ModeWorkspace, "cp3", "cp3")),
			head: "cp3", active: "cp1,cp2,cp3", redoHead: "cp3", nextCP: 4, nextR: 2,
			checkTail: func(t *testing.T, s *State) {
				if s.Redo.Mode != ModeWorkspace || s.Redo.Recovery == nil {
					t.Fatalf("redo slot %+v", s.Redo)
				}
			}},
		{name: "interrupted turn closed on resume", records: cat(three()[:5], []Record{completed("cp3", 12, StatusInterrupted)}),
			head: "cp3", active: "cp1,cp2,cp3", redoHead: "-", nextCP: 4, nextR: 1},
		{name: "restore.started pending", records: cat(three(), []Record{started("r1", "cp2", ModeBoth, "cp3", "cp1", false)}),
			head: "cp3", active: "cp1,cp2,cp3", redoHead: "-", pending: "r1", nextCP: 4, nextR: 2},
		{name: "restore aborted", records: cat(three(), []Record{started("r1", "cp2", ModeBoth, "cp3", "cp1", false), {V: 1, Type: TypeRestoreAborted, Restore: "r1"}}),
			head: "cp3", active: "cp1,cp2,cp3", redoHead: "-", nextCP: 4, nextR: 2},
		{name: "head.moved without intent (conversation only)", records: cat(three(), []Record{moved("r-tok", "cp3", ModeConversation, "cp3", "cp2", false)}),
			head: "cp2", active: "cp1,cp2", redoHead: "cp3", nextCP: 4, nextR: 1},
		{name: "conversation-only checkpoint", records: []Record{{V: 1, Type: TypeCheckpointCreated, Checkpoint: "cp1", CaptureError: "not a git repository"}, completed("cp1", 3, StatusCompleted)},
			head: "cp1", active: "cp1", redoHead: "-", nextCP: 2, nextR: 1},

		// Read-only: the state is the prefix before the bad record.
		{name: "unknown type mid-file", records: cat(three()[:2], []Record{{V: 1, Type: "checkpoint.renamed"}}, three()[2:]),
			head: "cp1", active: "cp1", redoHead: "-", readOnly: "line 3: unknown record type", nextCP: 2, nextR: 1},
		{name: "newer version", records: cat(three()[:2], []Record{{V: 2, Type: TypeRedoCleared}}),
			head: "cp1", active: "cp1", redoHead: "-", readOnly: "version 2", nextCP: 2, nextR: 1},
		{name: "duplicate checkpoint", records: cat(three()[:2], []Record{created("cp1", "cp1", 5)}),
			head: "cp1", active: "cp1", redoHead: "-", readOnly: "created twice", nextCP: 2, nextR: 1},
		{name: "ids must grow", records: cat(three(), []Record{created("cp2x", "cp3", 15)}),
			head: "cp3", active: "cp1,cp2,cp3", redoHead: "-", readOnly: "want cp<N>", nextCP: 4, nextR: 1},
		{name: "parent is not the head", records: cat(three()[:2], []Record{created("cp2", "", 5)}),
			head: "cp1", active: "cp1", redoHead: "-", readOnly: "parent", nextCP: 2, nextR: 1},
		{name: "seq_before goes back", records: cat(three()[:2], []Record{created("cp2", "cp1", 4)}),
			head: "cp1", active: "cp1", redoHead: "-", readOnly: "before seq 5", nextCP: 2, nextR: 1},
		{name: "head.moved to unknown checkpoint", records: cat(three(), []Record{moved("r1", "cp2", ModeBoth, "cp3", "cp9", false)}),
			head: "cp3", active: "cp1,cp2,cp3", redoHead: "-", readOnly: "unknown checkpoint \"cp9\"", nextCP: 4, nextR: 1},
		{name: "head.moved from a stale head", records: cat(three(), []Record{moved("r1", "cp2", ModeBoth, "cp2", "cp1", false)}),
			head: "cp3", active: "cp1,cp2,cp3", redoHead: "-", readOnly: "but the head is", nextCP: 4, nextR: 1},
		{name: "head.moved not matching its intent", records: cat(three(), []Record{started("r1", "cp2", ModeBoth, "cp3", "cp1", false), moved("r1", "cp1", ModeBoth, "cp3", "", false)}),
			head: "cp3", active: "cp1,cp2,cp3", redoHead: "-", pending: "r1", readOnly: "does not match", nextCP: 4, nextR: 2},
		{name: "turn starts during a restore", records: cat(three(), []Record{started("r1", "cp2", ModeBoth, "cp3", "cp1", false), created("cp4", "cp3", 15)}),
			head: "cp3", active: "cp1,cp2,cp3", redoHead: "-", pending: "r1", readOnly: "unresolved", nextCP: 4, nextR: 2},
		{name: "restore during an open turn", records: cat(three()[:5], []Record{started("r1", "cp1", ModeBoth, "cp2", "", false)}),
			head: "cp2", active: "cp1,cp2,cp3", redoHead: "-", open: "cp3", readOnly: "while turn cp3 is open", nextCP: 4, nextR: 1},
		{name: "workspace mode moving the head", records: cat(three(), []Record{moved("r1", "cp2", ModeWorkspace, "cp3", "cp1", false)}),
			head: "cp3", active: "cp1,cp2,cp3", redoHead: "-", readOnly: "workspace mode", nextCP: 4, nextR: 1},
		{name: "redo with empty slot", records: cat(three(), []Record{moved("r1", "", ModeBoth, "cp3", "cp2", true)}),
			head: "cp3", active: "cp1,cp2,cp3", redoHead: "-", readOnly: "redo slot is empty", nextCP: 4, nextR: 1},
		{name: "unknown status", records: cat(three()[:1], []Record{completed("cp1", 5, "done")}),
			head: "", active: "cp1", redoHead: "-", open: "cp1", readOnly: "unknown status", nextCP: 2, nextR: 1},
		{name: "abort without intent", records: cat(three(), []Record{{V: 1, Type: TypeRestoreAborted, Restore: "r1"}}),
			head: "cp3", active: "cp1,cp2,cp3", redoHead: "-", readOnly: "without a restore in progress", nextCP: 4, nextR: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := Build(tt.records)
			if s.Head != tt.head {
				t.Errorf("head = %q, want %q", s.Head, tt.head)
			}
			if got := ids(s.ActiveChain()); got != tt.active {
				t.Errorf("active chain = %q, want %q", got, tt.active)
			}
			switch {
			case tt.redoHead == "-" && s.Redo != nil:
				t.Errorf("redo slot %+v, want empty", s.Redo)
			case tt.redoHead != "-" && (s.Redo == nil || s.Redo.Head != tt.redoHead):
				t.Errorf("redo slot %+v, want head %q", s.Redo, tt.redoHead)
			}
			if got := ""; s.PendingRestore != nil {
				got = s.PendingRestore.Restore
				if got != tt.pending {
					t.Errorf("pending restore %q, want %q", got, tt.pending)
				}
			} else if tt.pending != "" {
				t.Errorf("no pending restore, want %q", tt.pending)
			}
			if got := ""; s.OpenTurn != nil || tt.open != "" {
				if s.OpenTurn != nil {
					got = s.OpenTurn.ID
				}
				if got != tt.open {
					t.Errorf("open turn %q, want %q", got, tt.open)
				}
			}
			if s.ReadOnly != (tt.readOnly != "") || !strings.Contains(s.ReadOnlyReason, tt.readOnly) {
				t.Errorf("read-only = %v %q, want %q", s.ReadOnly, s.ReadOnlyReason, tt.readOnly)
			}
			if s.NextCheckpoint != tt.nextCP || s.NextRestore != tt.nextR {
				t.Errorf("next cp%d r%d, want cp%d r%d", s.NextCheckpoint, s.NextRestore, tt.nextCP, tt.nextR)
			}
			if tt.checkTail != nil {
				tt.checkTail(t, s)
			}
			// Incremental Check/Apply agrees with Build.
			inc := New()
			for _, r := range tt.records {
				if inc.Check(r) != nil {
					break
				}
				if err := inc.Apply(r); err != nil {
					t.Fatalf("Apply after a passing Check: %v", err)
				}
			}
			if inc.Head != s.Head || inc.Records != s.Records {
				t.Errorf("incremental head %q/%d records, Build %q/%d", inc.Head, inc.Records, s.Head, s.Records)
			}
		})
	}
}

func TestApplyLeavesStateUnchangedOnError(t *testing.T) {
	t.Parallel()
	s := Build(three())
	before := s.Clone()
	if err := s.Apply(created("cp4", "cp1", 15)); err == nil {
		t.Fatal("a checkpoint whose parent is not the head was accepted")
	}
	if s.Head != before.Head || len(s.Checkpoints) != len(before.Checkpoints) || s.OpenTurn != nil || s.Records != before.Records || s.ReadOnly {
		t.Fatalf("state changed by a refused record: %+v", s)
	}
}

func TestInActiveRange(t *testing.T) {
	t.Parallel()
	type ev struct {
		turn string
		seq  int64
		want bool
	}
	tests := []struct {
		name    string
		records []Record
		events  []ev
	}{
		{"three turns", three(), []ev{
			{"", 0, false}, {"cp1", 1, true}, {"cp1", 5, true}, {"cp2", 6, true}, {"cp3", 15, true},
			{"cp3", 16, true}, // written after cp3 while it is the head (a notice)
			{"cp1", 7, false}, // tagged cp1 but inside cp2's range: not cp1's
			{"cp2", 5, false}, // before cp2 began
			{"cp9", 3, false},
		}},
		{"rewound to cp2 then a new turn", cat(three(), rewind("r1", "cp2", ModeBoth, "cp3", "cp1"),
			[]Record{created("cp4", "cp1", 16), completed("cp4", 20, StatusCompleted)}), []ev{
			{"cp1", 3, true}, {"cp2", 7, false}, {"cp3", 12, false},
			{"cp1", 16, true}, // restore notice written at head cp1 before cp4
			{"cp4", 18, true}, {"cp4", 25, true},
		}},
		{"redo does not bring back a notice of the rewound head", cat(three(), rewind("r1", "cp1", ModeBoth, "cp3", ""),
			[]Record{started("r2", "", ModeBoth, "", "cp3", true), moved("r2", "", ModeBoth, "", "cp3", true)}), []ev{
			{"", 16, false}, // notice written at the root after the rewind
			{"cp3", 17, true}, {"cp2", 8, true},
		}},
		{"root events before any turn", []Record{created("cp1", "", 2), completed("cp1", 5, StatusCompleted)}, []ev{
			{"", 1, true}, {"", 2, true}, {"", 3, false}, {"cp1", 3, true},
		}},
		{"open turn is unbounded", three()[:5], []ev{{"cp3", 11, true}, {"cp3", 999, true}, {"cp2", 11, false}}},
		{"rewound to root", cat(three(), rewind("r1", "cp1", ModeBoth, "cp3", "")), []ev{
			{"cp1", 3, false}, {"", 16, true}, {"", 0, false},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := Build(tt.records)
			if s.ReadOnly {
				t.Fatal(s.ReadOnlyReason)
			}
			for _, e := range tt.events {
				if got := s.InActiveRange(e.turn, e.seq); got != e.want {
					t.Errorf("InActiveRange(%q, %d) = %v, want %v", e.turn, e.seq, got, e.want)
				}
			}
		})
	}
}

func TestChainAndActive(t *testing.T) {
	t.Parallel()
	s := Build(cat(three(), rewind("r1", "cp2", ModeBoth, "cp3", "cp1"), []Record{created("cp4", "cp1", 16), completed("cp4", 20, StatusCompleted)}))
	if got := ids(s.Chain("cp3")); got != "cp1,cp2,cp3" {
		t.Fatalf("Chain(cp3) = %s", got)
	}
	if s.Chain("nope") != nil || s.Chain("") != nil {
		t.Fatal("Chain of unknown/root is not empty")
	}
	for id, want := range map[string]bool{"": true, "cp1": true, "cp2": false, "cp3": false, "cp4": true} {
		if s.Active(id) != want {
			t.Errorf("Active(%q) = %v", id, !want)
		}
	}
	c := s.Clone()
	c.Checkpoints["cp1"].Prompt = "changed"
	if s.Checkpoints["cp1"].Prompt == "changed" {
		t.Fatal("Clone shares checkpoints")
	}
}

// TestLastEndTree: the newest turn with an end capture names the tree,
// whichever branch it is on; an open turn and one whose end capture
// failed do not.
func TestLastEndTree(t *testing.T) {
	t.Parallel()
	noEnd := completed("cp3", 15, StatusCompleted)
	noEnd.End = nil
	for _, c := range []struct {
		name string
		recs []Record
		want string
	}{
		{"no turn", nil, ""},
		{"three turns", three(), "tree-end-cp3"},
		{"a turn open", append(three(), created("cp4", "cp3", 15)), "tree-end-cp3"},
		{"the newest end capture failed", cat(three()[:4], []Record{created("cp3", "cp2", 10), noEnd}), "tree-end-cp2"},
		{"rewound", cat(three(), rewind("r1", "cp2", ModeBoth, "cp3", "cp1")), "tree-end-cp3"},
	} {
		st := Build(c.recs)
		if st.ReadOnly {
			t.Fatalf("%s: %s", c.name, st.ReadOnlyReason)
		}
		if got := st.LastEndTree(); got != c.want {
			t.Errorf("%s: LastEndTree = %q, want %q", c.name, got, c.want)
		}
	}
}
