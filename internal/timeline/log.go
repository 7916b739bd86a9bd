package timeline

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/session/jsonl"
)

// FileName is the timeline's file name inside a session directory.
const FileName = "timeline.jsonl"

// Repair says what opening a log found and did.
type Repair struct {
	File string
	// Dropped is the length of a torn tail that was removed; KeptAt is
	// where its bytes were saved. Zero/empty when there was none.
	Dropped int64
	KeptAt  string
	Reason  string
	// Corrupt is mid-file corruption (a bad line followed by a good one):
	// nothing was repaired, the records are the valid prefix, and the log
	// refuses appends.
	Corrupt *CorruptError
}

// Notes renders the repair for the user; empty when the file was intact.
// Corruption is not a repair: see Damage.
func (r Repair) Notes() []string {
	var out []string
	if r.Dropped > 0 {
		out = append(out, fmt.Sprintf("%s: dropped a torn final record (%d bytes; %s); the bytes are kept in %s",
			filepath.Base(r.File), r.Dropped, r.Reason, filepath.Base(r.KeptAt)))
	}
	return out
}

// Damage describes mid-file corruption, which is not repaired (the
// session becomes read-only); "" when there is none.
func (r Repair) Damage() string {
	if r.Corrupt == nil {
		return ""
	}
	return "the timeline is damaged at " + r.Corrupt.Error()
}

// Parsed is the classification of timeline bytes.
type Parsed struct {
	Records    []Record // the valid prefix
	Valid      int64    // its length in bytes
	Tail       int64    // torn tail length (0 when Corrupt is set)
	TailReason string
	Corrupt    *CorruptError // a malformed line followed by a well-formed one
}

// Parse splits timeline bytes into records. It only checks that lines are
// JSON objects; Build checks that they make sense together.
func Parse(data []byte) Parsed {
	scan := jsonl.Parse(FileName, data, ParseRecord)
	p := Parsed{Valid: scan.Valid, Tail: scan.Tail, TailReason: scan.TailReason, Corrupt: scan.Corrupt}
	p.Records = make([]Record, len(scan.Records))
	for i, r := range scan.Records {
		p.Records[i] = r.Val
	}
	return p
}

// withMarker returns the records to hand out: the valid prefix, plus a
// marker that makes Build read-only when the prefix is damaged.
func (p Parsed) withMarker() []Record {
	recs := p.Records
	if p.Corrupt != nil {
		recs = append(recs, corruptMarker(p.Corrupt))
	}
	return recs
}

// Materialize is Parse then Build (for tests, tools and fuzzing). A torn
// tail is ignored; a damaged prefix makes the state read-only.
func Materialize(data []byte) *State {
	return Build(Parse(data).withMarker())
}

// ReadRecords reads the timeline at path without locking, repairing or
// writing (for listings and read-only views). A missing file has no
// records; a torn tail is ignored; a damaged committed prefix ends the
// slice with a marker that makes Build read-only.
func ReadRecords(path string) ([]Record, error) {
	data, err := jsonl.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return Parse(data).withMarker(), nil
}

// Log is an open timeline.jsonl and the one materialized state of the
// session's timeline: Append applies each record to it in place (O(1) for
// a turn's records, see State.Apply), so that a record that does not fit is
// refused before it is written and no reader rebuilds the state. Its
// methods are safe for concurrent use; the session lock keeps other
// processes out.
type Log struct {
	mu    sync.Mutex // guards f and state
	f     *jsonl.File
	state *State
}

// OpenLog opens (creating, 0600) the timeline at path without following a
// symlink, repairs a torn tail (kept aside in <path>.corrupt-<time>), and
// returns the records of the valid prefix. When the committed prefix is
// damaged, nothing is repaired, rep.Corrupt says where, the records end
// with a marker that makes Build read-only, and Append is refused. The
// caller must hold the session lock.
func OpenLog(path string) (*Log, []Record, Repair, error) {
	l, p, rep, err := openLog(path)
	if err != nil {
		return nil, nil, rep, err
	}
	return l, p.withMarker(), rep, nil
}

// Load is OpenLog returning the materialized state instead of the records.
func Load(path string) (*Log, *State, Repair, error) {
	l, _, rep, err := openLog(path)
	if err != nil {
		return nil, nil, rep, err
	}
	return l, l.State(), rep, nil
}

