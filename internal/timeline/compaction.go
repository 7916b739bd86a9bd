package timeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/yolop-dev/yolop/internal/session/jsonl"
)

// Compaction is one model-context checkpoint: a provider-opaque replacement
// for the active messages up to SourceSeq. The file is owner-only because
// replacements may hold retained message text.
type Compaction struct {
	V           int             `json:"v"`
	Provider    string          `json:"provider"`
	Model       string          `json:"model"`
	Format      int             `json:"format"`
	SourceSeq   int64           `json:"source_seq"`
	Turn        string          `json:"turn"` // checkpoint the source event belongs to
	Replacement json.RawMessage `json:"replacement"`
	Time        time.Time       `json:"ts"`
}

// ParseCompaction decodes one line of compaction-checkpoints.jsonl.
func ParseCompaction(line []byte) (Compaction, error) {
	var c Compaction
	if !jsonl.IsObject(line) {
		return c, errors.New("not a JSON object")
	}
	if err := json.Unmarshal(line, &c); err != nil {
		return c, err
	}
	if c.Provider == "" || c.Format <= 0 || c.SourceSeq <= 0 || len(c.Replacement) == 0 {
		return c, errors.New("compaction record without provider, format, source_seq or replacement")
	}
	return c, nil
}

// CompactionLog is the open compaction store.
type CompactionLog struct {
	f   *jsonl.File
	all []Compaction
	bad *jsonl.CorruptError
}

// OpenCompactions opens (creating, 0600, never through a symlink) the
// store, repairs a torn tail and returns its records. Mid-file corruption
// keeps the valid prefix and refuses further appends.
func OpenCompactions(path string) (*CompactionLog, []Compaction, error) {
	f, data, err := jsonl.OpenFile(path, true)
	if err != nil {
		return nil, nil, err
	}
	scan := jsonl.Parse(path, data, ParseCompaction)
	c := &CompactionLog{f: f, bad: scan.Corrupt}
	for _, r := range scan.Records {
		c.all = append(c.all, r.Val)
	}
	if scan.Corrupt == nil && scan.Tail > 0 {
		if _, err := f.TruncateTail(data, scan.Valid); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("repair %s: %w", path, err)
		}
	}
	return c, append([]Compaction(nil), c.all...), nil
}

// All returns every stored compaction.
func (c *CompactionLog) All() []Compaction {
	return append([]Compaction(nil), c.all...)
}

// Append stores a compaction and fsyncs it.
func (c *CompactionLog) Append(x Compaction) error {
	if c.bad != nil {
		return fmt.Errorf("compaction store is damaged (%v); not appending", c.bad)
	}
	if x.V == 0 {
		x.V = 1
	}
	if err := c.f.Append(x); err != nil {
		return err
	}
	if err := c.f.Sync(); err != nil {
		return err
	}
	c.all = append(c.all, x)
	return nil
}

// Close closes the store.
func (c *CompactionLog) Close() error {
	if c == nil || c.f == nil {
		return nil
	}
	return c.f.Close()
}

// Select returns the compaction to install: the latest compatible record
// (same provider, model and format) whose source event is on the active
// branch. Records of abandoned suffixes never shadow a surviving ancestor,
// and installation is monotonic: a record whose boundary is not past an
// earlier compatible active one is ignored.
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
