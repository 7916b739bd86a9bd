package search

import (
	"bytes"
	"path/filepath"
	"strconv"
	"time"

	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/session/jsonl"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// readTimeline materializes a session's timeline for labeling hits. Lines
// are decoded by a small field reader (encoding/json was half the time of
// a search with hits in most sessions); anything it does not fully
// understand (a torn tail, a damaged line, an unexpected field type)
// falls back to timeline.ReadRecords, so the result is always what the
// timeline package itself would build.
func readTimeline(dir string) (*timeline.State, error) {
	path := filepath.Join(dir, session.TimelineFile)
	data, err := jsonl.ReadFile(path)
	return decodeTimeline(path, data, err, nil)
}

// decodeTimeline is readTimeline for a file already read (err is the
// read's error). buf, when not nil, is memory for the records to reuse
// (timeline.Build keeps none of it): a Record is large, and growing a
// slice of them was most of the cost of labeling hits.
func decodeTimeline(path string, data []byte, err error, buf *[]timeline.Record) (*timeline.State, error) {
	if err != nil {
		recs, err := timeline.ReadRecords(path)
		return timeline.Build(recs), err
	}
	var recs []timeline.Record
	if buf != nil {
		recs = (*buf)[:0]
		defer func() { *buf = recs[:0] }()
	} else {
		recs = make([]timeline.Record, 0, bytes.Count(data, []byte("\n")))
	}
	fallback := false
	for rest := data; len(rest) > 0; {
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			fallback = true // a torn tail: let the timeline package judge it
			break
		}
		// Decoded in place: a Record is large.
		recs = append(recs, timeline.Record{})
		if !decodeRecordInto(&recs[len(recs)-1], rest[:nl]) {
			fallback = true
			break
		}
		rest = rest[nl+1:]
	}
	if fallback {
		recs, err := timeline.ReadRecords(path)
		return timeline.Build(recs), err
	}
	return timeline.Build(recs), nil
}

// decodeRecord reads one timeline line; ok is false for anything but a
// well-formed object whose known fields have the expected JSON types.
func decodeRecord(line []byte) (timeline.Record, bool) {
	var r timeline.Record
	ok := decodeRecordInto(&r, line)
	return r, ok
}

// decodeRecordInto is decodeRecord into a zero *r.
func decodeRecordInto(r *timeline.Record, line []byte) bool {
	// Before the object only what jsonl.IsObject skips.
	t := bytes.TrimLeft(line, " \t\r")
	if len(t) == 0 || t[0] != '{' {
		return false
	}
	s := &lineScanner{b: line, pos: len(line) - len(t)}
	s.pos++
	first := true
	for {
		s.ws()
		if s.pos < len(s.b) && s.b[s.pos] == '}' && first {
			s.pos++
			break
		}
		first = false
		k, ok := s.str()
		if !ok {
			return false
		}
		s.ws()
		if s.pos >= len(s.b) || s.b[s.pos] != ':' {
			return false
		}
		s.pos++
		s.ws()
		start := s.pos
		if !s.skip(0) {
			return false
		}
		v := s.b[start:s.pos]
		if !setField(r, string(k), v) {
			return false
		}
		s.ws()
		if s.pos < len(s.b) && s.b[s.pos] == ',' {
			s.pos++
			continue
		}
		if s.pos < len(s.b) && s.b[s.pos] == '}' {
			s.pos++
			break
		}
		return false
	}
	s.ws()
	return s.pos == len(s.b)
}

func jsonString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	return unescape(v[1 : len(v)-1]), true
}

// knownString returns the record types and statuses every timeline repeats
// without allocating them again.
func knownString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	switch s := v[1 : len(v)-1]; string(s) {
	case timeline.TypeCheckpointCreated:
		return timeline.TypeCheckpointCreated, true
	case timeline.TypeTurnCompleted:
		return timeline.TypeTurnCompleted, true
	case timeline.TypeHeadMoved:
		return timeline.TypeHeadMoved, true
	case "completed":
		return "completed", true
	}
	return "", false
}

