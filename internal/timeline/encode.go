package timeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/yolop-dev/yolop/internal/binenc"
	"github.com/yolop-dev/yolop/internal/fault"
)

// stateFormat is the version of the encoding below; DecodeState refuses
// any other.
const stateFormat = 4

// ErrStateFormat is wrapped by DecodeState's errors.
var ErrStateFormat = fault.Plain("timeline: encoded state unreadable")

// AppendState appends the encoding of s to b, for a derived file that lets
// the next process skip replaying the records s was built from. A
// read-only state is not encoded (its reason names lines of the file;
// such a timeline is always replayed): AppendState returns an error.
//
// The encoding is private to this package and versioned: checkpoints in
// creation order with every field, the head, the redo slot, a pending
// restore, the journal trail and the counters; the active-range index is
// rebuilt by DecodeState.
func AppendState(b []byte, s *State) ([]byte, error) {
	if s.ReadOnly {
		return b, errors.New("timeline: a read-only state is not encoded")
	}
	if s.stale {
		s.refresh()
	}
	w := encoder{binenc.Writer{B: b}}
	w.Uint(stateFormat)
	w.Uint(uint64(len(s.Order)))
	for _, id := range s.Order {
		cp := s.Checkpoints[id]
		if cp == nil {
			return b, fmt.Errorf("timeline: checkpoint %s in the order but not in the map", id)
		}
		w.Str(cp.ID)
		w.Str(cp.Parent)
		w.Str(cp.Prompt)
		w.Int(cp.PromptBytes)
		w.time(cp.Created)
		w.Int(cp.SeqBefore)
		w.Int(cp.FinalSeq)
		w.Str(cp.Status)
		w.Bool(cp.Open)
		w.ref(cp.Snapshot)
		w.Str(cp.CaptureError)
		w.ref(cp.End)
		w.Str(cp.EndError)
		w.Bool(cp.FilesChanged != nil)
		if cp.FilesChanged != nil {
			w.Int(int64(*cp.FilesChanged))
		}
		w.Str(cp.Sandbox)
		w.Bool(cp.Paths != nil)
		w.Uint(uint64(len(cp.Paths)))
		for _, p := range cp.Paths {
			w.Str(p)
		}
		w.Int(int64(cp.PathsMore))
		w.Uint(uint64(len(cp.LeftOut)))
		for _, p := range cp.LeftOut {
			w.Str(p)
		}
		w.Uint(uint64(len(cp.Restores)))
		for _, rc := range cp.Restores {
			w.Str(rc.From)
			w.Str(rc.To)
		}
	}
	w.Str(s.Head)
	w.Bool(s.Redo != nil)
	if s.Redo != nil {
		w.Str(s.Redo.Head)
		w.ref(s.Redo.Recovery)
		w.Str(s.Redo.Mode)
		w.Str(s.Redo.From)
		w.Str(s.Redo.Wrote)
	}
	if err := w.record(s.PendingRestore); err != nil {
		return b, err
	}
	open := ""
	if s.OpenTurn != nil {
		open = s.OpenTurn.ID
	}
	w.Str(open)
	w.Int(int64(s.NextCheckpoint))
	w.Int(int64(s.NextRestore))
	w.Int(int64(s.Records))
	w.Str(s.KnownFiles)
	w.time(s.LastUsed)
	w.Int(s.maxSeq)
	// The trail: checkpoint.created entries are the checkpoints in order;
	// head.moved records are kept whole with the number of checkpoints
	// created before each.
	created := 0
	var moves []Record
	var at []int
	if s.lazyTrail {
		created, moves, at = len(s.Order), s.moves, s.movesAt
	}
	for _, r := range s.trail {
		switch r.Type {
		case TypeCheckpointCreated:
			created++
		default:
			moves = append(moves, r)
			at = append(at, created)
		}
	}
	if created != len(s.Order) {
		return b, fmt.Errorf("timeline: trail has %d checkpoints, the state %d", created, len(s.Order))
	}
	w.Uint(uint64(len(moves)))
	for i := range moves {
		w.Uint(uint64(at[i]))
		if err := w.record(&moves[i]); err != nil {
			return b, err
		}
	}
	return w.B, nil
}

