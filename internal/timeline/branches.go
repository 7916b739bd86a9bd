package timeline

import (
	"fmt"
	"time"
)

// Branch is a line of work of a session: the turns from the root to its
// tip. A branch is born when a turn starts from a head that is not the tip
// of the current branch (after a rewind), or when a restore moves the head
// to a checkpoint no branch ends at; it grows while its turns run; it is
// left when a restore moves the conversation head away from it, and its
// end state is then its tip plus the recovery snapshot of the files taken
// by that restore's preview. A branch left without turns of its own (an
// /undo followed by /redo) is only a prefix of another one and is dropped.
//
// Ids are "b1", "b2", … in order of birth, never reused, and the same in
// every process because Branches is a pure function of the records.
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

// Branches derives the session's branches from the records applied to the
// state, in order of birth.
func (s *State) Branches() []Branch {
	var list []*Branch
	var cur *Branch
	next := 1
	born := func(tip, from string, at time.Time) *Branch {
		b := &Branch{ID: fmt.Sprintf("b%d", next), Tip: tip, ForkedFrom: from, Born: at}
		next++
		list = append(list, b)
		return b
	}
	for _, r := range s.trail {
		switch r.Type {
		case TypeCheckpointCreated:
			if cur != nil && cur.Tip == r.Parent {
				cur.Tip = r.Checkpoint
			} else {
				cur = born(r.Checkpoint, r.Parent, r.Time)
			}
		case TypeHeadMoved:
			if r.NewHead == r.OldHead {
				continue // workspace only: the conversation stays on its branch
			}
			if cur != nil {
				cur.LeftAt, cur.End, cur.LeftBy = r.Time, r.Recovery, r.Restore
				if cur.Tip == cur.ForkedFrom {
					// Nothing of its own: a prefix of another branch.
					for i, b := range list {
						if b == cur {
							list = append(list[:i], list[i+1:]...)
							break
						}
					}
				}
			}
			cur = nil
			for _, b := range list {
				if b.Tip == r.NewHead {
					cur = b
					break
				}
			}
			if cur == nil {
				cur = born(r.NewHead, r.NewHead, r.Time)
			} else {
				cur.LeftAt, cur.End, cur.LeftBy = time.Time{}, nil, ""
			}
		}
	}
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

// Recoveries returns the recovery snapshots the journal's head.moved
// records name, in order.
func (s *State) Recoveries() []Record {
	var out []Record
	for _, r := range s.trail {
		if r.Type == TypeHeadMoved && r.Recovery != nil {
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
