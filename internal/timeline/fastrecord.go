package timeline

import (
	"bytes"
	"encoding/json"

	"github.com/yolop-dev/yolop/internal/session/jsonl"
)

// fastRecord decodes a line in the form Log.Append writes (the fields of
// Record in order, no whitespace) without reflection: opening a long
// session parses two records per turn, and the generic decoder was most of
// that. It reports false for anything it does not recognize (an unknown or
// differently spelled key, whitespace, null, a number with sign, fraction
// or exponent, a snapshot of another shape), which json.Unmarshal then
// handles; what it accepts, json.Unmarshal accepts and decodes the same.
func fastRecord(line []byte) (Record, bool) {
	var r Record
	p := line
	if len(p) < 2 || p[0] != '{' || p[len(p)-1] != '}' {
		return r, false
	}
	p = p[1:]
	for {
		if len(p) == 0 || p[0] != '"' {
			return r, false
		}
		end := bytes.IndexByte(p[1:], '"')
		if end < 0 || len(p) < end+3 || p[end+2] != ':' {
			return r, false
		}
		key := string(p[1 : end+1])
		p = p[end+3:]
		var ok bool
		switch key {
		case "v":
			var n int64
			n, p, ok = jsonl.Digits(p)
			r.V = int(n)
		case "type":
			r.Type, p, ok = known(p)
		case "ts":
			var tok []byte
			tok, p, ok = strToken(p)
			ok = ok && r.Time.UnmarshalJSON(tok) == nil
		case "checkpoint":
			r.Checkpoint, p, ok = str(p)
		case "parent":
			r.Parent, p, ok = str(p)
		case "seq_before":
			r.SeqBefore, p, ok = jsonl.Digits(p)
		case "prompt":
			r.Prompt, p, ok = str(p)
		case "prompt_bytes":
			r.PromptBytes, p, ok = jsonl.Digits(p)
		case "snapshot":
			r.Snapshot, p, ok = snapRef(p)
		case "capture_error":
			r.CaptureError, p, ok = str(p)
		case "sandbox":
			r.Sandbox, p, ok = str(p)
		case "final_seq":
			r.FinalSeq, p, ok = jsonl.Digits(p)
		case "status":
			r.Status, p, ok = known(p)
		case "end":
			r.End, p, ok = snapRef(p)
		case "end_error":
			r.EndError, p, ok = str(p)
		case "files_changed":
			var n int64
			n, p, ok = jsonl.Digits(p)
			v := int(n)
			r.FilesChanged = &v
		case "paths":
			r.Paths, p, ok = strs(p)
		case "paths_more":
			var n int64
			n, p, ok = jsonl.Digits(p)
			r.PathsMore = int(n)
		case "restore":
			r.Restore, p, ok = str(p)
		case "target":
			r.Target, p, ok = str(p)
		case "mode":
			r.Mode, p, ok = str(p)
		case "old_head":
			r.OldHead, p, ok = str(p)
		case "new_head":
			r.NewHead, p, ok = str(p)
		case "abandoned_head":
			r.AbandonedHead, p, ok = str(p)
		case "recovery":
			r.Recovery, p, ok = snapRef(p)
		case "target_tree":
			r.TargetTree, p, ok = str(p)
		case "files_tree":
			r.FilesTree, p, ok = str(p)
		case "redo":
			switch {
			case bytes.HasPrefix(p, []byte("true")):
				r.Redo, p, ok = true, p[4:], true
			case bytes.HasPrefix(p, []byte("false")):
				r.Redo, p, ok = false, p[5:], true
			}
		case "reason":
			r.Reason, p, ok = str(p)
		}
		if !ok || len(p) == 0 {
			return r, false
		}
		if p[0] == '}' {
			return r, len(p) == 1
		}
		if p[0] != ',' {
			return r, false
		}
		p = p[1:]
	}
}

// strToken returns the JSON string token at the start of p (quotes
// included) and what follows it.
func strToken(p []byte) ([]byte, []byte, bool) {
	if len(p) == 0 || p[0] != '"' {
		return nil, p, false
	}
	for i := 1; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '"':
			return p[:i+1], p[i+1:], true
		}
	}
	return nil, p, false
}

// str decodes a JSON string: directly when it is printable ASCII without
// escapes, else with json.Unmarshal (which checks the escapes).
func str(p []byte) (string, []byte, bool) {
	tok, rest, ok := strToken(p)
	if !ok {
		return "", p, false
	}
	plain := true
	for _, c := range tok[1 : len(tok)-1] {
		if c < 0x20 || c > 0x7e || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		return string(tok[1 : len(tok)-1]), rest, true
	}
	var s string
	if json.Unmarshal(tok, &s) != nil {
		return "", p, false
	}
	return s, rest, true
}

// known is str for the record types and statuses every timeline repeats:
// those are not allocated again.
func known(p []byte) (string, []byte, bool) {
	tok, rest, ok := strToken(p)
	if !ok {
		return "", p, false
	}
	switch string(tok[1 : len(tok)-1]) {
	case TypeCheckpointCreated:
		return TypeCheckpointCreated, rest, true
	case TypeTurnCompleted:
		return TypeTurnCompleted, rest, true
	case StatusCompleted:
		return StatusCompleted, rest, true
	}
	return str(p)
}

// strs reads an array of strings (["a","b"], or [] as an empty slice, as
// json.Unmarshal decodes it).
func strs(p []byte) ([]string, []byte, bool) {
	if len(p) < 2 || p[0] != '[' {
		return nil, p, false
	}
	out := []string{}
	if p[1] == ']' {
		return out, p[2:], true
	}
	q := p[1:]
	for {
		var v string
		var ok bool
		if v, q, ok = str(q); !ok || len(q) == 0 {
			return nil, p, false
		}
		out = append(out, v)
		switch q[0] {
		case ']':
			return out, q[1:], true
		case ',':
			q = q[1:]
		default:
			return nil, p, false
		}
	}
}

// snapRef reads {"tree":"…","ref":"…"}.
func snapRef(p []byte) (*SnapshotRef, []byte, bool) {
	var ref SnapshotRef
	var ok bool
	if p, ok = prefix(p, `{"tree":`); !ok {
		return nil, p, false
	}
	if ref.Tree, p, ok = str(p); !ok {
		return nil, p, false
	}
	if p, ok = prefix(p, `,"ref":`); !ok {
		return nil, p, false
	}
	if ref.Ref, p, ok = str(p); !ok {
		return nil, p, false
	}
	if p, ok = prefix(p, `}`); !ok {
		return nil, p, false
	}
	return &ref, p, true
}

func prefix(p []byte, s string) ([]byte, bool) {
	if len(p) < len(s) || string(p[:len(s)]) != s {
		return p, false
	}
	return p[len(s):], true
}
