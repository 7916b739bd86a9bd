package land

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// The journal names paths by their exact bytes. JSON strings cannot hold
// bytes that are not UTF-8 (encoding/json replaces them), so such a path
// is written as {"b64": "<base64 of the bytes>"}; a valid one stays a
// plain string, which is also how journals written before carry every
// path.

type jsonPath string

func (p jsonPath) MarshalJSON() ([]byte, error) {
	if utf8.ValidString(string(p)) {
		return json.Marshal(string(p))
	}
	return json.Marshal(struct {
		B64 []byte `json:"b64"`
	}{[]byte(p)})
}

func (p *jsonPath) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*p = jsonPath(s)
		return nil
	}
	var o struct {
		B64 []byte `json:"b64"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return fmt.Errorf("journal path: %w", err)
	}
	if o.B64 == nil {
		return fmt.Errorf("journal path: neither a string nor {\"b64\": …}: %s", b)
	}
	*p = jsonPath(o.B64)
	return nil
}

func toJSONPaths(ps []string) []jsonPath {
	if ps == nil {
		return nil
	}
	out := make([]jsonPath, len(ps))
	for i, p := range ps {
		out[i] = jsonPath(p)
	}
	return out
}

func fromJSONPaths(ps []jsonPath) []string {
	if ps == nil {
		return nil
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p)
	}
	return out
}

// recordAlias is record without its JSON methods.
type recordAlias record

// recordJSON is record as written: Paths and Dirs byte-exact.
type recordJSON struct {
	recordAlias
	Paths []jsonPath `json:"paths,omitempty"`
	Dirs  []jsonPath `json:"dirs,omitempty"`
}

func (r record) MarshalJSON() ([]byte, error) {
	return json.Marshal(recordJSON{recordAlias: recordAlias(r), Paths: toJSONPaths(r.Paths), Dirs: toJSONPaths(r.Dirs)})
}

func (r *record) UnmarshalJSON(b []byte) error {
	var j recordJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = record(j.recordAlias)
	r.Paths, r.Dirs = fromJSONPaths(j.Paths), fromJSONPaths(j.Dirs)
	return nil
}
