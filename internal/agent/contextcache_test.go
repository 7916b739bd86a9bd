package agent

import (
	"reflect"
	"testing"

	"github.com/yolop-dev/yolop/internal/provider"
)

// TestBuilderEncoding: every field of the context fold survives the
// cache's encoding, and damaged data is refused rather than misread.
func TestBuilderEncoding(t *testing.T) {
	t.Parallel()
	b := messageBuilder{
		out: []provider.Message{
			{Role: provider.RoleUser, Text: "fix the parser\nplease"},
			{Role: provider.RoleAssistant, Text: "", ToolCalls: []provider.ToolCall{{ID: "c1", Name: "bash", Arguments: `{"command":"ls"}`}, {ID: "c2", Name: "read_file", Arguments: "{bad json"}},
				Reasoning: []provider.Reasoning{{Provider: "anthropic", Text: "thinking", Signature: "sig"}, {Provider: "anthropic", Redacted: "blob"}}},
			{Role: provider.RoleTool, ToolCallID: "c1", ToolName: "bash", Text: "a\x00b é", IsError: true},
		},
		open:       []provider.ToolCall{{ID: "c2", Name: "read_file", Arguments: "{bad json"}},
		unanswered: true,
		why:        "cancelled",
		last:       1<<40 + 7,
	}
	data := encodeBuilder(&b)
	got, err := decodeBuilder(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, b) {
		t.Fatalf("decoded %+v\nwant %+v", got, b)
	}
	empty, err := decodeBuilder(encodeBuilder(&messageBuilder{}))
	if err != nil || len(empty.out) != 0 || empty.open != nil || empty.last != 0 {
		t.Fatalf("empty fold: %+v %v", empty, err)
	}
	for i := range data {
		if _, err := decodeBuilder(data[:i]); err == nil {
			t.Fatalf("a cache cut to %d of %d bytes was accepted", i, len(data))
		}
	}
	if _, err := decodeBuilder(append(data[:len(data):len(data)], 0)); err == nil {
		t.Fatal("trailing bytes were accepted")
	}
}
