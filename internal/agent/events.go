package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/session"
)

// Event types the agent writes to events.jsonl. Their data payloads are the
// structs below; the session package stores them opaquely.
const (
	EventUser       = "user.message"
	EventAssistant  = "assistant.message"
	EventToolResult = "tool.result"
	EventNotice     = "notice"
	EventTurnError  = "turn.error"
)

// UserData is the payload of a user.message event.
type UserData struct {
	Text string `json:"text"`
}

// AssistantData is the payload of an assistant.message event.
type AssistantData struct {
	Provider   string           `json:"provider"`
	Model      string           `json:"model"`
	Message    provider.Message `json:"message"`
	StopReason string           `json:"stop_reason,omitempty"`
	// Usage is what the provider reported for this model step (nil when it
	// reported nothing).
	Usage *provider.Usage `json:"usage,omitempty"`
}

// ToolResultData is the payload of a tool.result event.
type ToolResultData struct {
	CallID  string    `json:"call_id"`
	Name    string    `json:"name"`
	Content string    `json:"content"`
	IsError bool      `json:"is_error,omitempty"`
	Info    *ToolInfo `json:"info,omitempty"`
	// External marks a tool that acted outside the workspace (an MCP
	// server's): a rewind cannot undo it.
	External bool `json:"external,omitempty"`
}

// NoticeData is the payload of a notice event. Model notices are shown to
// the model as a short user-role note (e.g. after a workspace-only restore,
// so it knows the files changed under it).
type NoticeData struct {
	Kind  string `json:"kind"`
	Text  string `json:"text"`
	Model bool   `json:"model,omitempty"`
}

// TurnErrorData is the payload of a turn.error event.
type TurnErrorData struct {
	Status string `json:"status"`
	Error  string `json:"error"`
}

// noticePrefix marks yolop's own notes in model context.
const noticePrefix = "[yolop notice] "

// interruptedResult is the tool result the model sees for a call whose
// result was never recorded (the process stopped mid-call).
const interruptedResult = "interrupted: the turn stopped before this tool call finished; no result was recorded"

// unansweredReply stands in for the model's answer to a prompt whose turn
// ended (cancelled, failed, or stopped by a crash) before the model replied.
const unansweredReply = "[yolop notice] No reply: this turn ended before the model answered"

// Messages materializes model context from events of the active branch, in
// order. Calls without a recorded result get a synthetic interrupted result
// so that providers always see complete call/result pairs; consecutive
// user-role texts are merged because some APIs require alternating roles.
// A prompt the model never answered is closed by a short synthetic reply
// before anything else is added, so that it is not merged into the next
// prompt and acted on again as part of it.
func Messages(events []session.Event) []provider.Message {
	var b messageBuilder
	for _, ev := range events {
		b.add(ev)
	}
	return b.messages()
}

// messageBuilder is Messages as a fold: each event is decoded once when it
// is added, so a live session extends its context by one event at a time
// instead of decoding its whole history for every model call.
type messageBuilder struct {
	out  []provider.Message
	open []provider.ToolCall // calls of the last assistant message still waiting for results
	// unanswered is set while the last prompt has no assistant message yet;
	// why is the end of its turn when a turn.error said so.
	unanswered bool
	why        string
	// last is the seq of the last event folded in.
	last int64
}

func (b *messageBuilder) closeOpen() {
	for _, c := range b.open {
		b.out = append(b.out, provider.Message{Role: provider.RoleTool, ToolCallID: c.ID, ToolName: c.Name, Text: interruptedResult, IsError: true})
	}
	b.open = nil
}

func (b *messageBuilder) addUser(text string) {
	b.closeOpen()
	if b.unanswered {
		reply := unansweredReply + "."
		if b.why != "" {
			reply = unansweredReply + " (" + b.why + ")."
		}
		b.out = append(b.out, provider.Message{Role: provider.RoleAssistant, Text: reply})
		b.unanswered, b.why = false, ""
	}
	if n := len(b.out); n > 0 && b.out[n-1].Role == provider.RoleUser {
		b.out[n-1].Text += "\n\n" + text
		return
	}
	b.out = append(b.out, provider.Message{Role: provider.RoleUser, Text: text})
}

