package timeline

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// stateFormat is the version of the encoding below; DecodeState refuses
// any other.
const stateFormat = 3

// ErrStateFormat is wrapped by DecodeState's errors.
var ErrStateFormat = errors.New("timeline: encoded state unreadable")

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
	w := encoder{b: b}
	w.uint(stateFormat)
	w.uint(uint64(len(s.Order)))
	for _, id := range s.Order {
		cp := s.Checkpoints[id]
		if cp == nil {
			return b, fmt.Errorf("timeline: checkpoint %s in the order but not in the map", id)
		}
		w.str(cp.ID)
		w.str(cp.Parent)
		w.str(cp.Prompt)
		w.int(cp.PromptBytes)
		w.time(cp.Created)
		w.int(cp.SeqBefore)
		w.int(cp.FinalSeq)
		w.str(cp.Status)
		w.bool(cp.Open)
		w.ref(cp.Snapshot)
		w.str(cp.CaptureError)
		w.ref(cp.End)
		w.str(cp.EndError)
		w.bool(cp.FilesChanged != nil)
		if cp.FilesChanged != nil {
			w.int(int64(*cp.FilesChanged))
		}
		w.str(cp.Sandbox)
		w.bool(cp.Paths != nil)
		w.uint(uint64(len(cp.Paths)))
		for _, p := range cp.Paths {
			w.str(p)
		}
		w.int(int64(cp.PathsMore))
		w.uint(uint64(len(cp.Restores)))
		for _, rc := range cp.Restores {
			w.str(rc.From)
			w.str(rc.To)
		}
	}
	w.str(s.Head)
	w.bool(s.Redo != nil)
	if s.Redo != nil {
		w.str(s.Redo.Head)
		w.ref(s.Redo.Recovery)
		w.str(s.Redo.Mode)
		w.str(s.Redo.From)
		w.str(s.Redo.Wrote)
	}
	if err := w.record(s.PendingRestore); err != nil {
		return b, err
	}
	open := ""
	if s.OpenTurn != nil {
		open = s.OpenTurn.ID
	}
	w.str(open)
	w.int(int64(s.NextCheckpoint))
	w.int(int64(s.NextRestore))
	w.int(int64(s.Records))
	w.str(s.KnownFiles)
	w.time(s.LastUsed)
	w.int(s.maxSeq)
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
	w.uint(uint64(len(moves)))
	for i := range moves {
		w.uint(uint64(at[i]))
		if err := w.record(&moves[i]); err != nil {
			return b, err
		}
	}
	return w.b, nil
}

