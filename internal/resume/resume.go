package resume

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"path/filepath"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/binenc"
	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/fsutil"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/session/jsonl"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// Name is the file's name in the session directory.
const Name = "resume.bin"

const (
	magic   = "yolop-resume\n"
	version = 3
)

// File is what a resume file holds.
type File struct {
	// Events is the prefix of events.jsonl the file covers.
	Events session.Prefix
	// Timeline is the prefix of timeline.jsonl the file covers.
	Timeline jsonl.Mark
	// Usage is the usage of every step logged in Events.
	Usage provider.Usage
	// State is the timeline's state at Timeline (timeline.OpenLogAt
	// applies the records after it in place).
	State *timeline.State
	// Context is the model context at Events (nil: not kept).
	Context *agent.ContextCache

	// head and restores are what Context was built for: the conversation
	// head and the restore counter of State as decoded, before anything
	// was applied to it.
	head     string
	restores int
}

// ErrUnreadable is wrapped by the errors of a file that cannot be used.
var ErrUnreadable = fault.Plain("resume: file unreadable")

// Encode returns f as the file's bytes.
func Encode(f File) ([]byte, error) {
	st, err := timeline.AppendState(nil, f.State)
	if err != nil {
		return nil, err
	}
	w := binenc.Writer{B: []byte(magic)}
	w.Uint(version)
	w.Int(f.Events.Mark.Offset)
	w.Int(f.Events.LastSeq)
	w.Raw(f.Events.Mark.Tail[:])
	w.Int(f.Timeline.Offset)
	w.Raw(f.Timeline.Tail[:])
	for _, n := range []int{f.Usage.InputTokens, f.Usage.OutputTokens, f.Usage.CacheReadTokens, f.Usage.CacheWriteTokens} {
		w.Int(int64(n))
	}
	w.Uint(uint64(len(st)))
	w.Raw(st)
	if c := f.Context; c != nil {
		w.Uint(1)
		w.Int(c.Boundary)
		w.Int(c.Through)
		w.Uint(uint64(len(c.Data)))
		w.Raw(c.Data)
	} else {
		w.Uint(0)
	}
	return binary.BigEndian.AppendUint32(w.B, crc32.ChecksumIEEE(w.B)), nil
}

// Decode reads what Encode wrote. The state and the context share data's
// memory.
func Decode(data []byte) (*File, error) {
	if len(data) < len(magic)+4 || !bytes.HasPrefix(data, []byte(magic)) {
		return nil, ErrUnreadable
	}
	body, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, fmt.Errorf("%w: checksum", ErrUnreadable)
	}
	r := binenc.Reader{S: string(body[len(magic):])}
	// inBody is the part of body a string r just returned was read from:
	// the state and the context are decoded from there, not from a copy.
	inBody := func(s string) []byte {
		end := len(body) - len(r.S)
		return body[end-len(s) : end]
	}
	if r.Uint() != version || r.Err != nil {
		return nil, fmt.Errorf("%w: version", ErrUnreadable)
	}
	f := &File{}
	f.Events.Mark.Offset = r.Int()
	f.Events.LastSeq = r.Int()
	copy(f.Events.Mark.Tail[:], r.Raw(sha256.Size))
	f.Timeline.Offset = r.Int()
	copy(f.Timeline.Tail[:], r.Raw(sha256.Size))
	f.Usage.InputTokens = int(r.Int())
	f.Usage.OutputTokens = int(r.Int())
	f.Usage.CacheReadTokens = int(r.Int())
	f.Usage.CacheWriteTokens = int(r.Int())
	st := inBody(r.Str())
	if r.Err != nil {
		return nil, fmt.Errorf("%w: layout", ErrUnreadable)
	}
	state, err := timeline.DecodeState(st)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	f.State, f.head, f.restores = state, state.Head, state.NextRestore
	if r.Uint() == 1 {
		c := &agent.ContextCache{Boundary: r.Int(), Through: r.Int()}
		c.Data = inBody(r.Str())
		f.Context = c
	}
	if r.Err != nil || len(r.S) != 0 {
		return nil, fmt.Errorf("%w: layout", ErrUnreadable)
	}
	return f, nil
}

// Read reads the resume file of the session directory dir: nil when
// there is none or it cannot be used (it is then simply not used).
func Read(dir string) *File {
	data, err := jsonl.ReadFile(filepath.Join(dir, Name))
	if err != nil {
		return nil
	}
	f, err := Decode(data)
	if err != nil {
		return nil
	}
	return f
}

