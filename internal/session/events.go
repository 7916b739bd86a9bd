package session

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/yolop-dev/yolop/internal/session/jsonl"
)

// EventScan is the result of ParseEvents.
type EventScan struct {
	// Events is the valid prefix.
	Events []Event
	// Valid is the byte length of the valid prefix.
	Valid int64
	// Tail is the length of a torn tail after Valid (0 when Corrupt is set).
	Tail       int64
	TailReason string
	// Corrupt is the first untrustworthy record of the committed prefix.
	Corrupt *CorruptError
}

// ParseEvents classifies the bytes of an events file. A line that is not a
// JSON object with the event fields, or final bytes without a newline, is
// a torn tail when no valid line follows. A bad line followed by a valid
// one, an unknown version, or a seq that is not exactly the previous plus
// one (the first is 1) is corruption: the prefix before it is valid.
func ParseEvents(file string, data []byte) EventScan {
	return parseEvents(file, data, 0, 0)
}

// parseEvents is ParseEvents of the bytes after an already parsed prefix
// of baseOff bytes ending at seq baseSeq (one line per seq): positions in
// errors are of the whole file, Valid and Tail are relative to data.
func parseEvents(file string, data []byte, baseOff, baseSeq int64) EventScan {
	scan := jsonl.Parse(file, data, parseEventLine)
	out := EventScan{Valid: scan.Valid, Tail: scan.Tail, TailReason: scan.TailReason, Corrupt: scan.Corrupt}
	if out.Corrupt != nil && baseOff > 0 {
		c := *out.Corrupt
		c.Line += int(baseSeq)
		c.Offset += baseOff
		out.Corrupt = &c
	}
	out.Events = make([]Event, 0, len(scan.Records))
	prev := baseSeq
	for _, r := range scan.Records {
		ev := r.Val
		reason := ""
		switch {
		case ev.V != EventVersion:
			reason = fmt.Sprintf("event version %d is not supported (this yolop writes %d)", ev.V, EventVersion)
		case ev.Seq != prev+1:
			reason = fmt.Sprintf("seq %d follows seq %d (want %d)", ev.Seq, prev, prev+1)
		case ev.Type == "":
			reason = fmt.Sprintf("event seq %d has no type", ev.Seq)
		}
		if reason != "" {
			out.Corrupt = &CorruptError{File: file, Line: r.Line + int(baseSeq), Offset: r.Off + baseOff, Reason: reason}
			out.Valid = r.Off
			out.Tail = 0
			out.TailReason = ""
			return out
		}
		out.Events = append(out.Events, ev)
		prev = ev.Seq
	}
	return out
}

var errNotObject = errors.New("not a JSON object")

func parseEventLine(line []byte) (Event, error) {
	if ev, ok := fastEvent(line); ok {
		return ev, nil
	}
	var ev Event
	if !jsonl.IsObject(line) {
		return ev, errNotObject
	}
	err := json.Unmarshal(line, &ev)
	return ev, err
}
