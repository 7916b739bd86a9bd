// Package anthropic is the Anthropic Messages provider: streaming,
// tool_use/tool_result blocks, and extended thinking. Thinking and
// redacted_thinking blocks are kept as Reasoning artifacts of the assistant
// message (Provider "anthropic") and sent back verbatim, signature included,
// on later requests; the API requires that for tool use with thinking.
// Artifacts of other providers are dropped.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/yolop-dev/yolop/internal/provider"
)

// DefaultBaseURL is used when the config names none.
const DefaultBaseURL = "https://api.anthropic.com"

// defaultMaxTokens bounds one reply; the thinking budget comes on top.
const defaultMaxTokens = 8192

// minThinkingBudget is the smallest budget the API accepts.
const minThinkingBudget = 1024

func init() {
	provider.Register(provider.NameAnthropic, func(cfg provider.Config) (provider.Provider, error) {
		return New(cfg)
	})
}

// Provider talks to the Messages API.
type Provider struct {
	client  sdk.Client
	model   string
	baseURL string
	budget  int
	trace   *provider.Trace
}

var _ provider.Provider = (*Provider)(nil)

// New returns a provider for cfg.
func New(cfg provider.Config) (*Provider, error) {
	if cfg.APIKey == "" {
		return nil, errors.New("anthropic: no API key; set ANTHROPIC_API_KEY or [anthropic] api_key in ~/.config/yolop/settings.toml")
	}
	if cfg.ThinkingBudget != 0 && cfg.ThinkingBudget < minThinkingBudget {
		return nil, fmt.Errorf("anthropic: thinking budget %d is below the API minimum of %d tokens; use 0 to disable thinking", cfg.ThinkingBudget, minThinkingBudget)
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	model := cfg.Model
	if model == "" {
		model = provider.DefaultAnthropicModel
	}
	// Without environment defaults the SDK does not pick up ANTHROPIC_* on
	// its own: configuration comes only through provider.Resolve.
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(base),
		option.WithAPIKey(cfg.APIKey),
	}
	opts = append(opts, option.WithHTTPClient(provider.HTTPClient(cfg.HTTPClient, cfg.Timeouts)))
	return &Provider{
		client:  sdk.NewClient(opts...),
		model:   model,
		baseURL: base,
		budget:  cfg.ThinkingBudget,
		trace:   provider.NewTrace(cfg.TracePath),
	}, nil
}

// Name implements provider.Provider.
func (p *Provider) Name() string { return provider.NameAnthropic }

// Model implements provider.Provider.
func (p *Provider) Model() string { return p.model }

// Stream implements provider.Provider.
func (p *Provider) Stream(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	params, err := p.params(req, "")
	if err != nil {
		return provider.Response{}, err
	}
	if p.budget > 0 {
		params.Thinking = sdk.ThinkingConfigParamOfEnabled(int64(p.budget))
		params.MaxTokens += int64(p.budget)
	}
	return p.run(ctx, params, "", onDelta)
}

// Compact implements provider.Provider by asking for a summary with tools
// offered (earlier tool_use blocks require their definitions) but disabled.
func (p *Provider) Compact(ctx context.Context, req provider.Request) (string, error) {
	params, err := p.params(req, provider.CompactInstruction)
	if err != nil {
		return "", err
	}
	if len(params.Tools) > 0 {
		params.ToolChoice = sdk.ToolChoiceUnionParam{OfNone: &sdk.ToolChoiceNoneParam{}}
	}
	resp, err := p.run(ctx, params, "compact", nil)
	if err != nil {
		return "", err
	}
	summary := strings.TrimSpace(resp.Message.Text)
	if summary == "" {
		return "", errors.New("anthropic: compaction returned an empty summary")
	}
	return summary, nil
}

// turn is one wire message under construction.
type turn struct {
	user   bool
	blocks []sdk.ContentBlockParamUnion
}