// ContextFor returns the file's model context when the conversation has
// only grown since it was built, st being the journal's state now: no
// restore started (a rewind, redo or branch changes the context), none
// pending, no turn open, and the head then is the head now or one of its
// ancestors. Anything else (nil too) rebuilds the context from the events.
func (f *File) ContextFor(st *timeline.State) *agent.ContextCache {
	if f == nil || f.Context == nil || st.NextRestore != f.restores || st.PendingRestore != nil || st.OpenTurn != nil {
		return nil
	}
	if f.head == "" {
		if f.Context.Through == 0 {
			return f.Context
		}
		return nil
	}
	for cp := st.Checkpoints[st.Head]; cp != nil; cp = st.Checkpoints[cp.Parent] {
		if cp.ID == f.head {
			return f.Context
		}
		if cp.SeqBefore < f.Context.Through {
			break // older than the context: the head then is not on the branch
		}
	}
	return nil
}

// How far the logs may grow past the resume file before it is written
// again: opening then parses, and folds into the model context, at most
// this much of each log (a millisecond or two), while a long session's
// file, which holds its whole timeline and model context, is rewritten
// every few dozen turns instead of after each one.
const (
	eventsSlack   = 64 << 10
	timelineSlack = 16 << 10
)

// Events is the session's event log as the writer needs it
// (*session.Session).
type Events interface {
	Prefix() (session.Prefix, error)
}

// Journal is the session's timeline as the writer needs it
// (*timeline.Log).
type Journal interface {
	Mark() (jsonl.Mark, error)
}

// Context is the session's model context as the writer needs it
// (*agent.Agent).
type Context interface {
	CompactionBoundary() (int64, bool)
	Usage() (total provider.Usage, inContext int)
	ContextCache() (agent.ContextCache, bool)
}

// Writer keeps the resume file of an open session.
type Writer struct {
	path    string
	events  Events
	journal Journal
	context Context
	// at is what the file on disk covers (nil when there is none this
	// process can vouch for); Save is called under the controller's lock,
	// so it is never written concurrently.
	at *marks
}

// marks are the log offsets the file on disk covers, and what its model
// context was built for: the restore counter and the installed
// compaction's boundary. A restore or a compaction makes that context
// useless to the next process, so the file is written again, as it is
// when it holds no context (written before the agent had one).
type marks struct {
	events, timeline int64
	restores         int
	boundary         int64
	context          bool // the file holds a model context
}

// NewWriter returns the writer of the resume file of the session
// directory dir. onDisk is the file read at open when the logs were
// resumed from it (nil otherwise): while the logs have grown little past
// it, it is kept.
func NewWriter(dir string, events Events, journal Journal, context Context, onDisk *File) *Writer {
	w := &Writer{path: filepath.Join(dir, Name), events: events, journal: journal, context: context}
	if onDisk != nil {
		w.at = &marks{events: onDisk.Events.Mark.Offset, timeline: onDisk.Timeline.Offset, restores: onDisk.restores}
		if c := onDisk.Context; c != nil {
			w.at.boundary, w.at.context = c.Boundary, true
		}
	}
	return w
}

// Save writes the resume file: the event log and timeline as they are
// now, and st, the timeline's state. The caller (the controller, at the
// end of a turn, restore or repair) holds the lock that keeps both logs
// from growing meanwhile.
func (w *Writer) Save(st *timeline.State) error {
	if st.ReadOnly {
		return nil
	}
	ev, err := w.events.Prefix()
	if err != nil {
		return fmt.Errorf("save %s: %w", Name, err)
	}
	tl, err := w.journal.Mark()
	if err != nil {
		return fmt.Errorf("save %s: %w", Name, err)
	}
	boundary, seeded := w.context.CompactionBoundary()
	if at := w.at; at != nil && ev.Mark.Offset-at.events < eventsSlack && tl.Offset-at.timeline < timelineSlack &&
		at.restores == st.NextRestore && (!seeded || at.context && at.boundary == boundary) {
		// The file on disk leaves the next open little to parse: keep it
		// (rewriting it costs time in proportion to the whole session).
		return nil
	}
	usage, _ := w.context.Usage()
	f := File{Events: ev, Timeline: tl, Usage: usage, State: st}
	c, hasContext := w.context.ContextCache()
	if hasContext {
		f.Context = &c
	}
	data, err := Encode(f)
	if err != nil {
		return fmt.Errorf("save %s: %w", Name, err)
	}
	// Its checksum and marks are checked when read (doc.go): no fsync.
	if err := fsutil.WriteFileCache(w.path, data, 0o600); err != nil {
		return fmt.Errorf("save %s: %w", Name, err)
	}
	w.at = &marks{events: ev.Mark.Offset, timeline: tl.Offset, restores: st.NextRestore, boundary: boundary, context: hasContext}
	return nil
}