// DecodeState decodes what AppendState encoded. Whatever it returns
// without an error can be extended with Apply exactly like the state it
// was encoded from.
func DecodeState(data []byte) (s *State, err error) {
	r := decoder{binenc.Reader{S: string(data)}}
	defer func() {
		if r.Err != nil {
			s, err = nil, fmt.Errorf("%w: %v", ErrStateFormat, r.Err)
		}
	}()
	if v := r.Uint(); v != stateFormat {
		return nil, fmt.Errorf("%w: format %d, want %d", ErrStateFormat, v, stateFormat)
	}
	s = New()
	n := r.Count()
	s.Order = make([]string, 0, n)
	s.Checkpoints = make(map[string]*Checkpoint, n)
	// One allocation each for the checkpoints, their snapshot refs, counts
	// and paths, rather than a few per checkpoint: a long session's state
	// is decoded at every open.
	cps := make([]Checkpoint, n)
	refs := make([]SnapshotRef, 0, 2*n)
	counts := make([]int, 0, n)
	var paths []string
	ref := func() *SnapshotRef {
		if !r.Bool() {
			return nil
		}
		if len(refs) == cap(refs) {
			refs = make([]SnapshotRef, 0, max(n, 1))
		}
		refs = append(refs, SnapshotRef{Tree: r.Str(), Ref: r.Str()})
		return &refs[len(refs)-1]
	}
	for i := 0; i < n && r.Err == nil; i++ {
		cp := &cps[i]
		cp.ID = r.Str()
		cp.Parent = r.Str()
		cp.Prompt = r.Str()
		cp.PromptBytes = r.Int()
		cp.Created = r.time()
		cp.SeqBefore = r.Int()
		cp.FinalSeq = r.Int()
		cp.Status = r.Str()
		cp.Open = r.Bool()
		cp.Snapshot = ref()
		cp.CaptureError = r.Str()
		cp.End = ref()
		cp.EndError = r.Str()
		if r.Bool() {
			counts = append(counts, int(r.Int()))
			cp.FilesChanged = &counts[len(counts)-1]
		}
		cp.Sandbox = r.Str()
		hasPaths := r.Bool()
		np := r.Count()
		if hasPaths && (paths == nil || cap(paths)-len(paths) < np) {
			paths = make([]string, 0, max(np, n))
		}
		start := len(paths)
		for j := 0; j < np && r.Err == nil; j++ {
			p := r.Str()
			if hasPaths {
				paths = append(paths, p)
			}
		}
		if hasPaths {
			// Capped: an append to one checkpoint's paths never writes
			// into the next one's.
			cp.Paths = paths[start:len(paths):len(paths)]
		}
		cp.PathsMore = int(r.Int())
		if nl := r.Count(); nl > 0 {
			cp.LeftOut = make([]string, 0, nl)
			for j := 0; j < nl && r.Err == nil; j++ {
				cp.LeftOut = append(cp.LeftOut, r.Str())
			}
		}
		if nr := r.Count(); nr > 0 {
			cp.Restores = make([]RestoreChange, 0, nr)
			for j := 0; j < nr && r.Err == nil; j++ {
				cp.Restores = append(cp.Restores, RestoreChange{From: r.Str(), To: r.Str()})
			}
		}
		if _, dup := s.Checkpoints[cp.ID]; dup && r.Err == nil {
			r.Fail(fmt.Errorf("checkpoint %s twice", cp.ID))
		}
		s.Checkpoints[cp.ID] = cp
		s.Order = append(s.Order, cp.ID)
	}
	s.Head = r.Str()
	if r.Bool() {
		s.Redo = &Redo{Head: r.Str(), Recovery: r.ref(), Mode: r.Str(), From: r.Str(), Wrote: r.Str()}
	}
	s.PendingRestore = r.record()
	if open := r.Str(); open != "" {
		s.OpenTurn = s.Checkpoints[open]
		if s.OpenTurn == nil {
			r.Fail(fmt.Errorf("open turn %s unknown", open))
		}
	}
	s.NextCheckpoint = int(r.Int())
	s.NextRestore = int(r.Int())
	s.Records = int(r.Int())
	s.KnownFiles = r.Str()
	s.LastUsed = r.time()
	s.maxSeq = r.Int()
	// The trail is built when first needed (State.fullTrail).
	moves := r.Count()
	next := 0
	for i := 0; i < moves && r.Err == nil; i++ {
		at := r.Count()
		rec := r.record()
		if at < next || at > len(s.Order) || rec == nil {
			r.Fail(errors.New("trail out of order"))
			break
		}
		next = at
		s.moves = append(s.moves, *rec)
		s.movesAt = append(s.movesAt, at)
	}
	s.lazyTrail = true
	if r.Err == nil && r.S != "" {
		r.Fail(fmt.Errorf("%d bytes after the end", len(r.S)))
	}
	for _, cp := range s.Checkpoints {
		if cp.Parent != "" && s.Checkpoints[cp.Parent] == nil && r.Err == nil {
			r.Fail(fmt.Errorf("checkpoint %s has unknown parent %s", cp.ID, cp.Parent))
		}
	}
	if s.Head != "" && s.Checkpoints[s.Head] == nil && r.Err == nil {
		r.Fail(fmt.Errorf("unknown head %s", s.Head))
	}
	if r.Err != nil {
		return nil, r.Err
	}
	if n == 0 && len(s.moves) == 0 {
		// As New and Build leave them.
		s.Order, s.trail, s.moves, s.movesAt, s.lazyTrail = nil, nil, nil, nil, false
	}
	s.refresh()
	return s, nil
}