func jsonInt(v []byte) (int64, bool) {
	// JSON's integer syntax only: ParseInt also takes "00" and "+1".
	d := v
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || d[0] == '0' && len(d) > 1 {
		return 0, false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil
}

// members reads a flat object or array whose values are all strings,
// calling f with each key ("" in an array) and decoded value.
func members(v []byte, open, close byte, f func(key, val string) bool) bool {
	s := &lineScanner{b: v}
	if len(v) == 0 || v[0] != open {
		return false
	}
	s.pos = 1
	s.ws()
	if s.pos < len(s.b) && s.b[s.pos] == close {
		s.pos++
		return s.pos == len(s.b)
	}
	for {
		s.ws()
		key := ""
		if open == '{' {
			k, ok := s.str()
			if !ok {
				return false
			}
			key = keyString(k)
			s.ws()
			if s.pos >= len(s.b) || s.b[s.pos] != ':' {
				return false
			}
			s.pos++
			s.ws()
		}
		raw, ok := s.str()
		if !ok {
			return false
		}
		if !f(key, unescape(raw)) {
			return false
		}
		s.ws()
		if s.pos >= len(s.b) {
			return false
		}
		switch s.b[s.pos] {
		case ',':
			s.pos++
		case close:
			s.pos++
			return s.pos == len(s.b)
		default:
			return false
		}
	}
}

// jsonSnapshot decodes {"tree":…,"ref":…} into *dst the way
// encoding/json does: null clears it, an object fills the existing value.
func jsonSnapshot(dst **timeline.SnapshotRef, v []byte) bool {
	if string(v) == "null" {
		*dst = nil
		return true
	}
	ref := *dst
	if ref == nil {
		ref = &timeline.SnapshotRef{}
	}
	// encoding/json matches other spellings of the keys too; leave those
	// to it.
	ok := members(v, '{', '}', func(key, val string) bool {
		switch key {
		case "tree":
			ref.Tree = val
		case "ref":
			ref.Ref = val
		default:
			return false
		}
		return true
	})
	if ok {
		*dst = ref
	}
	return ok
}

func setField(r *timeline.Record, k string, v []byte) bool {
	var ok bool
	str := func(dst *string) bool {
		*dst, ok = jsonString(v)
		return ok
	}
	num := func(dst *int64) bool {
		*dst, ok = jsonInt(v)
		return ok
	}
	switch k {
	case "v":
		n, ok := jsonInt(v)
		r.V = int(n)
		return ok
	case "type":
		r.Type, ok = knownString(v)
		return ok || str(&r.Type)
	case "ts":
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			if t, ok := parseRFC3339UTC(v[1 : len(v)-1]); ok {
				r.Time = t
				return true
			}
		}
		ts, good := jsonString(v)
		if !good {
			return false
		}
		t, err := time.Parse(time.RFC3339Nano, ts)
		r.Time = t
		return err == nil
	case "checkpoint":
		return str(&r.Checkpoint)
	case "parent":
		return str(&r.Parent)
	case "seq_before":
		return num(&r.SeqBefore)
	case "prompt":
		return str(&r.Prompt)
	case "prompt_bytes":
		return num(&r.PromptBytes)
	case "snapshot":
		return jsonSnapshot(&r.Snapshot, v)
	case "capture_error":
		return str(&r.CaptureError)
	case "sandbox":
		return str(&r.Sandbox)
	case "end_error":
		return str(&r.EndError)
	case "files_changed":
		if string(v) == "null" {
			r.FilesChanged = nil
			return true
		}
		n, ok := jsonInt(v)
		if !ok || int64(int(n)) != n {
			return false
		}
		c := int(n)
		r.FilesChanged = &c
		return true
	case "final_seq":
		return num(&r.FinalSeq)
	case "status":
		r.Status, ok = knownString(v)
		return ok || str(&r.Status)
	case "end":
		return jsonSnapshot(&r.End, v)
	case "paths":
		if string(v) == "null" {
			r.Paths = nil
			return true
		}
		paths := r.Paths[:0]
		if paths == nil {
			paths = []string{}
		}
		if !members(v, '[', ']', func(_, val string) bool { paths = append(paths, val); return true }) {
			return false
		}
		r.Paths = paths
		return true
	case "paths_more":
		n, ok := jsonInt(v)
		r.PathsMore = int(n)
		return ok
	case "restore":
		return str(&r.Restore)
	case "target":
		return str(&r.Target)
	case "mode":
		return str(&r.Mode)
	case "old_head":
		return str(&r.OldHead)
	case "new_head":
		return str(&r.NewHead)
	case "abandoned_head":
		return str(&r.AbandonedHead)
	case "recovery":
		return jsonSnapshot(&r.Recovery, v)
	case "target_tree":
		return str(&r.TargetTree)
	case "redo":
		switch string(v) {
		case "true":
			r.Redo = true
			return true
		case "false":
			return true
		}
		return false
	case "reason":
		return str(&r.Reason)
	}
	// An unknown field: a newer yolop wrote it; the timeline package
	// decides what that means.
	return false
}
