package session

import (
	"bytes"
	"encoding/json"

	"github.com/yolop-dev/yolop/internal/session/jsonl"
)

// fastEvent decodes a line in exactly the form Append writes,
//
//	{"v":1,"seq":7,"type":"tool.result","ts":"…","turn":"cp3","data":{…}}
//
// without reflection: opening a long session parses every line, and the
// generic decoder spent most of that time on the envelope. It reports
// false for anything else (other key order, whitespace, escapes, a data
// value that is not a valid JSON object), which the generic decoder then
// handles, so it accepts nothing json.Unmarshal would reject and decodes
// what it accepts to the same Event.
func fastEvent(line []byte) (Event, bool) {
	var ev Event
	p := line
	var ok bool
	if p, ok = cut(p, `{"v":`); !ok {
		return ev, false
	}
	var v int64
	if v, p, ok = jsonl.Digits(p); !ok {
		return ev, false
	}
	ev.V = int(v)
	if p, ok = cut(p, `,"seq":`); !ok {
		return ev, false
	}
	if ev.Seq, p, ok = jsonl.Digits(p); !ok {
		return ev, false
	}
	if p, ok = cut(p, `,"type":`); !ok {
		return ev, false
	}
	if ev.Type, p, ok = plainString(p); !ok {
		return ev, false
	}
	if p, ok = cut(p, `,"ts":`); !ok {
		return ev, false
	}
	end := bytes.IndexByte(p[min(1, len(p)):], '"') + 2
	if len(p) == 0 || p[0] != '"' || end < 2 {
		return ev, false
	}
	if ev.Time.UnmarshalJSON(p[:end]) != nil {
		return ev, false
	}
	p = p[end:]
	if rest, ok := cut(p, `,"turn":`); ok {
		if ev.Turn, p, ok = plainString(rest); !ok {
			return ev, false
		}
	}
	if rest, ok := cut(p, `,"data":`); ok {
		// The data object runs to the line's closing brace.
		if len(rest) < 3 || rest[0] != '{' || rest[len(rest)-1] != '}' {
			return ev, false
		}
		raw := rest[:len(rest)-1]
		if !json.Valid(raw) {
			return ev, false
		}
		ev.Data = bytes.Clone(raw)
		return ev, true
	}
	return ev, len(p) == 1 && p[0] == '}'
}

func cut(p []byte, prefix string) ([]byte, bool) {
	if len(p) < len(prefix) || string(p[:len(prefix)]) != prefix {
		return p, false
	}
	return p[len(prefix):], true
}

// plainString reads a JSON string of printable ASCII without escapes,
// which decodes to its own bytes.
func plainString(p []byte) (string, []byte, bool) {
	if len(p) == 0 || p[0] != '"' {
		return "", p, false
	}
	for i := 1; i < len(p); i++ {
		switch c := p[i]; {
		case c == '"':
			return string(p[1:i]), p[i+1:], true
		case c < 0x20 || c > 0x7e || c == '\\':
			return "", p, false
		}
	}
	return "", p, false
}
