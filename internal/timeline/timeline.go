package timeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/yolop-dev/yolop/internal/session/jsonl"
)

// Record types.
const (
	TypeCheckpointCreated = "checkpoint.created"
	TypeTurnCompleted     = "turn.completed"
	TypeHeadMoved         = "head.moved"
	TypeRedoCleared       = "redo.cleared"
	TypeRestoreStarted    = "restore.started"
	TypeRestoreAborted    = "restore.aborted"
)

// SnapshotRef names a workspace snapshot: its tree and the ref anchoring it.
type SnapshotRef struct {
	Tree string `json:"tree"`
	Ref  string `json:"ref"`
}

// Record is one line of timeline.jsonl. Which fields are set depends on Type.
type Record struct {
	V    int       `json:"v"`
	Type string    `json:"type"`
	Time time.Time `json:"ts"`

	// checkpoint.created
	Checkpoint   string       `json:"checkpoint,omitempty"`
	Parent       string       `json:"parent,omitempty"`
	SeqBefore    int64        `json:"seq_before,omitempty"`
	Prompt       string       `json:"prompt,omitempty"`
	Snapshot     *SnapshotRef `json:"snapshot,omitempty"`
	CaptureError string       `json:"capture_error,omitempty"`

	// turn.completed
	FinalSeq int64        `json:"final_seq,omitempty"`
	Status   string       `json:"status,omitempty"`
	End      *SnapshotRef `json:"end,omitempty"`

	// restore.started, head.moved, restore.aborted
	Restore       string       `json:"restore,omitempty"`
	Target        string       `json:"target,omitempty"`
	Mode          string       `json:"mode,omitempty"`
	OldHead       string       `json:"old_head,omitempty"`
	NewHead       string       `json:"new_head,omitempty"`
	AbandonedHead string       `json:"abandoned_head,omitempty"`
	Recovery      *SnapshotRef `json:"recovery,omitempty"`
	TargetTree    string       `json:"target_tree,omitempty"`
	Redo          bool         `json:"redo,omitempty"`

	// redo.cleared, restore.aborted
	Reason string `json:"reason,omitempty"`
}

var knownTypes = map[string]bool{
	TypeCheckpointCreated: true, TypeTurnCompleted: true, TypeHeadMoved: true,
	TypeRedoCleared: true, TypeRestoreStarted: true, TypeRestoreAborted: true,
}

// ParseRecord decodes one line. Unknown types and missing required fields
// are errors, so a damaged line is never half-trusted.
func ParseRecord(line []byte) (Record, error) {
	var r Record
	if !jsonl.IsObject(line) {
		return r, errors.New("not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&r); err != nil {
		return r, err
	}
	if !knownTypes[r.Type] {
		return r, fmt.Errorf("unknown record type %q", r.Type)
	}
	if r.V != 1 {
		return r, fmt.Errorf("unsupported record version %d", r.V)
	}
	switch r.Type {
	case TypeCheckpointCreated, TypeTurnCompleted:
		if r.Checkpoint == "" {
			return r, fmt.Errorf("%s without checkpoint", r.Type)
		}
	case TypeHeadMoved, TypeRestoreStarted, TypeRestoreAborted:
		if r.Restore == "" {
			return r, fmt.Errorf("%s without restore id", r.Type)
		}
	}
	return r, nil
}

// Repair describes what opening a journal repaired.
type Repair struct {
	File       string
	KeptAside  string // where a torn tail was kept, "" when none
	TailBytes  int64
	TailReason string
	Corrupt    *jsonl.CorruptError // mid-file corruption (not repaired)
}

// Notes returns human notes about the repair.
func (r Repair) Notes() []string {
	var out []string
	if r.KeptAside != "" {
		out = append(out, fmt.Sprintf("%s ended in an incomplete record (%s); %d bytes were kept aside in %s and the journal ends at its last complete record", r.File, r.TailReason, r.TailBytes, r.KeptAside))
	}
	if r.Corrupt != nil {
		out = append(out, fmt.Sprintf("%s is damaged: %v", r.File, r.Corrupt))
	}
	return out
}

// Log is an open timeline journal.
type Log struct {
	f       *jsonl.File
	corrupt *jsonl.CorruptError
}

// OpenLog opens (creating) the journal, repairs a torn tail and returns the
// valid records. Mid-file corruption is reported in Repair.Corrupt; the
// returned records are then the valid prefix, and Build on a log opened
// this way is read-only (see ReadOnlyRecords).
func OpenLog(path string) (*Log, []Record, Repair, error) {
	f, data, err := jsonl.OpenFile(path, true)
	if err != nil {
		return nil, nil, Repair{}, err
	}
	rep := Repair{File: path}
	scan := jsonl.Parse(path, data, ParseRecord)
	recs := make([]Record, 0, len(scan.Records))
	for _, r := range scan.Records {
		recs = append(recs, r.Val)
	}
	if scan.Corrupt != nil {
		rep.Corrupt = scan.Corrupt
		return &Log{f: f, corrupt: scan.Corrupt}, append(recs, corruptMarker(scan.Corrupt)), rep, nil
	}
	if scan.Tail > 0 {
		aside, err := f.TruncateTail(data, scan.Valid)
		if err != nil {
			f.Close()
			return nil, nil, rep, fmt.Errorf("repair %s: %w", path, err)
		}
		rep.KeptAside, rep.TailBytes, rep.TailReason = aside, scan.Tail, scan.TailReason
	}
	return &Log{f: f}, recs, rep, nil
}

// corruptMarker is a synthetic record that makes Build read-only: a
// damaged committed prefix must never be silently skipped.
func corruptMarker(c *jsonl.CorruptError) Record {
	return Record{V: 1, Type: typeCorrupt, Reason: c.Error()}
}

const typeCorrupt = "corrupt"

// ReadRecords reads the journal without writing or repairing it (for
// listings). A torn tail is ignored; mid-file corruption yields a marker
// that makes Build read-only.
func ReadRecords(path string) ([]Record, error) {
	data, err := jsonl.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	scan := jsonl.Parse(path, data, ParseRecord)
	recs := make([]Record, 0, len(scan.Records)+1)
	for _, r := range scan.Records {
		recs = append(recs, r.Val)
	}
	if scan.Corrupt != nil {
		recs = append(recs, corruptMarker(scan.Corrupt))
	}
	return recs, nil
}

// Append writes one record and fsyncs it.
func (l *Log) Append(r Record) error {
	if l.corrupt != nil {
		return fmt.Errorf("timeline is damaged (%v); it is read-only", l.corrupt)
	}
	if r.V == 0 {
		r.V = 1
	}
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	if err := l.f.Append(r); err != nil {
		return err
	}
	return l.f.Sync()
}

// Close closes the journal.
func (l *Log) Close() error {
	if l == nil || l.f == nil {
		return nil
	}
	return l.f.Close()
}
