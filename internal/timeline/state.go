package timeline

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Checkpoint is a materialized turn: the state before it and how it ended.
type Checkpoint struct {
	ID     string
	Parent string
	Prompt string
	// PromptBytes is the whole prompt's length when Prompt is only its
	// start (Record.PromptBytes); 0 when Prompt is whole.
	PromptBytes  int64
	Created      time.Time
	SeqBefore    int64
	FinalSeq     int64  // 0 while open
	Status       string // "" while open
	Open         bool   // no turn.completed yet
	Snapshot     *SnapshotRef
	CaptureError string
	LeftOut      []string // files the snapshot left out for their size (Record.LeftOut)
	End          *SnapshotRef
	EndError     string // why the end-of-turn capture failed ("" = it did not)
	// FilesChanged is the number of paths the turn changed, as its
	// turn.completed recorded it; nil when the record predates the field
	// or the turn has no end snapshot to compare.
	FilesChanged *int
	Sandbox      string // level the turn's commands ran under; "" = not recorded
	// Paths the turn changed (see Record.Paths); nil when not recorded.
	Paths     []string
	PathsMore int
	// Restores are the workspace-only restores made while this turn was
	// the head (oldest first): changes to the files after the turn that
	// no turn made. A restore in place takes them back too, newest first,
	// before the turn's own change.
	Restores []RestoreChange
}

// RestoreChange is a workspace restore's change to the files: from its
// recovery capture to the tree it wrote.
type RestoreChange struct {
	From, To string
}

// Redo is the one redo slot: what the most recent restore abandoned.
type Redo struct {
	Head     string       // abandoned head to go back to (modes with conversation)
	Recovery *SnapshotRef // workspace before the restore (modes with workspace)
	Mode     string
	From     string // restore id of the head.moved that filled the slot
	// Wrote is the tree of the workspace that restore left (modes with
	// workspace; "" before the field was kept): a redo in place takes back
	// the restore's own change, Recovery to Wrote, path by path.
	Wrote string
}

// State is the timeline materialized from its records.
type State struct {
	Checkpoints map[string]*Checkpoint
	Order       []string // checkpoint ids in creation order
	// Head is the newest finished turn on the active branch ("" = root).
	Head string
	// Redo is the redo slot, nil when empty.
	Redo *Redo
	// PendingRestore is a restore.started without head.moved or
	// restore.aborted: a restore was interrupted and must be resolved.
	PendingRestore *Record
	// OpenTurn is a checkpoint without turn.completed (running, or
	// interrupted by a crash).
	OpenTurn *Checkpoint
	// ReadOnly is set when a record of the committed prefix is damaged or
	// inconsistent; the state reflects the records before it.
	ReadOnly       bool
	ReadOnlyReason string
	Corrupt        *CorruptError
	// NextCheckpoint and NextRestore are the numbers for the next "cpN"
	// and "rN" ids (1 on an empty timeline).
	NextCheckpoint int
	NextRestore    int
	// Records is the number of records applied.
	Records int
	// KnownFiles is the tree yolop itself last left in the workspace: the
	// end snapshot of the latest turn, or the target of a later workspace
	// restore. It is chronological, not the active head's end: after a
	// conversation-only rewind the head's end is older than the files, and
	// after a workspace restore the files are the restored tree. "" when
	// it is unknown (a turn is running, or its end capture failed).
	KnownFiles string
	// trail is what Branches and Recoveries need, in journal order: each
	// checkpoint.created (id, parent, time), restore.started and
	// head.moved.
	trail []Record
	// A state decoded from resume.bin keeps the trail unbuilt until a
	// caller needs it (fullTrail): its checkpoint.created entries are the
	// checkpoints in order, and only the other records (moves) are kept,
	// each with the number of checkpoints created before it. Most opens
	// never ask.
	lazyTrail bool
	moves     []Record
	movesAt   []int
	// LastUsed is when the session was last used: the time of its latest
	// checkpoint.created, turn.completed or head.moved (a turn ran or a
	// restore was confirmed). Zero when it never was.
	LastUsed time.Time

	maxSeq int64
	// upper maps each active checkpoint id ("" for the root) to the
	// highest seq of the events it owns; see InActiveRange. Turn records
	// keep it up to date in O(1); only a head move (a restore) recomputes
	// it (stale), so appending a turn costs the same at any length.
	upper map[string]int64
	stale bool
}

