package app

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"path/filepath"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/session/jsonl"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// resumeFile is a derived file in the session directory: what opening the
// session needs from its logs, as of the end of the last turn, restore or
// repair, so that the next process parses only what was appended after
// (see session.OpenAt and timeline.OpenLogAt). It is never the source of
// truth: each log's prefix it covers is checked (length and a hash of its
// last bytes) and a log that no longer starts with it is replayed in full;
// a missing, damaged (checksum), or other-version file is ignored, and the
// writer replaces it after the next turn. Deleting it loses nothing.
//
//	"yolop-resume\n" uvarint(version)
//	events.jsonl:   varint(offset) varint(last seq) [32]tail hash
//	timeline.jsonl: varint(offset) [32]tail hash
//	usage:          varint × 4 (input, output, cache read, cache write tokens of every logged step)
//	state:          uvarint(length) timeline.AppendState
//	context:        uvarint(0) when absent, else uvarint(1)
//	                varint(compaction boundary) varint(through seq)
//	                uvarint(length) agent.ContextCache data
//	crc32 (IEEE, big endian) of everything before it
//
// The context is the model context as the process that wrote the file had
// it (agent.ContextCache); it is used only when the journal shows that
// the conversation has only grown since (no restore, the same head or a
// descendant of it), else the context is rebuilt from the events.
const resumeFile = "resume.bin"

const (
	resumeMagic   = "yolop-resume\n"
	resumeVersion = 3
)

// resumeState is the content of resumeFile.
type resumeState struct {
	events   session.Prefix
	timeline jsonl.Mark
	usage    provider.Usage
	state    *timeline.State
	context  *agent.ContextCache // nil: not kept
}

func encodeResume(r resumeState) ([]byte, error) {
	b := binary.AppendUvarint([]byte(resumeMagic), resumeVersion)
	b = binary.AppendVarint(b, r.events.Mark.Offset)
	b = binary.AppendVarint(b, r.events.LastSeq)
	b = append(b, r.events.Mark.Tail[:]...)
	b = binary.AppendVarint(b, r.timeline.Offset)
	b = append(b, r.timeline.Tail[:]...)
	for _, n := range []int{r.usage.InputTokens, r.usage.OutputTokens, r.usage.CacheReadTokens, r.usage.CacheWriteTokens} {
		b = binary.AppendVarint(b, int64(n))
	}
	st, err := timeline.AppendState(nil, r.state)
	if err != nil {
		return nil, err
	}
	b = binary.AppendUvarint(b, uint64(len(st)))
	b = append(b, st...)
	if c := r.context; c != nil {
		b = binary.AppendUvarint(b, 1)
		b = binary.AppendVarint(b, c.Boundary)
		b = binary.AppendVarint(b, c.Through)
		b = binary.AppendUvarint(b, uint64(len(c.Data)))
		b = append(b, c.Data...)
	} else {
		b = binary.AppendUvarint(b, 0)
	}
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b)), nil
}

var errResume = errors.New("app: resume file unreadable")

