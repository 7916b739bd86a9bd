package timeline

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/yolop-dev/yolop/internal/session/jsonl"
)

// CompactionsFileName is the compaction store's file name inside a session
// directory.
const CompactionsFileName = "compaction-checkpoints.jsonl"

// CompactionVersion is the record format version.
const CompactionVersion = 1

// Compaction is one model-context checkpoint: a provider-opaque
// replacement for the active messages up to SourceSeq. Replacements may
// hold retained message text, so the file is owner-only.
type Compaction struct {
	V           int             `json:"v"`
	Provider    string          `json:"provider"`
	Model       string          `json:"model"`
	Format      int             `json:"format"`
	SourceSeq   int64           `json:"source_seq"`
	Turn        string          `json:"turn"` // checkpoint id SourceSeq belongs to ("" = root)
	Replacement json.RawMessage `json:"replacement"`
	Time        time.Time       `json:"ts"`
}

func checkCompaction(c Compaction) error {
	switch {
	case c.V != CompactionVersion:
		return fmt.Errorf("compaction version %d is not supported (this yolop reads %d)", c.V, CompactionVersion)
	case c.Provider == "" || c.Model == "":
		return fmt.Errorf("compaction has no provider/model")
	case c.Format < 1:
		return fmt.Errorf("compaction format %d: want >= 1", c.Format)
	case c.SourceSeq < 1:
		return fmt.Errorf("compaction source seq %d: want >= 1", c.SourceSeq)
	case len(c.Replacement) == 0 || !json.Valid(c.Replacement):
		return fmt.Errorf("compaction replacement is missing or not JSON")
	}
	return nil
}

// ParseCompaction decodes one line (syntax only; ParseCompactions checks
// the fields).
func ParseCompaction(line []byte) (Compaction, error) {
	var c Compaction
	if !jsonl.IsObject(line) {
		return c, errNotObject
	}
	err := json.Unmarshal(line, &c)
	return c, err
}

// CompactionScan is the classification of compaction store bytes.
type CompactionScan struct {
	Records    []Compaction // valid prefix
	Valid      int64
	Tail       int64
	TailReason string
	Corrupt    *CorruptError
}

// ParseCompactions splits compaction store bytes. A line that is not a
// JSON object is a torn tail when nothing valid follows it; a malformed
// line followed by a valid one, or a well-formed record with invalid
// fields, is corruption and ends the valid prefix.
func ParseCompactions(data []byte) CompactionScan {
	scan := jsonl.Parse(CompactionsFileName, data, func(line []byte) (Compaction, error) {
		return ParseCompaction(line)
	})
	out := CompactionScan{Valid: scan.Valid, Tail: scan.Tail, TailReason: scan.TailReason, Corrupt: scan.Corrupt}
	for _, r := range scan.Records {
		if err := checkCompaction(r.Val); err != nil {
			out.Corrupt = &CorruptError{File: CompactionsFileName, Line: r.Line, Offset: r.Off, Reason: err.Error()}
			out.Valid, out.Tail, out.TailReason = r.Off, 0, ""
			return out
		}
		out.Records = append(out.Records, r.Val)
	}
	return out
}

// CompactionLog is the open compaction store. Its methods are safe for
// concurrent use.
type CompactionLog struct {
	mu     sync.Mutex // guards f and all
	f      *jsonl.File
	all    []Compaction // every valid record, appended ones included
	repair Repair
}

// OpenCompactions opens (creating, 0600) the compaction store without
// following a symlink, repairs a torn tail (kept aside), and returns the
// valid records. Mid-file corruption is not an error: the valid prefix is
// returned, Repair().Corrupt says where it stopped, and Append is refused
// (model context then falls back to the records that survive, or to raw
// events).
func OpenCompactions(path string) (*CompactionLog, []Compaction, error) {
	f, data, err := jsonl.OpenFile(path, true)
	if err != nil {
		return nil, nil, fmt.Errorf("open compaction store: %w", err)
	}
	scan := ParseCompactions(data)
	rep := Repair{File: path, Corrupt: scan.Corrupt}
	if scan.Tail > 0 {
		kept, err := f.TruncateTail(data, scan.Valid)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("repair compaction store: %w", err)
		}
		rep.Dropped, rep.KeptAt, rep.Reason = scan.Tail, kept, scan.TailReason
	}
	return &CompactionLog{f: f, all: scan.Records, repair: rep}, slices.Clone(scan.Records), nil
}

// All returns every valid record in file order, including those appended
// since opening.
func (c *CompactionLog) All() []Compaction {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.all)
}

// Repair says what OpenCompactions found and did.
func (c *CompactionLog) Repair() Repair {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.repair
}

// Append validates and writes one record, fsynced. V and Time are filled
// in when zero.
func (c *CompactionLog) Append(r Compaction) error {
	if r.V == 0 {
		r.V = CompactionVersion
	}
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	if err := checkCompaction(r); err != nil {
		return fmt.Errorf("append compaction: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.repair.Corrupt != nil {
		return fmt.Errorf("append compaction: the store is corrupt (%v); earlier compactions still apply; start a new session with \"yolop sessions fork <id>\" to compact again", c.repair.Corrupt)
	}
	if err := c.f.Append(r); err != nil {
		return err
	}
	c.all = append(c.all, r)
	return nil
}

// Close closes the file.
func (c *CompactionLog) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.f.Close()
}

// Select returns the compaction to install for provider/model/format: the
// latest compatible record (in file order) whose (Turn, SourceSeq) is on
// the active branch, where a record only replaces the one chosen so far
// when its SourceSeq is greater (installation is monotonic). Records on
// abandoned branches never shadow a surviving ancestor. Nil when none
// applies. inActive is normally State.InActiveRange.
func Select(all []Compaction, provider, model string, format int, inActive func(turn string, seq int64) bool) *Compaction {
	var best *Compaction
	for i := range all {
		c := &all[i]
		if c.Provider != provider || c.Model != model || c.Format != format {
			continue
		}
		if !inActive(c.Turn, c.SourceSeq) {
			continue
		}
		if best != nil && c.SourceSeq <= best.SourceSeq {
			continue
		}
		best = c
	}
	return best
}