// New returns the state of an empty timeline.
func New() *State {
	s := &State{Checkpoints: map[string]*Checkpoint{}, NextCheckpoint: 1, NextRestore: 1}
	s.refresh()
	return s
}

// Build materializes records. It is pure and never guesses: at the first
// record that is damaged or inconsistent with the ones before it, it
// stops, and the state of the valid prefix is marked read-only with a
// reason naming the record.
func Build(records []Record) *State {
	s := New()
	// The trail's size is known: growing a slice of Records was a third
	// of Build (session search builds every timeline it labels hits from).
	n := 0
	for i := range records {
		if t := records[i].Type; t == TypeCheckpointCreated || t == TypeHeadMoved {
			n++
		}
	}
	if n > 0 {
		s.trail = make([]Record, 0, n)
		s.Checkpoints = make(map[string]*Checkpoint, n)
	}
	for i, r := range records {
		if r.Type == typeCorrupt && r.corrupt != nil {
			s.MarkReadOnly(r.corrupt)
			break
		}
		if err := s.apply(r); err != nil {
			// Records come from the valid prefix of the file, one per
			// line, so the index is the line number; the offset is not
			// known here.
			s.MarkReadOnly(&CorruptError{File: FileName, Line: i + 1, Offset: -1, Reason: err.Error()})
			break
		}
	}
	// One index rebuild at the end keeps Build linear in the records
	// (refreshing per record would walk the chain each time).
	s.refresh()
	return s
}

// MarkReadOnly records why the timeline cannot be extended. The first
// reason wins.
func (s *State) MarkReadOnly(c *CorruptError) {
	if s.ReadOnly {
		return
	}
	s.ReadOnly = true
	s.Corrupt = c
	s.ReadOnlyReason = c.Error()
}

// Check reports whether r may follow the records applied so far, without
// changing the state.
func (s *State) Check(r Record) error {
	if s.ReadOnly {
		return fmt.Errorf("timeline is read-only: %s", s.ReadOnlyReason)
	}
	_, err := s.plan(r)
	return err
}

// Apply validates r against the state and applies it. On error the state
// is unchanged. A record of a turn costs O(1) whatever the length of the
// timeline; a head move recomputes the active-range index (O(branch)).
func (s *State) Apply(r Record) error {
	if err := s.apply(r); err != nil {
		return err
	}
	if s.stale {
		s.refresh()
	}
	return nil
}

// apply is Apply without rebuilding the active-range index.
func (s *State) apply(r Record) error {
	if s.ReadOnly {
		return fmt.Errorf("timeline is read-only: %s", s.ReadOnlyReason)
	}
	do, err := s.plan(r)
	if err != nil {
		return err
	}
	do()
	s.Records++
	switch r.Type {
	case TypeCheckpointCreated, TypeTurnCompleted, TypeHeadMoved:
		if r.Time.After(s.LastUsed) {
			s.LastUsed = r.Time
		}
	}
	switch {
	case s.lazyTrail && (r.Type == TypeHeadMoved || r.Type == TypeRestoreStarted):
		s.moves = append(s.moves, r)
		s.movesAt = append(s.movesAt, len(s.Order))
	case s.lazyTrail:
	case r.Type == TypeCheckpointCreated:
		s.trail = append(s.trail, Record{Type: r.Type, Time: r.Time, Checkpoint: r.Checkpoint, Parent: r.Parent})
	case r.Type == TypeHeadMoved || r.Type == TypeRestoreStarted:
		s.trail = append(s.trail, r)
	}
	return nil
}