func createdTrail(cp *Checkpoint) Record {
	return Record{Type: TypeCheckpointCreated, Time: cp.Created, Checkpoint: cp.ID, Parent: cp.Parent}
}

// encoder is the shared codec's writer with the timeline's own values.
type encoder struct{ binenc.Writer }

// time keeps the instant (UTC, nanoseconds); the zero time is its own
// value.
func (w *encoder) time(t time.Time) {
	w.Bool(!t.IsZero())
	if !t.IsZero() {
		w.Int(t.Unix())
		w.Int(int64(t.Nanosecond()))
	}
}

func (w *encoder) ref(r *SnapshotRef) {
	w.Bool(r != nil)
	if r != nil {
		w.Str(r.Tree)
		w.Str(r.Ref)
	}
}

// record encodes a rare whole record (a pending restore, a head move) as
// JSON.
func (w *encoder) record(r *Record) error {
	if r == nil {
		w.Str("")
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("timeline: encode %s record: %w", r.Type, err)
	}
	w.Str(string(b))
	return nil
}

// decoder is the shared codec's reader with the timeline's own values.
type decoder struct{ binenc.Reader }

func (r *decoder) time() time.Time {
	if !r.Bool() {
		return time.Time{}
	}
	sec, ns := r.Int(), r.Int()
	if ns < 0 || ns >= 1e9 {
		r.Fail(errors.New("bad time"))
		return time.Time{}
	}
	return time.Unix(sec, ns).UTC()
}

func (r *decoder) ref() *SnapshotRef {
	if !r.Bool() {
		return nil
	}
	return &SnapshotRef{Tree: r.Str(), Ref: r.Str()}
}

func (r *decoder) record() *Record {
	b := r.Str()
	if b == "" || r.Err != nil {
		return nil
	}
	var rec Record
	if err := json.Unmarshal([]byte(b), &rec); err != nil {
		r.Fail(err)
		return nil
	}
	return &rec
}
