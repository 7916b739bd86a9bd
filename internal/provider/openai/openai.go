// Package openai is the OpenAI-compatible Chat Completions provider: OpenAI
// itself and any server speaking the same wire format behind a base URL
// (OpenRouter, Ollama, vLLM, llama.cpp).
//
// Every request carries the full materialized message list; no server-side
// continuation ids are used, so rewound turns can never resurface. Reasoning
// artifacts from other providers are dropped: Chat Completions has no field
// for them. Reasoning text that some servers stream (reasoning_content,
// reasoning) is shown through Delta.Reasoning but not stored, because those
// servers ask for it not to be sent back.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/yolop-dev/yolop/internal/provider"
)

// DefaultBaseURL is used when the config names none.
const DefaultBaseURL = "https://api.openai.com/v1"

func init() {
	provider.Register(provider.NameOpenAI, func(cfg provider.Config) (provider.Provider, error) {
		return New(cfg)
	})
}

// Provider talks to a Chat Completions endpoint.
type Provider struct {
	client  sdk.Client
	model   string
	baseURL string
	trace   *provider.Trace
}

var _ provider.Provider = (*Provider)(nil)

// New returns a provider for cfg. An empty APIKey is allowed only together
// with a BaseURL (local servers do not check keys).
func New(cfg provider.Config) (*Provider, error) {
	if cfg.APIKey == "" && cfg.BaseURL == "" {
		return nil, errors.New("openai: no API key; set OPENAI_API_KEY or [openai] api_key in ~/.config/yolop/settings.toml")
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	model := cfg.Model
	if model == "" {
		model = provider.DefaultOpenAIModel
	}
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithAPIKey(cfg.APIKey),
	}
	opts = append(opts, option.WithHTTPClient(provider.HTTPClient(cfg.HTTPClient, cfg.Timeouts)))
	return &Provider{
		client:  sdk.NewClient(opts...),
		model:   model,
		baseURL: base,
		trace:   provider.NewTrace(cfg.TracePath),
	}, nil
}

// Name implements provider.Provider.
func (p *Provider) Name() string { return provider.NameOpenAI }

// Model implements provider.Provider.
func (p *Provider) Model() string { return p.model }

// Stream implements provider.Provider.
func (p *Provider) Stream(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	params, err := p.params(req)
	if err != nil {
		return provider.Response{}, err
	}
	return p.run(ctx, params, "", onDelta)
}

// Compact implements provider.Provider by asking the model for a summary of
// the conversation, with tools offered but disabled so that earlier tool
// calls stay valid.
func (p *Provider) Compact(ctx context.Context, req provider.Request) (string, error) {
	params, err := p.params(req)
	if err != nil {
		return "", err
	}
	params.Messages = append(params.Messages, sdk.UserMessage(provider.CompactInstruction))
	if len(params.Tools) > 0 {
		params.ToolChoice = sdk.ChatCompletionToolChoiceOptionUnionParam{OfAuto: sdk.String(string(sdk.ChatCompletionToolChoiceOptionAutoNone))}
	}
	resp, err := p.run(ctx, params, "compact", nil)
	if err != nil {
		return "", err
	}
	summary := strings.TrimSpace(resp.Message.Text)
	if summary == "" {
		return "", errors.New("openai: compaction returned an empty summary")
	}
	return summary, nil
}

// params converts a provider request to the wire parameters.
func (p *Provider) params(req provider.Request) (sdk.ChatCompletionNewParams, error) {
	model := req.Model
	if model == "" {
		model = p.model
	}
	params := sdk.ChatCompletionNewParams{
		Model:         shared.ChatModel(model),
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)},
	}
	if req.System != "" {
		params.Messages = append(params.Messages, sdk.SystemMessage(req.System))
	}
	for i, m := range req.Messages {
		switch m.Role {
		case provider.RoleUser:
			params.Messages = append(params.Messages, sdk.UserMessage(m.Text))
		case provider.RoleAssistant:
			a := sdk.ChatCompletionAssistantMessageParam{}
			if m.Text != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = sdk.String(m.Text)
			}
			for _, c := range m.ToolCalls {
				args := c.Arguments
				if args == "" {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: args},
					},
				})
			}
			params.Messages = append(params.Messages, sdk.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case provider.RoleTool:
			params.Messages = append(params.Messages, sdk.ToolMessage(m.Text, m.ToolCallID))
		default:
			return params, fmt.Errorf("openai: message %d has unknown role %q", i+1, m.Role)
		}
	}
	for _, t := range req.Tools {
		fn := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fn.Description = sdk.String(t.Description)
		}
		if len(t.Parameters) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return params, fmt.Errorf("openai: tool %s: parameters are not a JSON object: %w", t.Name, err)
			}
			fn.Parameters = shared.FunctionParameters(schema)
		}
		params.Tools = append(params.Tools, sdk.ChatCompletionFunctionTool(fn))
	}
	return params, nil
}

// toolAcc accumulates one streamed tool call; the id and name arrive in the
// first fragment, the arguments in pieces.
type toolAcc struct {
	id, name string
	args     strings.Builder
}