// DecodeState decodes what AppendState encoded. Whatever it returns
// without an error can be extended with Apply exactly like the state it
// was encoded from.
func DecodeState(data []byte) (s *State, err error) {
	r := decoder{s: string(data)}
	defer func() {
		if r.err != nil {
			s, err = nil, fmt.Errorf("%w: %v", ErrStateFormat, r.err)
		}
	}()
	if v := r.uint(); v != stateFormat {
		return nil, fmt.Errorf("%w: format %d, want %d", ErrStateFormat, v, stateFormat)
	}
	s = New()
	n := r.count()
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
		if !r.bool() {
			return nil
		}
		if len(refs) == cap(refs) {
			refs = make([]SnapshotRef, 0, max(n, 1))
		}
		refs = append(refs, SnapshotRef{Tree: r.str(), Ref: r.str()})
		return &refs[len(refs)-1]
	}
	for i := 0; i < n && r.err == nil; i++ {
		cp := &cps[i]
		cp.ID = r.str()
		cp.Parent = r.str()
		cp.Prompt = r.str()
		cp.PromptBytes = r.int()
		cp.Created = r.time()
		cp.SeqBefore = r.int()
		cp.FinalSeq = r.int()
		cp.Status = r.str()
		cp.Open = r.bool()
		cp.Snapshot = ref()
		cp.CaptureError = r.str()
		cp.End = ref()
		cp.EndError = r.str()
		if r.bool() {
			counts = append(counts, int(r.int()))
			cp.FilesChanged = &counts[len(counts)-1]
		}
		cp.Sandbox = r.str()
		hasPaths := r.bool()
		np := r.count()
		if hasPaths && (paths == nil || cap(paths)-len(paths) < np) {
			paths = make([]string, 0, max(np, n))
		}
		start := len(paths)
		for j := 0; j < np && r.err == nil; j++ {
			p := r.str()
			if hasPaths {
				paths = append(paths, p)
			}
		}
		if hasPaths {
			// Capped: an append to one checkpoint's paths never writes
			// into the next one's.
			cp.Paths = paths[start:len(paths):len(paths)]
		}
		cp.PathsMore = int(r.int())
		if nr := r.count(); nr > 0 {
			cp.Restores = make([]RestoreChange, 0, nr)
			for j := 0; j < nr && r.err == nil; j++ {
				cp.Restores = append(cp.Restores, RestoreChange{From: r.str(), To: r.str()})
			}
		}
		if _, dup := s.Checkpoints[cp.ID]; dup && r.err == nil {
			r.fail(fmt.Errorf("checkpoint %s twice", cp.ID))
		}
		s.Checkpoints[cp.ID] = cp
		s.Order = append(s.Order, cp.ID)
	}
	s.Head = r.str()
	if r.bool() {
		s.Redo = &Redo{Head: r.str(), Recovery: r.ref(), Mode: r.str(), From: r.str(), Wrote: r.str()}
	}
	s.PendingRestore = r.record()
	if open := r.str(); open != "" {
		s.OpenTurn = s.Checkpoints[open]
		if s.OpenTurn == nil {
			r.fail(fmt.Errorf("open turn %s unknown", open))
		}
	}
	s.NextCheckpoint = int(r.int())
	s.NextRestore = int(r.int())
	s.Records = int(r.int())
	s.KnownFiles = r.str()
	s.LastUsed = r.time()
	s.maxSeq = r.int()
	// The trail is built when first needed (State.fullTrail).
	moves := r.count()
	next := 0
	for i := 0; i < moves && r.err == nil; i++ {
		at := r.count()
		rec := r.record()
		if at < next || at > len(s.Order) || rec == nil {
			r.fail(errors.New("trail out of order"))
			break
		}
		next = at
		s.moves = append(s.moves, *rec)
		s.movesAt = append(s.movesAt, at)
	}
	s.lazyTrail = true
	if r.err == nil && r.s != "" {
		r.fail(fmt.Errorf("%d bytes after the end", len(r.s)))
	}
	for _, cp := range s.Checkpoints {
		if cp.Parent != "" && s.Checkpoints[cp.Parent] == nil && r.err == nil {
			r.fail(fmt.Errorf("checkpoint %s has unknown parent %s", cp.ID, cp.Parent))
		}
	}
	if s.Head != "" && s.Checkpoints[s.Head] == nil && r.err == nil {
		r.fail(fmt.Errorf("unknown head %s", s.Head))
	}
	if r.err != nil {
		return nil, r.err
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

type encoder struct{ b []byte }

func (w *encoder) uint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *encoder) int(v int64)   { w.b = binary.AppendVarint(w.b, v) }
func (w *encoder) str(s string) {
	w.uint(uint64(len(s)))
	w.b = append(w.b, s...)
}
func (w *encoder) bool(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

// time keeps the instant (UTC, nanoseconds); the zero time is its own
// value.
func (w *encoder) time(t time.Time) {
	w.bool(!t.IsZero())
	if !t.IsZero() {
		w.int(t.Unix())
		w.int(int64(t.Nanosecond()))
	}
}

func (w *encoder) ref(r *SnapshotRef) {
	w.bool(r != nil)
	if r != nil {
		w.str(r.Tree)
		w.str(r.Ref)
	}
}

// record encodes a rare whole record (a pending restore, a head move) as
// JSON.
func (w *encoder) record(r *Record) error {
	if r == nil {
		w.str("")
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("timeline: encode %s record: %w", r.Type, err)
	}
	w.str(string(b))
	return nil
}

// decoder reads from s; strings are substrings of it (no copy). The first
// error sticks and every later read returns zero values.
type decoder struct {
	s   string
	err error
}

func (r *decoder) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.s = ""
}

func (r *decoder) uint() uint64 {
	if r.err != nil {
		return 0
	}
	var v uint64
	var shift uint
	for i := 0; i < len(r.s) && i < binary.MaxVarintLen64; i++ {
		c := r.s[i]
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			r.s = r.s[i+1:]
			return v
		}
		shift += 7
	}
	r.fail(errors.New("bad number"))
	return 0
}

func (r *decoder) int() int64 {
	u := r.uint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

// count is a length, bounded by the bytes left (every counted item takes
// at least one byte).
func (r *decoder) count() int {
	n := r.uint()
	if n > uint64(len(r.s)) || n > math.MaxInt32 {
		r.fail(fmt.Errorf("count %d beyond the data", n))
		return 0
	}
	return int(n)
}

func (r *decoder) str() string {
	n := r.uint()
	if n > uint64(len(r.s)) {
		r.fail(fmt.Errorf("string of %d bytes beyond the data", n))
		return ""
	}
	v := r.s[:n]
	r.s = r.s[n:]
	return v
}

func (r *decoder) bool() bool {
	if r.err != nil {
		return false
	}
	if len(r.s) == 0 || r.s[0] > 1 {
		r.fail(errors.New("bad flag"))
		return false
	}
	v := r.s[0] == 1
	r.s = r.s[1:]
	return v
}

func (r *decoder) time() time.Time {
	if !r.bool() {
		return time.Time{}
	}
	sec, ns := r.int(), r.int()
	if ns < 0 || ns >= 1e9 {
		r.fail(errors.New("bad time"))
		return time.Time{}
	}
	return time.Unix(sec, ns).UTC()
}

func (r *decoder) ref() *SnapshotRef {
	if !r.bool() {
		return nil
	}
	return &SnapshotRef{Tree: r.str(), Ref: r.str()}
}

func (r *decoder) record() *Record {
	b := r.str()
	if b == "" || r.err != nil {
		return nil
	}
	var rec Record
	if err := json.Unmarshal([]byte(b), &rec); err != nil {
		r.fail(err)
		return nil
	}
	return &rec
}
