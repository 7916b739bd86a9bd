package timeline

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Checkpoint is a turn boundary as the journal describes it.
type Checkpoint struct {
	ID           string
	Parent       string
	Prompt       string
	Created      time.Time
	SeqBefore    int64
	FinalSeq     int64
	Status       string // "" while open
	Open         bool   // no turn.completed yet
	Snapshot     *SnapshotRef
	CaptureError string
	End          *SnapshotRef
}

// Redo is the one-slot redo target: what the most recent restore abandoned.
type Redo struct {
	Head     string       // abandoned head (for modes with conversation)
	Recovery *SnapshotRef // files before the restore (for modes with workspace)
	Mode     string
	From     string // restore id of the head.moved that filled the slot
}

// State is the timeline materialized from its records.
type State struct {
	Checkpoints    map[string]*Checkpoint
	Order          []string // creation order
	Head           string
	Redo           *Redo
	PendingRestore *Record     // restore.started without head.moved or restore.aborted
	OpenTurn       *Checkpoint // checkpoint.created without turn.completed
	ReadOnly       bool
	ReadOnlyReason string
	NextCheckpoint int // number for the next cpN
	NextRestore    int
}

// Build validates records and materializes the state. It never guesses: the
// first inconsistent record makes the state read-only, with the state as
// of the records before it (so replay still works).
func Build(records []Record) *State {
	s := &State{Checkpoints: map[string]*Checkpoint{}, NextCheckpoint: 1, NextRestore: 1}
	for i, r := range records {
		if err := s.apply(r); err != nil {
			s.ReadOnly = true
			s.ReadOnlyReason = fmt.Sprintf("record %d (%s): %v", i+1, r.Type, err)
			return s
		}
	}
	return s
}

func cpNumber(id string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(id, "cp"))
	return n, strings.HasPrefix(id, "cp") && err == nil && n > 0
}

func (s *State) known(id string) bool {
	if id == "" {
		return true
	}
	_, ok := s.Checkpoints[id]
	return ok
}

