package timeline

import (
	"fmt"
	"time"
)

// Branch is a line of work of a session: the turns from the root to its
// tip, and the files it was left with. A branch is born when a turn starts
// from a head that is not the tip of the current branch (after a rewind),
// or when a restore moves the session to a state (conversation head and
// files) that no branch ends at; it grows while its turns run; it is left
// when a restore moves the conversation head or the files away from it,
// and its end state is then its tip plus the recovery snapshot of the
// files taken by that restore's preview.
//
// Every state a restore left (a conversation head and the files it had) is
// listed, so a restore can return to it, except three that need no entry:
// a branch without turns of its own left without a snapshot of its files
// (its conversation is a prefix of another branch), one whose end state is
// exactly what `/rewind cpK` restores from anywhere (the head before turn
// K with turn K's snapshot: an /undo followed by /redo), and one ending at
// the very same state as another branch.
//
// Ids are "b1", "b2", … in order of birth, never reused, and the same in
// every process because Branches is a pure function of the records. A
// state keeps its id: entering a state again (even one not listed for a
// while) is entering the same branch, so "b3" never becomes "b4".
type Branch struct {
	ID string
	// Tip is the newest turn of the branch ("" for an empty conversation).
	Tip string
	// ForkedFrom is the last turn the branch shares with the branch it was
	// born from ("" when it starts at the beginning of the session).
	ForkedFrom string
	Active     bool
	Born       time.Time
	// LeftAt is when the branch was last left (zero while active).
	LeftAt time.Time
	// End is the recovery snapshot of the files taken when the branch was
	// last left; nil while active, or when the session has no workspace
	// snapshots.
	End *SnapshotRef
	// LeftBy is the restore id of the head.moved that left it.
	LeftBy string
	// Turns is the number of turns from the root to the tip; Own the
	// number after ForkedFrom.
	Turns int
	Own   int
}

// Branches derives the session's branches from its records, in order of
// birth. It stops at the first record that does not fit, like Build.
func Branches(records []Record) []Branch { return Build(records).Branches() }

// endTree is the tree of the files a branch was left with ("" = unknown).
func endTree(b *Branch) string {
	if b.End == nil {
		return ""
	}
	return b.End.Tree
}

// filesAfter is the tree of the files a head.moved left in the workspace:
// the restored tree for a mode with workspace, the unchanged files (its
// recovery snapshot) otherwise; "" when the record does not say.
func filesAfter(r Record) string {
	if r.Mode == ModeBoth || r.Mode == ModeWorkspace {
		return r.TargetTree
	}
	if r.Recovery != nil {
		return r.Recovery.Tree
	}
	return ""
}

// Branches derives the session's branches from the records applied to the
// state, in order of birth.
func (s *State) Branches() []Branch {
	// all holds every branch born, in order of birth; a dropped one stays
	// (hidden) so that entering its state again brings back its id.
	var all []*Branch
	hidden := map[*Branch]bool{}
	var cur *Branch
	next := 1
	born := func(tip, from string, at time.Time) *Branch {
		b := &Branch{ID: fmt.Sprintf("b%d", next), Tip: tip, ForkedFrom: from, Born: at}
		next++
		all = append(all, b)
		return b
	}
	drop := func(b *Branch) { hidden[b] = true }
	listed := func() []*Branch {
		var out []*Branch
		for _, b := range all {
			if !hidden[b] {
				out = append(out, b)
			}
		}
		return out
	}
	// children maps a checkpoint ("" = the root) to the checkpoints made
	// from it so far.
	children := map[string][]string{}
	// rewindState reports whether (tip, tree) is what `/rewind cpK`
	// restores, from any branch: the head before a turn K made from tip,
	// with K's snapshot.
	rewindState := func(tip, tree string) bool {
		for _, id := range children[tip] {
			if cp := s.Checkpoints[id]; cp != nil && cp.Snapshot != nil && cp.Snapshot.Tree == tree {
				return true
			}
		}
		return false
	}
	for _, r := range s.fullTrail() {
		switch r.Type {
		case TypeCheckpointCreated:
			children[r.Parent] = append(children[r.Parent], r.Checkpoint)
			if cur != nil && cur.Tip == r.Parent {
				cur.Tip = r.Checkpoint
			} else {
				cur = born(r.Checkpoint, r.Parent, r.Time)
			}
		case TypeHeadMoved:
			files := filesAfter(r)
			if cur != nil && r.NewHead == cur.Tip && (files == "" || r.Recovery == nil || files == r.Recovery.Tree) {
				// Neither the conversation nor the files moved (a
				// workspace restore to the files already there, or one
				// whose trees are not recorded): still on the branch.
				continue
			}
			if cur != nil {
				cur.LeftAt, cur.End, cur.LeftBy = r.Time, r.Recovery, r.Restore
				own := cur.Tip != cur.ForkedFrom
				switch {
				case !own && (cur.End == nil || rewindState(cur.Tip, cur.End.Tree)):
					drop(cur)
				default:
					for _, b := range listed() {
						if b == cur || endTree(b) == "" || b.Tip != cur.Tip || endTree(b) != endTree(cur) {
							continue
						}
						// Two branches end at the same state: keep one, the
						// one with turns of its own.
						if !own {
							drop(cur)
							break
						}
						if b.Tip == b.ForkedFrom {
							drop(b)
						}
					}
				}
			}
			// The branch entered is the one that ends at the state the
			// restore made; a branch with the same tip but other files
			// stays listed with its own end. A listed branch first, then
			// one dropped earlier: its state is back, so is its id.
			cur = nil
			for _, pass := range []bool{false, true} {
				for _, b := range all {
					if hidden[b] != pass || b.Tip != r.NewHead {
						continue
					}
					if files == "" || endTree(b) == "" || endTree(b) == files {
						cur = b
						break
					}
				}
				if cur != nil {
					break
				}
			}
			if cur != nil {
				delete(hidden, cur)
			}
			if cur == nil {
				cur = born(r.NewHead, r.NewHead, r.Time)
			} else {
				cur.LeftAt, cur.End, cur.LeftBy = time.Time{}, nil, ""
			}
		}
	}
	list := listed()
	out := make([]Branch, 0, len(list))
	for _, b := range list {
		bb := *b
		bb.Active = b == cur
		bb.Turns = len(s.Chain(b.Tip))
		bb.Own = bb.Turns - len(s.Chain(b.ForkedFrom))
		out = append(out, bb)
	}
	return out
}

// Recoveries returns the recovery snapshots the journal names, in order:
// those of every restore.started (a restore that was rolled back keeps the
// files from before it there, as its error said) and of every head.moved,
// each ref once.
func (s *State) Recoveries() []Record {
	var out []Record
	seen := map[string]bool{}
	for _, r := range s.fullTrail() {
		if (r.Type == TypeHeadMoved || r.Type == TypeRestoreStarted) && r.Recovery != nil && !seen[r.Recovery.Ref] {
			seen[r.Recovery.Ref] = true
			out = append(out, r)
		}
	}
	return out
}

// BranchOf returns the branches whose turns include checkpoint id, the one
// holding it as its own turn first.
func BranchOf(branches []Branch, s *State, id string) []Branch {
	var own, shared []Branch
	for _, b := range branches {
		chain := s.Chain(b.Tip)
		for i, cp := range chain {
			if cp.ID != id {
				continue
			}
			if i >= len(chain)-b.Own {
				own = append(own, b)
			} else {
				shared = append(shared, b)
			}
			break
		}
	}
	return append(own, shared...)
}