func decodeResume(data []byte) (resumeState, error) {
	var r resumeState
	if len(data) < len(resumeMagic)+4 || !bytes.HasPrefix(data, []byte(resumeMagic)) {
		return r, errResume
	}
	body, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return r, fmt.Errorf("%w: checksum", errResume)
	}
	p := body[len(resumeMagic):]
	bad := false
	uv := func() uint64 {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			bad = true
			return 0
		}
		p = p[n:]
		return v
	}
	iv := func() int64 {
		v, n := binary.Varint(p)
		if n <= 0 {
			bad = true
			return 0
		}
		p = p[n:]
		return v
	}
	hash := func(h *[sha256.Size]byte) {
		if len(p) < len(h) {
			bad = true
			return
		}
		copy(h[:], p)
		p = p[len(h):]
	}
	if uv() != resumeVersion || bad {
		return r, fmt.Errorf("%w: version", errResume)
	}
	r.events.Mark.Offset = iv()
	r.events.LastSeq = iv()
	hash(&r.events.Mark.Tail)
	r.timeline.Offset = iv()
	hash(&r.timeline.Tail)
	r.usage.InputTokens = int(iv())
	r.usage.OutputTokens = int(iv())
	r.usage.CacheReadTokens = int(iv())
	r.usage.CacheWriteTokens = int(iv())
	n := uv()
	if bad || n > uint64(len(p)) {
		return r, fmt.Errorf("%w: layout", errResume)
	}
	st, err := timeline.DecodeState(p[:n])
	if err != nil {
		return r, fmt.Errorf("%w: %v", errResume, err)
	}
	r.state = st
	p = p[n:]
	if uv() == 1 {
		c := &agent.ContextCache{Boundary: iv(), Through: iv()}
		n := uv()
		if bad || n != uint64(len(p)) {
			return r, fmt.Errorf("%w: layout", errResume)
		}
		c.Data = p
		p = nil
		r.context = c
	}
	if bad || len(p) != 0 {
		return r, fmt.Errorf("%w: layout", errResume)
	}
	return r, nil
}

// readResume reads the session's resume file; ok is false when there is
// none or it cannot be used (it is then simply not used).
func readResume(dir string) (resumeState, bool) {
	data, err := jsonl.ReadFile(filepath.Join(dir, resumeFile))
	if err != nil {
		return resumeState{}, false
	}
	r, err := decodeResume(data)
	return r, err == nil
}

// persistResume writes the resume file of an open session: its event log
// and timeline as they are now, and st, the timeline's state. The caller
// (the controller, at the end of a turn, restore or repair) holds the lock
// that keeps both logs from growing meanwhile.
func persistResume(p *Parts, st *timeline.State) error {
	if st.ReadOnly {
		return nil
	}
	ev, err := p.Session.Prefix()
	if err != nil {
		return fmt.Errorf("save %s: %w", resumeFile, err)
	}
	tl, err := p.Timeline.Mark()
	if err != nil {
		return fmt.Errorf("save %s: %w", resumeFile, err)
	}
	boundary, seeded := p.Agent.CompactionBoundary()
	if at := p.resumeAt; at != nil && ev.Mark.Offset-at.events < resumeEventsSlack && tl.Offset-at.timeline < resumeTimelineSlack &&
		at.restores == st.NextRestore && (!seeded || at.context && at.boundary == boundary) {
		// The file on disk leaves the next open little to parse: keep it
		// (rewriting it costs time in proportion to the whole session).
		return nil
	}
	usage, _ := p.Agent.Usage()
	r := resumeState{events: ev, timeline: tl, usage: usage, state: st}
	c, hasContext := p.Agent.ContextCache()
	if hasContext {
		r.context = &c
	}
	data, err := encodeResume(r)
	if err != nil {
		return fmt.Errorf("save %s: %w", resumeFile, err)
	}
	if err := jsonl.WriteFileAtomic(p.Session.Path(resumeFile), data); err != nil {
		return fmt.Errorf("save %s: %w", resumeFile, err)
	}
	p.resumeAt = &resumeMarks{events: ev.Mark.Offset, timeline: tl.Offset, restores: st.NextRestore, boundary: boundary, context: hasContext}
	return nil
}

// How far the logs may grow past the resume file before it is written
// again: opening then parses, and folds into the model context, at most
// this much of each log (a millisecond or two), while a long session's
// file, which holds its whole timeline and model context, is rewritten
// every few dozen turns instead of after each one.
const (
	resumeEventsSlack   = 64 << 10
	resumeTimelineSlack = 16 << 10
)

// resumeMarks are the log offsets the resume file on disk covers, and
// what its model context was built for: the restore counter and the
// installed compaction's boundary. A restore or a compaction makes that
// context useless to the next process, so the file is written again, as
// it is when it holds no context (written before the agent had one).
type resumeMarks struct {
	events, timeline int64
	restores         int
	boundary         int64
	context          bool // the file holds a model context
}