func (s *State) apply(r Record) error {
	switch r.Type {
	case typeCorrupt:
		return fmt.Errorf("%s", r.Reason)
	case TypeCheckpointCreated:
		n, ok := cpNumber(r.Checkpoint)
		if !ok {
			return fmt.Errorf("bad checkpoint id %q", r.Checkpoint)
		}
		if s.Checkpoints[r.Checkpoint] != nil {
			return fmt.Errorf("checkpoint %s created twice", r.Checkpoint)
		}
		if n < s.NextCheckpoint {
			return fmt.Errorf("checkpoint %s is not newer than cp%d", r.Checkpoint, s.NextCheckpoint-1)
		}
		if s.OpenTurn != nil {
			return fmt.Errorf("checkpoint %s created while turn %s is open", r.Checkpoint, s.OpenTurn.ID)
		}
		if s.PendingRestore != nil {
			return fmt.Errorf("checkpoint %s created during restore %s", r.Checkpoint, s.PendingRestore.Restore)
		}
		if r.Parent != s.Head {
			return fmt.Errorf("checkpoint %s has parent %q but the head is %q", r.Checkpoint, r.Parent, s.Head)
		}
		if prev := s.lastSeq(); r.SeqBefore < prev {
			return fmt.Errorf("checkpoint %s starts at seq %d, before seq %d", r.Checkpoint, r.SeqBefore, prev)
		}
		cp := &Checkpoint{ID: r.Checkpoint, Parent: r.Parent, Prompt: r.Prompt, Created: r.Time, SeqBefore: r.SeqBefore, Open: true, Snapshot: r.Snapshot, CaptureError: r.CaptureError}
		s.Checkpoints[cp.ID] = cp
		s.Order = append(s.Order, cp.ID)
		s.OpenTurn = cp
		s.NextCheckpoint = n + 1
		s.Redo = nil
	case TypeTurnCompleted:
		cp := s.Checkpoints[r.Checkpoint]
		if cp == nil {
			return fmt.Errorf("turn %s completed but never created", r.Checkpoint)
		}
		if !cp.Open {
			return fmt.Errorf("turn %s completed twice", r.Checkpoint)
		}
		if r.FinalSeq < cp.SeqBefore {
			return fmt.Errorf("turn %s ends at seq %d before it began (%d)", r.Checkpoint, r.FinalSeq, cp.SeqBefore)
		}
		cp.Open, cp.FinalSeq, cp.Status, cp.End = false, r.FinalSeq, r.Status, r.End
		if cp.Status == "" {
			cp.Status = "completed"
		}
		s.OpenTurn = nil
		s.Head = cp.ID
	case TypeRestoreStarted:
		if s.PendingRestore != nil {
			return fmt.Errorf("restore %s started while %s is unfinished", r.Restore, s.PendingRestore.Restore)
		}
		if s.OpenTurn != nil {
			return fmt.Errorf("restore %s started during turn %s", r.Restore, s.OpenTurn.ID)
		}
		if r.OldHead != s.Head {
			return fmt.Errorf("restore %s starts from head %q but the head is %q", r.Restore, r.OldHead, s.Head)
		}
		if !s.known(r.NewHead) {
			return fmt.Errorf("restore %s targets unknown head %q", r.Restore, r.NewHead)
		}
		rec := r
		s.PendingRestore = &rec
	case TypeHeadMoved:
		p := s.PendingRestore
		if p == nil || p.Restore != r.Restore {
			return fmt.Errorf("head moved by restore %s that never started", r.Restore)
		}
		if r.NewHead != p.NewHead || r.OldHead != s.Head {
			return fmt.Errorf("head.moved of %s does not match its intent", r.Restore)
		}
		s.Head = r.NewHead
		s.Redo = &Redo{Head: r.AbandonedHead, Recovery: r.Recovery, Mode: r.Mode, From: r.Restore}
		s.PendingRestore = nil
		s.bumpRestore(r.Restore)
	case TypeRestoreAborted:
		p := s.PendingRestore
		if p == nil || p.Restore != r.Restore {
			return fmt.Errorf("restore %s aborted but never started", r.Restore)
		}
		s.PendingRestore = nil
		s.bumpRestore(r.Restore)
	case TypeRedoCleared:
		s.Redo = nil
	default:
		return fmt.Errorf("unknown record type %q", r.Type)
	}
	return nil
}

func (s *State) bumpRestore(id string) {
	if n, err := strconv.Atoi(strings.TrimPrefix(id, "r")); err == nil && n >= s.NextRestore {
		s.NextRestore = n + 1
	}
}

func (s *State) lastSeq() int64 {
	var m int64
	for _, cp := range s.Checkpoints {
		if cp.SeqBefore > m {
			m = cp.SeqBefore
		}
		if cp.FinalSeq > m {
			m = cp.FinalSeq
		}
	}
	return m
}

// Chain returns the checkpoints from the root to head, oldest first.
func (s *State) Chain(head string) []*Checkpoint {
	var rev []*Checkpoint
	seen := map[string]bool{}
	for id := head; id != ""; {
		cp := s.Checkpoints[id]
		if cp == nil || seen[id] {
			break
		}
		seen[id] = true
		rev = append(rev, cp)
		id = cp.Parent
	}
	out := make([]*Checkpoint, len(rev))
	for i, cp := range rev {
		out[len(rev)-1-i] = cp
	}
	return out
}

// ActiveChain returns the active branch, oldest first.
func (s *State) ActiveChain() []*Checkpoint { return s.Chain(s.Head) }

// Active reports whether checkpoint id is on the active branch.
func (s *State) Active(id string) bool {
	for _, cp := range s.ActiveChain() {
		if cp.ID == id {
			return true
		}
	}
	return false
}
