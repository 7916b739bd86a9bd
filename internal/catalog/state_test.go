package catalog

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestStateJSON: a State is one string in JSON, the words listings have
// always shown, and reads back as the same State.
func TestStateJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		state State
		want  string
	}{
		{State{}, `"ok"`},
		{State{Kind: StateReadOnly, Detail: "events.jsonl is damaged at line 3"}, `"read-only: events.jsonl is damaged at line 3"`},
		{State{Kind: StateProblem, Detail: "workspace.json: unexpected end of JSON input"}, `"problem: workspace.json: unexpected end of JSON input"`},
		{State{Kind: StateRepoMissing, Detail: "/src/a<b> & c is gone"}, `"repository missing: /src/a<b> & c is gone"`},
	}
	for _, tt := range tests {
		// As the command line writes JSON: HTML characters stay as they are.
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(struct {
			State State `json:"state"`
		}{tt.state}); err != nil {
			t.Fatal(err)
		}
		if got, want := b.String(), `{"state":`+tt.want+"}\n"; got != want {
			t.Errorf("%+v encodes as %s, want %s", tt.state, got, want)
		}
		var back State
		if err := json.Unmarshal([]byte(tt.want), &back); err != nil || back != tt.state {
			t.Errorf("%s decodes as %+v (%v), want %+v", tt.want, back, err, tt.state)
		}
		if got := tt.state.String(); `"`+got+`"` != tt.want {
			t.Errorf("%+v prints as %q, want %s", tt.state, got, tt.want)
		}
	}
}