// add folds one event into the context.
func (b *messageBuilder) add(ev session.Event) {
	b.last = max(b.last, ev.Seq)
	switch ev.Type {
	case EventUser:
		var d UserData
		if json.Unmarshal(ev.Data, &d) == nil {
			b.addUser(d.Text)
			b.unanswered = true
		}
	case EventAssistant:
		var d AssistantData
		if json.Unmarshal(ev.Data, &d) != nil {
			return
		}
		b.closeOpen()
		b.unanswered, b.why = false, ""
		m := d.Message
		m.Role = provider.RoleAssistant
		b.out = append(b.out, m)
		b.open = append([]provider.ToolCall(nil), m.ToolCalls...)
	case EventToolResult:
		var d ToolResultData
		if json.Unmarshal(ev.Data, &d) != nil {
			return
		}
		idx := -1
		for i, c := range b.open {
			if c.ID == d.CallID {
				idx = i
				break
			}
		}
		if idx < 0 {
			return // a result for a call that is not in context
		}
		b.open = append(b.open[:idx], b.open[idx+1:]...)
		b.out = append(b.out, provider.Message{Role: provider.RoleTool, ToolCallID: d.CallID, ToolName: d.Name, Text: d.Content, IsError: d.IsError})
	case EventNotice:
		var d NoticeData
		if json.Unmarshal(ev.Data, &d) == nil && d.Model {
			b.addUser(noticePrefix + d.Text)
		}
	case EventTurnError:
		var d TurnErrorData
		if b.unanswered && json.Unmarshal(ev.Data, &d) == nil {
			b.why = d.Status
			if d.Status == StatusCancelled && d.Error != "" {
				b.why = d.Error
			} else if d.Error != "" {
				b.why += ": " + d.Error
			}
		}
	}
}

// messages returns the context so far, with synthetic results for calls
// still open. The result is a copy: later adds do not change it.
func (b *messageBuilder) messages() []provider.Message {
	if len(b.out)+len(b.open) == 0 {
		return nil
	}
	out := make([]provider.Message, len(b.out), len(b.out)+len(b.open))
	copy(out, b.out)
	for _, c := range b.open {
		out = append(out, provider.Message{Role: provider.RoleTool, ToolCallID: c.ID, ToolName: c.Name, Text: interruptedResult, IsError: true})
	}
	return out
}

// Items materializes the transcript of the active branch from its events.
func Items(events []session.Event) []Item {
	var out []Item
	pending := map[string]*ToolInfo{}
	for _, ev := range events {
		switch ev.Type {
		case EventUser:
			var d UserData
			if json.Unmarshal(ev.Data, &d) == nil {
				out = append(out, Item{Kind: ItemUser, Turn: ev.Turn, Text: d.Text})
			}
		case EventAssistant:
			var d AssistantData
			if json.Unmarshal(ev.Data, &d) != nil {
				continue
			}
			for _, r := range d.Message.Reasoning {
				if r.Text != "" {
					out = append(out, Item{Kind: ItemReasoning, Turn: ev.Turn, Text: r.Text})
				}
			}
			if strings.TrimSpace(d.Message.Text) != "" {
				out = append(out, Item{Kind: ItemAssistant, Turn: ev.Turn, Text: d.Message.Text})
			}
			for _, c := range d.Message.ToolCalls {
				pending[c.ID] = &ToolInfo{ID: c.ID, Name: c.Name, Args: c.Arguments, Status: "pending", Title: c.Name}
			}
		case EventToolResult:
			var d ToolResultData
			if json.Unmarshal(ev.Data, &d) != nil {
				continue
			}
			info := d.Info
			if info == nil {
				info = pending[d.CallID]
			}
			if info == nil {
				info = &ToolInfo{ID: d.CallID, Name: d.Name, Title: d.Name}
			}
			ti := *info
			ti.Result, ti.IsError = d.Content, d.IsError
			ti.Status = ToolStatus(d.IsError, ti.Refused)
			delete(pending, d.CallID)
			out = append(out, Item{Kind: ItemTool, Turn: ev.Turn, Tool: &ti})
		case EventNotice:
			var d NoticeData
			if json.Unmarshal(ev.Data, &d) == nil {
				out = append(out, Item{Kind: ItemNotice, Turn: ev.Turn, Text: d.Text})
			}
		case EventTurnError:
			var d TurnErrorData
			if json.Unmarshal(ev.Data, &d) == nil {
				out = append(out, Item{Kind: ItemError, Turn: ev.Turn, Text: fmt.Sprintf("turn %s: %s", d.Status, d.Error)})
			}
		}
	}
	return out
}

// LoggedUsage sums the usage recorded in a session's assistant events, on
// every branch.
func LoggedUsage(evs []session.Event) provider.Usage {
	var total provider.Usage
	for _, ev := range evs {
		if ev.Type != EventAssistant || !bytes.Contains(ev.Data, []byte(`"usage"`)) {
			continue
		}
		// Only the usage: decoding the whole message of every reply made
		// opening a long session slow.
		var d struct {
			Usage *provider.Usage `json:"usage"`
		}
		if json.Unmarshal(ev.Data, &d) == nil && d.Usage != nil {
			total = total.Add(*d.Usage)
		}
	}
	return total
}
