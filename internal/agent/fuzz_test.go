package agent

import (
	"testing"

	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/session"
)

// FuzzMessages: model context and the transcript are rebuilt on every open
// from the events.jsonl on disk, whose payloads a damaged or hand-edited
// file can make anything. Rebuilding must never panic, and the context sent
// to a provider must stay well formed: every tool result answers a call of
// the assistant message just before it, each call is answered exactly once
// before anything else is said, and user texts never follow each other
// (some APIs require alternating roles).
func FuzzMessages(f *testing.F) {
	seeds := []string{
		`{"v":1,"seq":1,"type":"user.message","ts":"2026-12-01T10:00:00Z","turn":"cp1","data":{"text":"hi"}}` + "\n" +
			`{"v":1,"seq":2,"type":"assistant.message","ts":"2026-12-01T10:00:01Z","turn":"cp1","data":{"provider":"sim","model":"sim","message":{"role":"assistant","text":"x","tool_calls":[{"id":"c1","name":"bash","arguments":"{}"},{"id":"c2","name":"read_file","arguments":"{"}]}}}` + "\n" +
			`{"v":1,"seq":3,"type":"tool.result","ts":"2026-12-01T10:00:02Z","turn":"cp1","data":{"call_id":"c2","name":"read_file","content":"ok"}}` + "\n" +
			`{"v":1,"seq":4,"type":"notice","ts":"2026-12-01T10:00:03Z","turn":"cp1","data":{"kind":"restore","text":"files changed","model":true}}` + "\n" +
			`{"v":1,"seq":5,"type":"turn.error","ts":"2026-12-01T10:00:04Z","turn":"cp1","data":{"status":"failed","error":"boom"}}` + "\n" +
			`{"v":1,"seq":6,"type":"user.message","ts":"2026-12-01T10:00:05Z","turn":"cp2","data":{"text":"again"}}` + "\n",
		`{"v":1,"seq":1,"type":"tool.result","ts":"2026-12-01T10:00:00Z","data":{"call_id":"zz","name":"bash","content":"orphan"}}` + "\n",
		`{"v":1,"seq":1,"type":"assistant.message","ts":"2026-12-01T10:00:00Z","data":{"message":{"role":"user","tool_calls":[{"id":"c1"},{"id":"c1"}]}}}` + "\n" +
			`{"v":1,"seq":2,"type":"tool.result","ts":"2026-12-01T10:00:00Z","data":{"call_id":"c1"}}` + "\n" +
			`{"v":1,"seq":3,"type":"tool.result","ts":"2026-12-01T10:00:00Z","data":{"call_id":"c1"}}` + "\n",
		`{"v":1,"seq":1,"type":"user.message","ts":"2026-12-01T10:00:00Z","data":[1,2]}` + "\n",
		`{"v":1,"seq":1,"type":"notice","ts":"2026-12-01T10:00:00Z","data":{"text":"n","model":true}}` + "\n" +
			`{"v":1,"seq":2,"type":"user.message","ts":"2026-12-01T10:00:00Z","data":{"text":"u"}}` + "\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		events := session.ParseEvents(session.EventsFile, data).Events
		msgs := Messages(events)
		Items(events)           // must not panic either
		var open map[string]int // calls of the last assistant message not answered yet
		for i, m := range msgs {
			switch m.Role {
			case provider.RoleTool:
				if open[m.ToolCallID] == 0 {
					t.Fatalf("message %d: tool result for %q answers no open call\n%+v", i, m.ToolCallID, msgs)
				}
				if open[m.ToolCallID]--; open[m.ToolCallID] == 0 {
					delete(open, m.ToolCallID)
				}
				continue
			case provider.RoleUser, provider.RoleAssistant:
			default:
				t.Fatalf("message %d has role %q", i, m.Role)
			}
			if len(open) > 0 {
				t.Fatalf("message %d (%s) comes before calls %v were answered\n%+v", i, m.Role, open, msgs)
			}
			if m.Role == provider.RoleUser && i > 0 && msgs[i-1].Role == provider.RoleUser {
				t.Fatalf("messages %d and %d are both user texts", i-1, i)
			}
			if m.Role == provider.RoleAssistant {
				open = map[string]int{}
				for _, c := range m.ToolCalls {
					open[c.ID]++
				}
			}
		}
	})
}