func (p *Provider) run(ctx context.Context, params sdk.ChatCompletionNewParams, op string, onDelta func(provider.Delta)) (provider.Response, error) {
	if onDelta == nil {
		onDelta = func(provider.Delta) {}
	}
	var callOpts []option.RequestOption
	if p.trace != nil {
		callOpts = append(callOpts, option.WithMiddleware(p.trace.Middleware(provider.NameOpenAI, op)))
	}
	// wctx ends the whole call (retries included) when the server stops
	// answering; ctx stays the caller's, whose cancellation is the user's.
	wctx, stop := provider.Watch(ctx)
	defer stop()
	stream := p.client.Chat.Completions.NewStreaming(wctx, params, callOpts...)
	defer stream.Close()

	var (
		text   strings.Builder
		calls  = map[int64]*toolAcc{}
		finish string
		usage  provider.Usage
	)
	for stream.Next() {
		chunk := stream.Current()
		if chunk.JSON.Usage.Valid() {
			// prompt_tokens includes the tokens served from the cache.
			cached := int(chunk.Usage.PromptTokensDetails.CachedTokens)
			usage = provider.Usage{InputTokens: int(chunk.Usage.PromptTokens) - cached, OutputTokens: int(chunk.Usage.CompletionTokens), CacheReadTokens: cached}
		}
		for _, choice := range chunk.Choices {
			if choice.Index != 0 {
				continue
			}
			d := choice.Delta
			if s := extraString(d.JSON.ExtraFields, "reasoning_content", "reasoning"); s != "" {
				onDelta(provider.Delta{Reasoning: s})
			}
			if d.Content != "" {
				text.WriteString(d.Content)
				onDelta(provider.Delta{Text: d.Content})
			}
			if d.Refusal != "" {
				text.WriteString(d.Refusal)
				onDelta(provider.Delta{Text: d.Refusal})
			}
			for _, tc := range d.ToolCalls {
				a := calls[tc.Index]
				if a == nil {
					a = &toolAcc{}
					calls[tc.Index] = a
				}
				if tc.ID != "" {
					a.id = tc.ID
				}
				if tc.Function.Name != "" && a.name == "" {
					a.name = tc.Function.Name
				}
				a.args.WriteString(tc.Function.Arguments)
			}
			if choice.FinishReason != "" {
				finish = choice.FinishReason
			}
		}
	}
	if err := stream.Err(); err != nil {
		if ctx.Err() != nil {
			return provider.Response{}, ctx.Err()
		}
		if te := provider.Timeout(wctx, provider.NameOpenAI, p.baseURL); te != nil {
			return provider.Response{}, te
		}
		return provider.Response{}, p.describe(err)
	}
	if finish == "" {
		if ctx.Err() != nil {
			return provider.Response{}, ctx.Err()
		}
		if te := provider.Timeout(wctx, provider.NameOpenAI, p.baseURL); te != nil {
			return provider.Response{}, te
		}
		return provider.Response{}, fmt.Errorf("openai: %s closed the stream before the response was complete (no finish_reason); the turn can be retried", p.baseURL)
	}

	msg := provider.Message{Role: provider.RoleAssistant, Text: text.String()}
	idx := make([]int64, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	for _, i := range idx {
		a := calls[i]
		if a.name == "" {
			return provider.Response{}, fmt.Errorf("openai: tool call %d in the response has no function name", i)
		}
		id := a.id
		if id == "" {
			// Some local servers omit ids; tool results need one to pair with.
			id = fmt.Sprintf("call_%d", i)
		}
		msg.ToolCalls = append(msg.ToolCalls, provider.ToolCall{ID: id, Name: a.name, Arguments: a.args.String()})
	}
	return provider.Response{Message: msg, StopReason: stopReason(finish), Usage: usage}, nil
}

func stopReason(finish string) string {
	switch finish {
	case "tool_calls", "function_call":
		return provider.StopToolUse
	case "length":
		return provider.StopMaxTokens
	case "stop":
		return provider.StopEndTurn
	}
	return finish
}

// extraString returns the first of the named extra fields that holds a
// non-empty JSON string.
func extraString(fields map[string]respjson.Field, names ...string) string {
	for _, n := range names {
		f, ok := fields[n]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// describe turns SDK and transport errors into messages that say what went
// wrong and what to do.
func (p *Provider) describe(err error) error {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		detail := apiErr.Message
		if detail == "" {
			detail = strings.TrimSpace(apiErr.RawJSON())
		}
		switch apiErr.StatusCode {
		case 401:
			return fmt.Errorf("openai: API key rejected by %s (HTTP 401: %s); check OPENAI_API_KEY or [openai] api_key in the settings", p.baseURL, detail)
		case 403:
			return fmt.Errorf("openai: access denied by %s (HTTP 403: %s); the key may lack access to model %q", p.baseURL, detail, p.model)
		case 404:
			return fmt.Errorf("openai: %s answered HTTP 404 (%s); check the base URL and that model %q exists there", p.baseURL, detail, p.model)
		case 429:
			return fmt.Errorf("openai: rate limited or out of quota at %s (HTTP 429: %s); wait and retry", p.baseURL, detail)
		}
		return fmt.Errorf("openai: %s answered HTTP %d: %s", p.baseURL, apiErr.StatusCode, detail)
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		var ev struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		detail := se.Message
		if json.Unmarshal(se.Event.Data, &ev) == nil && ev.Error.Message != "" {
			detail = ev.Error.Message
		}
		return fmt.Errorf("openai: %s reported an error mid-stream: %s; the turn can be retried", p.baseURL, detail)
	}
	var te *provider.TimeoutError
	if errors.As(err, &te) {
		out := *te
		out.Provider, out.URL = provider.NameOpenAI, p.baseURL
		return &out
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("openai: the connection to %s broke mid-stream; the turn can be retried: %w", p.baseURL, err)
	}
	if provider.IsMalformed(err) {
		return &provider.MalformedError{Provider: provider.NameOpenAI, URL: p.baseURL, Err: err}
	}
	return fmt.Errorf("openai: request to %s: %w", p.baseURL, err)
}