func openLog(path string) (*Log, Parsed, Repair, error) {
	rep := Repair{File: path}
	f, data, err := jsonl.OpenFile(path, true)
	if err != nil {
		return nil, Parsed{}, rep, fmt.Errorf("open timeline: %w", err)
	}
	p := Parse(data)
	rep.Corrupt = p.Corrupt
	// Parse never reports a tail together with corruption: a damaged
	// prefix is left exactly as it is.
	if p.Tail > 0 {
		kept, err := f.TruncateTail(data, p.Valid)
		if err != nil {
			f.Close()
			return nil, Parsed{}, rep, fmt.Errorf("repair timeline: %w", err)
		}
		rep.Dropped, rep.KeptAt, rep.Reason = p.Tail, kept, p.TailReason
	}
	return &Log{f: f, state: Build(p.withMarker())}, p, rep, nil
}

// Append validates r against the timeline, writes it as one line and
// fsyncs before returning. V and Time are filled in when zero. A record
// that does not fit (see State.Check) or a read-only timeline is refused
// and nothing is written.
func (l *Log) Append(r Record) error {
	if r.V == 0 {
		r.V = RecordVersion
	}
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.state.Check(r); err != nil {
		return fmt.Errorf("append %s to timeline: %w", r.Type, err)
	}
	if err := l.f.Append(r); err != nil {
		return err
	}
	if err := l.state.Apply(r); err != nil {
		// Check passed, so this cannot happen; fail loudly rather than
		// diverge from the file.
		return fmt.Errorf("timeline state diverged from file after appending %s: %w", r.Type, err)
	}
	return nil
}

// Live returns the log's own state, which Append changes in place. It is
// for the log's single writer (the checkpoint controller), which reads it
// only while no Append of its own is in progress; it must not be changed.
// Everyone else uses State.
func (l *Log) Live() *State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state
}

// State returns a copy of the materialized timeline.
func (l *Log) State() *State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state.Clone()
}

// Close closes the file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

// ErrFrozen is returned by Frozen.Append.
var ErrFrozen = fault.Plain("timeline: opened for reading")

// Frozen is the state of records read without the journal (listings,
// read-only views) behind the journal's interface: Live returns it and
// Append refuses.
type Frozen struct{ state *State }

// Freeze builds the state of records (see Build) once.
func Freeze(records []Record) *Frozen { return &Frozen{state: Build(records)} }

// Live returns the state.
func (f *Frozen) Live() *State { return f.state }

// Append refuses: the records were not opened for writing.
func (f *Frozen) Append(r Record) error {
	return fmt.Errorf("append %s: %w", r.Type, ErrFrozen)
}

// OpenLogAt is OpenLog for a caller that kept the state of a prefix of the
// timeline (DecodeState of what AppendState encoded) and the file's mark
// at its end: when the file still starts with that prefix, only the
// records after it are read, repaired (a torn tail) and applied to st, in
// place. Otherwise (resumed false) st is left alone and the whole file is
// replayed, exactly like Load. Line numbers in errors are the file's.
func OpenLogAt(path string, st *State, m jsonl.Mark) (_ *Log, _ Repair, resumed bool, _ error) {
	if st == nil || st.ReadOnly || m.Offset <= 0 {
		l, _, rep, err := openLog(path)
		return l, rep, false, err
	}
	rep := Repair{File: path}
	f, data, ok, err := jsonl.OpenFileAt(path, m)
	if err != nil {
		return nil, rep, false, fmt.Errorf("open timeline: %w", err)
	}
	base, baseLines := int64(0), 0
	if ok {
		base, baseLines = m.Offset, st.Records
	}
	p := Parse(data)
	if p.Corrupt != nil {
		c := *p.Corrupt
		c.Line += baseLines
		c.Offset += base
		p.Corrupt = &c
		rep.Corrupt = p.Corrupt
	}
	if p.Tail > 0 {
		kept, err := f.TruncateTailAt(data, base, p.Valid)
		if err != nil {
			f.Close()
			return nil, rep, false, fmt.Errorf("repair timeline: %w", err)
		}
		rep.Dropped, rep.KeptAt, rep.Reason = p.Tail, kept, p.TailReason
	}
	if !ok {
		return &Log{f: f, state: Build(p.withMarker())}, rep, false, nil
	}
	for i, r := range p.Records {
		if err := st.apply(r); err != nil {
			st.MarkReadOnly(&CorruptError{File: FileName, Line: baseLines + i + 1, Offset: -1, Reason: err.Error()})
			break
		}
	}
	if p.Corrupt != nil {
		st.MarkReadOnly(p.Corrupt)
	}
	st.refresh()
	return &Log{f: f, state: st}, rep, true, nil
}

// Mark returns the journal's mark (see jsonl.Mark) with its state as it is
// now: what a derived file records so the next OpenLogAt reads only what
// is appended after. The caller must not append meanwhile.
func (l *Log) Mark() (jsonl.Mark, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Mark()
}
