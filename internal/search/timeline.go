package search

import (
	"bytes"
	"path/filepath"

	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/session/jsonl"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// readTimeline materializes a session's timeline for labeling hits. Lines
// are decoded by timeline.ParseRecord (its fast path, without reflection,
// for the lines yolop writes); anything it does not accept (a torn tail, a
// damaged line) falls back to timeline.ReadRecords, so the result is
// always what the timeline package itself would build.
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
		r, err := timeline.ParseRecord(rest[:nl])
		if err != nil {
			fallback = true
			break
		}
		recs = append(recs, r)
		rest = rest[nl+1:]
	}
	if fallback {
		recs, err := timeline.ReadRecords(path)
		return timeline.Build(recs), err
	}
	return timeline.Build(recs), nil
}