// fullTrail returns the trail, building it first when the state was
// decoded without it.
func (s *State) fullTrail() []Record {
	if !s.lazyTrail {
		return s.trail
	}
	trail := make([]Record, 0, len(s.Order)+len(s.moves))
	next := 0
	for i, r := range s.moves {
		for ; next < s.movesAt[i]; next++ {
			trail = append(trail, createdTrail(s.Checkpoints[s.Order[next]]))
		}
		trail = append(trail, r)
	}
	for ; next < len(s.Order); next++ {
		trail = append(trail, createdTrail(s.Checkpoints[s.Order[next]]))
	}
	s.trail, s.lazyTrail, s.moves, s.movesAt = trail, false, nil, nil
	return s.trail
}

// idNumber parses prefix+N (N >= 1, canonical decimal).
func idNumber(prefix, id string) (int, bool) {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok || rest == "" || len(rest) > 9 {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 || strconv.Itoa(n) != rest {
		return 0, false
	}
	return n, true
}

func (s *State) known(id string) bool {
	_, ok := s.Checkpoints[id]
	return id == "" || ok
}

func checkSnapshot(what string, ref *SnapshotRef) error {
	if ref != nil && (ref.Tree == "" || ref.Ref == "") {
		return fmt.Errorf("%s snapshot needs both tree and ref", what)
	}
	return nil
}

func checkMode(m string) error {
	switch m {
	case ModeBoth, ModeConversation, ModeWorkspace:
		return nil
	}
	return fmt.Errorf("unknown restore mode %q", m)
}

// plan validates r and returns the mutation to apply. Every check happens
// before anything changes.
func (s *State) plan(r Record) (func(), error) {
	if r.Type == typeCorrupt {
		return nil, fmt.Errorf("%s", r.Reason)
	}
	if r.V != RecordVersion {
		return nil, fmt.Errorf("%s record has version %d; this yolop reads version %d (upgrade yolop)", r.Type, r.V, RecordVersion)
	}
	switch r.Type {
	case TypeCheckpointCreated:
		return s.planCreated(r)
	case TypeTurnCompleted:
		return s.planCompleted(r)
	case TypeRestoreStarted:
		return s.planRestoreStarted(r)
	case TypeHeadMoved:
		return s.planHeadMoved(r)
	case TypeRestoreAborted:
		switch {
		case s.PendingRestore == nil:
			return nil, fmt.Errorf("restore.aborted %q without a restore in progress", r.Restore)
		case r.Restore != s.PendingRestore.Restore:
			return nil, fmt.Errorf("restore.aborted %q does not match the restore in progress (%s)", r.Restore, s.PendingRestore.Restore)
		}
		return func() { s.PendingRestore = nil }, nil
	case TypeRedoCleared:
		return func() { s.Redo = nil }, nil
	default:
		return nil, fmt.Errorf("unknown record type %q", r.Type)
	}
}

func (s *State) planCreated(r Record) (func(), error) {
	n, ok := idNumber("cp", r.Checkpoint)
	switch {
	case !ok:
		return nil, fmt.Errorf("checkpoint id %q: want cp<N>", r.Checkpoint)
	case s.Checkpoints[r.Checkpoint] != nil:
		return nil, fmt.Errorf("checkpoint %s created twice", r.Checkpoint)
	case n < s.NextCheckpoint:
		return nil, fmt.Errorf("checkpoint %s created after cp%d: ids must grow", r.Checkpoint, s.NextCheckpoint-1)
	case s.OpenTurn != nil:
		return nil, fmt.Errorf("checkpoint %s created while turn %s is still open", r.Checkpoint, s.OpenTurn.ID)
	case s.PendingRestore != nil:
		return nil, fmt.Errorf("checkpoint %s created while restore %s is unresolved", r.Checkpoint, s.PendingRestore.Restore)
	case r.Parent != s.Head:
		return nil, fmt.Errorf("checkpoint %s has parent %q but the head is %q", r.Checkpoint, r.Parent, s.Head)
	case r.SeqBefore < s.maxSeq:
		return nil, fmt.Errorf("checkpoint %s starts at seq %d, before seq %d already recorded", r.Checkpoint, r.SeqBefore, s.maxSeq)
	case r.Snapshot != nil && r.CaptureError != "":
		return nil, fmt.Errorf("checkpoint %s has both a snapshot and a capture error", r.Checkpoint)
	}
	if err := checkSnapshot("checkpoint "+r.Checkpoint, r.Snapshot); err != nil {
		return nil, err
	}
	return func() {
		cp := &Checkpoint{
			ID: r.Checkpoint, Parent: r.Parent, Prompt: r.Prompt, PromptBytes: r.PromptBytes, Created: r.Time, Sandbox: r.Sandbox,
			SeqBefore: r.SeqBefore, Open: true, Snapshot: r.Snapshot, CaptureError: r.CaptureError, LeftOut: r.LeftOut,
		}
		s.Checkpoints[cp.ID] = cp
		s.Order = append(s.Order, cp.ID)
		s.OpenTurn = cp
		s.NextCheckpoint = n + 1
		s.maxSeq = r.SeqBefore
		// Starting a turn empties the redo slot (the branch stays).
		s.Redo = nil
		s.KnownFiles = ""
		// The open turn joins the active branch below the head: the head
		// now owns its events up to the turn's start (see refresh).
		s.upper[cp.Parent] = cp.SeqBefore
		s.upper[cp.ID] = math.MaxInt64
	}, nil
}

func (s *State) planCompleted(r Record) (func(), error) {
	switch {
	case s.OpenTurn == nil:
		return nil, fmt.Errorf("turn.completed for %q but no turn is open", r.Checkpoint)
	case r.Checkpoint != s.OpenTurn.ID:
		return nil, fmt.Errorf("turn.completed for %q but the open turn is %s", r.Checkpoint, s.OpenTurn.ID)
	case r.FinalSeq < s.OpenTurn.SeqBefore:
		return nil, fmt.Errorf("turn %s ends at seq %d, before its start (%d)", r.Checkpoint, r.FinalSeq, s.OpenTurn.SeqBefore)
	}
	switch r.Status {
	case StatusCompleted, StatusFailed, StatusCancelled, StatusInterrupted:
	default:
		return nil, fmt.Errorf("turn %s has unknown status %q", r.Checkpoint, r.Status)
	}
	if err := checkSnapshot("end of turn "+r.Checkpoint, r.End); err != nil {
		return nil, err
	}
	return func() {
		cp := s.OpenTurn
		cp.FinalSeq, cp.Status, cp.End, cp.Open, cp.EndError = r.FinalSeq, r.Status, r.End, false, r.EndError
		cp.FilesChanged = r.FilesChanged
		cp.Paths, cp.PathsMore = r.Paths, r.PathsMore
		s.OpenTurn = nil
		s.Head = cp.ID
		s.maxSeq = r.FinalSeq
		s.KnownFiles = ""
		if r.End != nil {
			s.KnownFiles = r.End.Tree
		}
		// The active branch is unchanged: the open turn was already on it.
	}, nil
}

// checkRestore holds the checks shared by restore.started and head.moved.
func (s *State) checkRestore(r Record) error {
	switch {
	case r.Restore == "":
		return fmt.Errorf("%s without a restore id", r.Type)
	case s.OpenTurn != nil:
		return fmt.Errorf("%s (%s) while turn %s is open", r.Type, r.Restore, s.OpenTurn.ID)
	case r.OldHead != s.Head:
		return fmt.Errorf("%s (%s) from head %q but the head is %q", r.Type, r.Restore, r.OldHead, s.Head)
	case !s.known(r.Target):
		return fmt.Errorf("%s (%s) targets unknown checkpoint %q", r.Type, r.Restore, r.Target)
	case !s.known(r.NewHead):
		return fmt.Errorf("%s (%s) moves the head to unknown checkpoint %q", r.Type, r.Restore, r.NewHead)
	case !s.known(r.AbandonedHead):
		return fmt.Errorf("%s (%s) abandons unknown checkpoint %q", r.Type, r.Restore, r.AbandonedHead)
	case r.Mode == ModeWorkspace && r.NewHead != r.OldHead:
		return fmt.Errorf("%s (%s) in workspace mode changes the head from %q to %q", r.Type, r.Restore, r.OldHead, r.NewHead)
	case r.Redo && s.Redo == nil:
		return fmt.Errorf("%s (%s) is a redo but the redo slot is empty", r.Type, r.Restore)
	}
	if err := checkMode(r.Mode); err != nil {
		return fmt.Errorf("%s (%s): %w", r.Type, r.Restore, err)
	}
	return checkSnapshot("recovery "+r.Restore, r.Recovery)
}

func (s *State) bumpRestore(id string) {
	if n, ok := idNumber("r", id); ok && n >= s.NextRestore {
		s.NextRestore = n + 1
	}
}

func (s *State) planRestoreStarted(r Record) (func(), error) {
	if s.PendingRestore != nil {
		return nil, fmt.Errorf("restore %s started while restore %s is unresolved", r.Restore, s.PendingRestore.Restore)
	}
	if err := s.checkRestore(r); err != nil {
		return nil, err
	}
	return func() {
		rec := r
		s.PendingRestore = &rec
		s.bumpRestore(r.Restore)
	}, nil
}

// planHeadMoved accepts a head.moved that completes the pending intent, or
// one without an intent (a restore that touches no files needs none).
func (s *State) planHeadMoved(r Record) (func(), error) {
	if p := s.PendingRestore; p != nil {
		if p.Restore != r.Restore {
			return nil, fmt.Errorf("head.moved for %s while restore %s is unresolved", r.Restore, p.Restore)
		}
		if p.NewHead != r.NewHead || p.Mode != r.Mode || p.Target != r.Target {
			return nil, fmt.Errorf("head.moved for %s does not match its restore.started (head %q mode %q target %q, intent head %q mode %q target %q)",
				r.Restore, r.NewHead, r.Mode, r.Target, p.NewHead, p.Mode, p.Target)
		}
	}
	if err := s.checkRestore(r); err != nil {
		return nil, err
	}
	return func() {
		s.Head = r.NewHead
		s.Redo = &Redo{Head: r.AbandonedHead, Recovery: r.Recovery, Mode: r.Mode, From: r.Restore}
		s.PendingRestore = nil
		if (r.Mode == ModeBoth || r.Mode == ModeWorkspace) && r.TargetTree != "" {
			s.Redo.Wrote = r.TargetTree
			if r.FilesTree != "" {
				s.Redo.Wrote = r.FilesTree
			}
			// A restore that moved the files and not the conversation
			// belongs to the head it left in place.
			if cp := s.Checkpoints[r.NewHead]; cp != nil && r.NewHead == r.AbandonedHead && r.Recovery != nil {
				cp.Restores = append(slices.Clip(cp.Restores), RestoreChange{From: r.Recovery.Tree, To: s.Redo.Wrote})
			}
		}
		s.bumpRestore(r.Restore)
		if (r.Mode == ModeBoth || r.Mode == ModeWorkspace) && r.TargetTree != "" {
			s.KnownFiles = r.TargetTree
			if r.FilesTree != "" {
				s.KnownFiles = r.FilesTree
			}
		}
		s.stale = true
	}, nil
}

// refresh recomputes the active-range index after a change.
func (s *State) refresh() {
	s.stale = false
	chain := s.ActiveChain()
	s.upper = make(map[string]int64, len(chain)+1)
	// Each active checkpoint owns its events up to the start of its active
	// child; the newest one (or the root of an empty chain) owns everything
	// after it, which covers events written between turns.
	prev := ""
	for _, cp := range chain {
		s.upper[prev] = cp.SeqBefore
		prev = cp.ID
	}
	s.upper[prev] = math.MaxInt64
}

// Chain returns the checkpoints from the root to head, oldest first; nil
// for the root or an unknown id.
func (s *State) Chain(head string) []*Checkpoint {
	var out []*Checkpoint
	for id := head; id != ""; {
		cp := s.Checkpoints[id]
		// Parents are always created before their children, so there is
		// no cycle; the length bound guards hand-built states.
		if cp == nil || len(out) > len(s.Checkpoints) {
			return nil
		}
		out = append(out, cp)
		id = cp.Parent
	}
	slices.Reverse(out)
	return out
}

// ActiveChain is the active branch, oldest first: the chain to Head, plus
// the open turn (whose parent is always Head) while one exists.
func (s *State) ActiveChain() []*Checkpoint {
	chain := s.Chain(s.Head)
	if s.OpenTurn != nil {
		chain = append(chain, s.OpenTurn)
	}
	return chain
}

// LastEndTree is the tree of the end capture of the newest turn that
// recorded one, on any branch ("" when none did): what the files were
// when yolop last left them after a turn.
func (s *State) LastEndTree() string {
	for i := len(s.Order) - 1; i >= 0; i-- {
		if cp := s.Checkpoints[s.Order[i]]; cp != nil && !cp.Open && cp.End != nil {
			return cp.End.Tree
		}
	}
	return ""
}

// ActiveLen is the number of checkpoints on the active branch (the open
// turn included), len(ActiveChain()) without walking it.
func (s *State) ActiveLen() int { return len(s.upper) - 1 }

// Active reports whether a checkpoint is on the active branch (the open
// turn included). The root ("") is always active.
func (s *State) Active(id string) bool {
	_, ok := s.upper[id]
	return ok
}

// InActiveRange reports whether an event tagged with turn and numbered seq
// belongs to the active branch, i.e. is replayed and sent to the model.
//
// An event belongs to checkpoint X when it is tagged X and seq lies in
// (X.SeqBefore, U], where U is the SeqBefore of X's child on the active
// branch, or unbounded when X is the newest active turn. That is X's own
// range (SeqBefore, FinalSeq] plus the events written between turns while
// X was the head (restore notices): they live and die with X, and a
// notice written at X before a later redo does not leak into the branch
// the redo brings back. Root events (turn "") follow the same rule with
// SeqBefore 0.
func (s *State) InActiveRange(turn string, seq int64) bool {
	up, ok := s.upper[turn]
	if !ok {
		return false
	}
	var lo int64
	if turn != "" {
		lo = s.Checkpoints[turn].SeqBefore
	}
	return seq > lo && seq <= up
}

// Clone returns a deep copy.
func (s *State) Clone() *State {
	c := *s
	c.trail = slices.Clone(s.trail)
	c.moves, c.movesAt = slices.Clone(s.moves), slices.Clone(s.movesAt)
	c.Checkpoints = make(map[string]*Checkpoint, len(s.Checkpoints))
	for id, cp := range s.Checkpoints {
		cc := *cp
		cc.Restores = slices.Clip(cc.Restores)
		c.Checkpoints[id] = &cc
	}
	c.Order = slices.Clone(s.Order)
	if s.Redo != nil {
		r := *s.Redo
		c.Redo = &r
	}
	if s.PendingRestore != nil {
		r := *s.PendingRestore
		c.PendingRestore = &r
	}
	if s.OpenTurn != nil {
		c.OpenTurn = c.Checkpoints[s.OpenTurn.ID]
	}
	if s.Corrupt != nil {
		ce := *s.Corrupt
		c.Corrupt = &ce
	}
	c.upper = maps.Clone(s.upper)
	return &c
}
