package timeline

import (
	"fmt"
	"slices"
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
// A branch without turns of its own (the head a rewind or a workspace-only
// restore left it at) is listed only while its end state cannot be reached
// otherwise: it is dropped when it is left without a snapshot of its files
// (its conversation is a prefix of another branch), when its files are the
// snapshot of a checkpoint a rewind reaches from its tip (an /undo followed
// by /redo, a workspace rewind followed by another), or when another branch
// ends at the very same state.
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
	var list []*Branch
	var cur *Branch
	next := 1
	born := func(tip, from string, at time.Time) *Branch {
		b := &Branch{ID: fmt.Sprintf("b%d", next), Tip: tip, ForkedFrom: from, Born: at}
		next++
		list = append(list, b)
		return b
	}
	drop := func(b *Branch) {
		for i, x := range list {
			if x == b {
				list = append(list[:i], list[i+1:]...)
				return
			}
		}
	}
	// children maps a checkpoint ("" = the root) to the checkpoints made
	// from it so far: a rewind to one of them from a branch holding it
	// reaches (its parent, its snapshot).
	children := map[string][]string{}
	// reachable reports whether the state (tip, tree) is one a rewind
	// reaches: the snapshot of a checkpoint on the tip's chain (a
	// workspace rewind from the tip) or of a child of the tip (a rewind of
	// both from a branch holding it).
	reachable := func(tip, tree string) bool {
		snapTree := func(id string) string {
			if cp := s.Checkpoints[id]; cp != nil && cp.Snapshot != nil {
				return cp.Snapshot.Tree
			}
			return ""
		}
		for _, id := range children[tip] {
			if snapTree(id) == tree {
				return true
			}
		}
		for _, cp := range s.Chain(tip) {
			if snapTree(cp.ID) == tree {
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
				case !own && (cur.End == nil || reachable(cur.Tip, cur.End.Tree)):
					drop(cur)
				default:
					for _, b := range slices.Clone(list) {
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
			// stays listed with its own end.
			cur = nil
			for _, b := range list {
				if b.Tip != r.NewHead {
					continue
				}
				if files == "" || endTree(b) == "" || endTree(b) == files {
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
