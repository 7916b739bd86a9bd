// Package provider defines the model-facing contract of yolop: the message
// types the agent stores and replays, and the Provider interface that the
// sim, OpenAI-compatible and Anthropic back ends implement.
//
// Messages are provider-neutral. Reasoning artifacts carry the name of the
// provider that produced them; each provider sends back only its own
// artifacts and drops the rest, because signatures and opaque blobs are only
// meaningful to their issuer.
package provider

import (
	"context"
	"encoding/json"
	"net/http"
)

// Role names the author of a message.
type Role string

// The roles a Message can have. System prompts travel in Request.System.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Provider names accepted by Resolve and New.
const (
	NameSim       = "sim"
	NameOpenAI    = "openai"
	NameAnthropic = "anthropic"
)

// Message is one entry of the model context.
type Message struct {
	Role       Role        `json:"role"`
	Text       string      `json:"text,omitempty"`
	ToolCalls  []ToolCall  `json:"tool_calls,omitempty"`   // assistant
	ToolCallID string      `json:"tool_call_id,omitempty"` // tool
	ToolName   string      `json:"tool_name,omitempty"`    // tool
	IsError    bool        `json:"is_error,omitempty"`     // tool
	Reasoning  []Reasoning `json:"reasoning,omitempty"`    // assistant: reasoning artifacts of this turn
}

// ToolCall is a tool invocation requested by the model. Arguments is the raw
// JSON text as the model produced it; it may be malformed, and the tool runner
// reports that back to the model as a tool result.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Reasoning is a reasoning artifact (thinking text, its signature, or an
// opaque redacted blob). Artifacts are sent back only to the provider named
// in Provider.
type Reasoning struct {
	Provider  string `json:"provider"`
	Text      string `json:"text,omitempty"`
	Signature string `json:"signature,omitempty"`
	Redacted  string `json:"redacted,omitempty"`
}

// ToolSpec describes a tool offered to the model. Parameters is a JSON schema
// object.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Request is one model call: the fully materialized context. Providers never
// rely on server-side continuation state, so a rewound conversation cannot
// leak back into the model.
type Request struct {
	Model    string     `json:"model"`
	System   string     `json:"system,omitempty"`
	Messages []Message  `json:"messages"`
	Tools    []ToolSpec `json:"tools,omitempty"`
}

// Delta is a streamed fragment, for display only; the authoritative result is
// the Response returned by Stream.
type Delta struct {
	Text      string
	Reasoning string
}

// Usage counts tokens as the provider reported them. InputTokens are the
// input tokens processed anew; tokens read from or written to the
// provider's prompt cache are counted apart, so the whole prompt is
// InputTokens + CacheReadTokens + CacheWriteTokens.
type Usage struct {
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens"`
	CacheWriteTokens int `json:"cache_write_tokens"`
}

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{InputTokens: u.InputTokens + v.InputTokens, OutputTokens: u.OutputTokens + v.OutputTokens,
		CacheReadTokens: u.CacheReadTokens + v.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens}
}

// Prompt is the size of the prompt that was sent, in tokens.
func (u Usage) Prompt() int { return u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens }

// IsZero reports whether nothing was reported.
func (u Usage) IsZero() bool { return u == Usage{} }

// Response is the complete assistant message of one model step.
type Response struct {
	Message    Message
	StopReason string
	Usage      Usage
}

// Provider is a model back end.
type Provider interface {
	// Name is "sim", "openai" or "anthropic".
	Name() string
	// Model is the model id requests are sent to.
	Model() string
	// Stream runs one model step, reporting fragments through onDelta (which
	// may be nil), and returns the complete assistant message. When ctx is
	// cancelled it returns ctx.Err().
	Stream(ctx context.Context, req Request, onDelta func(Delta)) (Response, error)
	// Compact returns a summary text that replaces req.Messages in later
	// context; the agent stores it as the opaque replacement.
	Compact(ctx context.Context, req Request) (string, error)
}

// Config selects and configures a provider. Resolve fills it from flags,
// environment and the settings file.
type Config struct {
	Provider string
	Model    string
	BaseURL  string
	APIKey   string
	// TracePath is the YOLOP_TRACE_REQUESTS file; empty disables tracing.
	TracePath string
	// ThinkingBudget enables Anthropic extended thinking with this many
	// budget tokens; 0 disables it.
	ThinkingBudget int
	// HTTPClient overrides the HTTP client (tests, proxies); nil uses a
	// client with Timeouts.Connect. Either way every request is watched
	// for the first-byte and idle timeouts.
	HTTPClient *http.Client
	// ContextWindow is the model's context window in tokens; 0 when
	// unknown (set context_window in the provider's settings table for
	// local models).
	ContextWindow int
	// Timeouts bounds the waits on the network (zero fields: defaults).
	Timeouts Timeouts
	// NoKey says that no provider was named (flag, environment or
	// settings) and no API key was found, so the offline sim answers.
	NoKey bool
}

// NoKeyNotice is what a user who named no provider and set no key (NoKey)
// is told when the provider named name answers: that the offline sim does
// ("" otherwise).
func (c Config) NoKeyNotice(name string) string {
	if !c.NoKey || name != NameSim {
		return ""
	}
	return "no API key set: the offline sim provider answers (set ANTHROPIC_API_KEY or OPENAI_API_KEY, or an api_key in settings.toml; --provider sim says you mean it)"
}

// Stop reasons, normalized across providers. The agent loop should still
// decide on len(Message.ToolCalls), which is authoritative.
const (
	StopEndTurn   = "end_turn"
	StopToolUse   = "tool_use"
	StopMaxTokens = "max_tokens"
)