// params converts a provider request. Consecutive messages of the same wire
// role are merged, because every tool_result of one assistant step must sit
// in the single user message that follows it. extra, when set, is appended
// as a final user text.
func (p *Provider) params(req provider.Request, extra string) (sdk.MessageNewParams, error) {
	model := req.Model
	if model == "" {
		model = p.model
	}
	params := sdk.MessageNewParams{
		Model:     sdk.Model(model),
		MaxTokens: defaultMaxTokens,
	}
	if req.System != "" {
		params.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	var turns []turn
	add := func(user bool, blocks ...sdk.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(turns); n > 0 && turns[n-1].user == user {
			turns[n-1].blocks = append(turns[n-1].blocks, blocks...)
			return
		}
		turns = append(turns, turn{user: user, blocks: blocks})
	}
	for i, m := range req.Messages {
		switch m.Role {
		case provider.RoleUser:
			// The API rejects empty text blocks.
			if m.Text != "" {
				add(true, sdk.NewTextBlock(m.Text))
			}
		case provider.RoleTool:
			r := sdk.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if m.Text != "" {
				r.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: m.Text}}}
			}
			if m.IsError {
				r.IsError = sdk.Bool(true)
			}
			add(true, sdk.ContentBlockParamUnion{OfToolResult: &r})
		case provider.RoleAssistant:
			var blocks []sdk.ContentBlockParamUnion
			for _, r := range m.Reasoning {
				if r.Provider != provider.NameAnthropic {
					continue
				}
				if r.Redacted != "" {
					blocks = append(blocks, sdk.NewRedactedThinkingBlock(r.Redacted))
				} else {
					blocks = append(blocks, sdk.NewThinkingBlock(r.Signature, r.Text))
				}
			}
			if m.Text != "" {
				blocks = append(blocks, sdk.NewTextBlock(m.Text))
			}
			for _, c := range m.ToolCalls {
				blocks = append(blocks, sdk.NewToolUseBlock(c.ID, toolInput(c.Arguments), c.Name))
			}
			add(false, blocks...)
		default:
			return params, fmt.Errorf("anthropic: message %d has unknown role %q", i+1, m.Role)
		}
	}
	if extra != "" {
		add(true, sdk.NewTextBlock(extra))
	}
	for _, t := range turns {
		if t.user {
			params.Messages = append(params.Messages, sdk.NewUserMessage(t.blocks...))
		} else {
			params.Messages = append(params.Messages, sdk.NewAssistantMessage(t.blocks...))
		}
	}
	for _, t := range req.Tools {
		schema, err := inputSchema(t.Parameters)
		if err != nil {
			return params, fmt.Errorf("anthropic: tool %s: %w", t.Name, err)
		}
		tp := sdk.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = sdk.String(t.Description)
		}
		params.Tools = append(params.Tools, sdk.ToolUnionParam{OfTool: &tp})
	}
	return params, nil
}

// toolInput returns the arguments as the JSON object a tool_use block needs.
// Arguments that are not an object (a model from another provider produced
// malformed JSON, which the tool runner already reported) become {} so the
// rest of the conversation can still be sent.
func toolInput(args string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) != nil || obj == nil {
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(args)
}

// inputSchema maps a JSON schema object onto the SDK's schema type,
// keeping every keyword.
func inputSchema(raw json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	var s sdk.ToolInputSchemaParam
	if len(raw) == 0 {
		return s, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return s, fmt.Errorf("parameters are not a JSON object: %w", err)
	}
	for k, v := range m {
		switch k {
		case "type":
		case "properties":
			s.Properties = v
		case "required":
			if err := json.Unmarshal(v, &s.Required); err != nil {
				return s, fmt.Errorf("parameters.required is not a list of strings: %w", err)
			}
		default:
			if s.ExtraFields == nil {
				s.ExtraFields = map[string]any{}
			}
			s.ExtraFields[k] = v
		}
	}
	return s, nil
}

// block accumulates one streamed content block.
type block struct {
	typ       string
	text      strings.Builder
	thinking  strings.Builder
	signature strings.Builder
	data      string
	id, name  string
	input     strings.Builder
}

func (p *Provider) run(ctx context.Context, params sdk.MessageNewParams, op string, onDelta func(provider.Delta)) (provider.Response, error) {
	if onDelta == nil {
		onDelta = func(provider.Delta) {}
	}
	var callOpts []option.RequestOption
	if p.trace != nil {
		callOpts = append(callOpts, option.WithMiddleware(p.trace.Middleware(provider.NameAnthropic, op)))
	}
	// wctx ends the whole call (retries included) when the server stops
	// answering; ctx stays the caller's, whose cancellation is the user's.
	wctx, stopWatch := provider.Watch(ctx)
	defer stopWatch()
	stream := p.client.Messages.NewStreaming(wctx, params, callOpts...)
	defer stream.Close()

	var (
		blocks = map[int64]*block{}
		stop   string
		usage  provider.Usage
		done   bool
	)
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "message_start":
			u := ev.Message.Usage
			usage = provider.Usage{InputTokens: int(u.InputTokens), OutputTokens: int(u.OutputTokens),
				CacheReadTokens: int(u.CacheReadInputTokens), CacheWriteTokens: int(u.CacheCreationInputTokens)}
		case "content_block_start":
			cb := ev.ContentBlock
			b := &block{typ: cb.Type, data: cb.Data, id: cb.ID, name: cb.Name}
			b.text.WriteString(cb.Text)
			b.thinking.WriteString(cb.Thinking)
			b.signature.WriteString(cb.Signature)
			blocks[ev.Index] = b
		case "content_block_delta":
			b := blocks[ev.Index]
			if b == nil {
				return provider.Response{}, fmt.Errorf("anthropic: %s sent a delta for unknown content block %d", p.baseURL, ev.Index)
			}
			d := ev.Delta
			switch d.Type {
			case "text_delta":
				b.text.WriteString(d.Text)
				onDelta(provider.Delta{Text: d.Text})
			case "input_json_delta":
				b.input.WriteString(d.PartialJSON)
			case "thinking_delta":
				b.thinking.WriteString(d.Thinking)
				onDelta(provider.Delta{Reasoning: d.Thinking})
			case "signature_delta":
				b.signature.WriteString(d.Signature)
			}
		case "message_delta":
			if ev.Delta.StopReason != "" {
				stop = string(ev.Delta.StopReason)
			}
			if ev.Usage.OutputTokens > 0 {
				usage.OutputTokens = int(ev.Usage.OutputTokens)
			}
			if ev.Usage.InputTokens > 0 {
				usage.InputTokens = int(ev.Usage.InputTokens)
			}
			if ev.Usage.CacheReadInputTokens > 0 {
				usage.CacheReadTokens = int(ev.Usage.CacheReadInputTokens)
			}
			if ev.Usage.CacheCreationInputTokens > 0 {
				usage.CacheWriteTokens = int(ev.Usage.CacheCreationInputTokens)
			}
		case "message_stop":
			done = true
		}
	}
	if err := stream.Err(); err != nil {
		if ctx.Err() != nil {
			return provider.Response{}, ctx.Err()
		}
		if te := provider.Timeout(wctx, provider.NameAnthropic, p.baseURL); te != nil {
			return provider.Response{}, te
		}
		return provider.Response{}, p.describe(err)
	}
	if !done {
		if ctx.Err() != nil {
			return provider.Response{}, ctx.Err()
		}
		if te := provider.Timeout(wctx, provider.NameAnthropic, p.baseURL); te != nil {
			return provider.Response{}, te
		}
		return provider.Response{}, fmt.Errorf("anthropic: %s closed the stream before the response was complete (no message_stop); the turn can be retried", p.baseURL)
	}

	msg := provider.Message{Role: provider.RoleAssistant}
	idx := make([]int64, 0, len(blocks))
	for i := range blocks {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	var text strings.Builder
	for _, i := range idx {
		b := blocks[i]
		switch b.typ {
		case "text":
			text.WriteString(b.text.String())
		case "thinking":
			msg.Reasoning = append(msg.Reasoning, provider.Reasoning{Provider: provider.NameAnthropic, Text: b.thinking.String(), Signature: b.signature.String()})
		case "redacted_thinking":
			msg.Reasoning = append(msg.Reasoning, provider.Reasoning{Provider: provider.NameAnthropic, Redacted: b.data})
		case "tool_use":
			args := b.input.String()
			if args == "" {
				// A tool without parameters streams no input deltas.
				args = "{}"
			}
			msg.ToolCalls = append(msg.ToolCalls, provider.ToolCall{ID: b.id, Name: b.name, Arguments: args})
		}
	}
	msg.Text = text.String()
	return provider.Response{Message: msg, StopReason: stop, Usage: usage}, nil
}

// describe turns SDK and transport errors into messages that say what went
// wrong and what to do.
func (p *Provider) describe(err error) error {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		var body struct {
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		detail := strings.TrimSpace(apiErr.RawJSON())
		if json.Unmarshal([]byte(apiErr.RawJSON()), &body) == nil && body.Error.Message != "" {
			detail = body.Error.Type + ": " + body.Error.Message
		}
		switch {
		case apiErr.StatusCode < 400:
			// An error event inside a stream that began with HTTP 200.
			return fmt.Errorf("anthropic: %s reported an error mid-stream (%s); the turn can be retried", p.baseURL, detail)
		case apiErr.StatusCode == 401:
			return fmt.Errorf("anthropic: API key rejected by %s (HTTP 401: %s); check ANTHROPIC_API_KEY or [anthropic] api_key in the settings", p.baseURL, detail)
		case apiErr.StatusCode == 403:
			return fmt.Errorf("anthropic: access denied by %s (HTTP 403: %s); the key may lack access to model %q", p.baseURL, detail, p.model)
		case apiErr.StatusCode == 404:
			return fmt.Errorf("anthropic: %s answered HTTP 404 (%s); check the base URL and that model %q exists", p.baseURL, detail, p.model)
		case apiErr.StatusCode == 429:
			return fmt.Errorf("anthropic: rate limited at %s (HTTP 429: %s); wait and retry", p.baseURL, detail)
		case apiErr.StatusCode == 529:
			return fmt.Errorf("anthropic: %s is overloaded (HTTP 529: %s); retry later", p.baseURL, detail)
		}
		return fmt.Errorf("anthropic: %s answered HTTP %d: %s", p.baseURL, apiErr.StatusCode, detail)
	}
	if strings.HasPrefix(err.Error(), "received error while streaming") {
		return fmt.Errorf("anthropic: %s reported an error mid-stream: %s", p.baseURL, strings.TrimPrefix(err.Error(), "received error while streaming: "))
	}
	var te *provider.TimeoutError
	if errors.As(err, &te) {
		out := *te
		out.Provider, out.URL = provider.NameAnthropic, p.baseURL
		return &out
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("anthropic: the connection to %s broke mid-stream; the turn can be retried: %w", p.baseURL, err)
	}
	if provider.IsMalformed(err) {
		return &provider.MalformedError{Provider: provider.NameAnthropic, URL: p.baseURL, Err: err}
	}
	return fmt.Errorf("anthropic: request to %s: %w", p.baseURL, err)
}
