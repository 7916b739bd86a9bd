package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/mcp"
)

// JSON-RPC error codes.
const (
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternal       = -32603
)

func rpcError(code int, format string, args ...any) *sdk.RequestError {
	return &sdk.RequestError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// supported lists the methods yolop answers, for method-not-found errors.
const supported = "initialize, session/new, session/load, session/prompt, session/cancel, session/close"

// handle dispatches one inbound message. method carries the request id
// after idSep for requests (see inbound); notifications have none.
func (s *server) handle(ctx context.Context, method string, params json.RawMessage) (any, *sdk.RequestError) {
	name, id, _ := strings.Cut(method, idSep)
	<-s.ready
	if !s.enter() {
		return nil, rpcError(codeInternal, "yolop is shutting down")
	}
	defer s.wg.Done()

	switch name {
	case sdk.AgentMethodInitialize:
		var p sdk.InitializeRequest
		if e := decode(params, &p); e != nil {
			return nil, e
		}
		return s.initialize(p), nil
	case sdk.AgentMethodAuthenticate:
		return nil, rpcError(codeInvalidParams, "yolop needs no authentication: initialize advertises no auth methods, so there is nothing to authenticate with")
	case sdk.AgentMethodSessionNew:
		var p sdk.NewSessionRequest
		if e := decode(params, &p); e != nil {
			return nil, e
		}
		return s.newSession(ctx, id, p)
	case sdk.AgentMethodSessionLoad:
		var p sdk.LoadSessionRequest
		if e := decode(params, &p); e != nil {
			return nil, e
		}
		return s.loadSession(ctx, id, p)
	case sdk.AgentMethodSessionPrompt:
		var p sdk.PromptRequest
		if e := decode(params, &p); e != nil {
			return nil, e
		}
		return s.prompt(ctx, p)
	case sdk.AgentMethodSessionCancel:
		var p sdk.CancelNotification
		if e := decode(params, &p); e != nil {
			return nil, e
		}
		s.cancel(p)
		return nil, nil
	case sdk.AgentMethodSessionClose:
		var p sdk.CloseSessionRequest
		if e := decode(params, &p); e != nil {
			return nil, e
		}
		return s.closeSession(p)
	case sdk.AgentMethodSessionSetMode:
		return nil, rpcError(codeMethodNotFound, "session/set_mode is not supported: yolop has no session modes (tools run without approval; every turn is checkpointed)")
	case sdk.AgentMethodSessionSetConfigOption:
		return nil, rpcError(codeMethodNotFound, "session/set_config_option is not supported: yolop advertises no config options; choose the provider and model with yolop's --provider and --model flags")
	case sdk.AgentMethodSessionList:
		return nil, rpcError(codeMethodNotFound, "session/list is not supported over ACP: run `yolop sessions list` to find a session id, then session/load it")
	}
	e := rpcError(codeMethodNotFound, "method not found: %s (yolop supports %s)", name, supported)
	e.Data = map[string]any{"method": name}
	return nil, e
}

// decode unmarshals and validates a request's params.
func decode(params json.RawMessage, into any) *sdk.RequestError {
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	if err := json.Unmarshal(params, into); err != nil {
		return rpcError(codeInvalidParams, "invalid params: %v", err)
	}
	if v, ok := into.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return rpcError(codeInvalidParams, "invalid params: %v", err)
		}
	}
	return nil
}

func (s *server) initialize(p sdk.InitializeRequest) sdk.InitializeResponse {
	client := "unknown client"
	if p.ClientInfo != nil {
		client = p.ClientInfo.Name + " " + p.ClientInfo.Version
	}
	s.log.Info("initialize", "client", client, "protocol", p.ProtocolVersion)
	// The agent answers with the version it speaks; a client that cannot
	// speak it disconnects.
	return sdk.InitializeResponse{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		AgentInfo:       &sdk.Implementation{Name: "yolop", Version: version()},
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession:         true,
			McpCapabilities:     sdk.McpCapabilities{Http: true},
			SessionCapabilities: sdk.SessionCapabilities{Close: &sdk.SessionCloseCapabilities{}},
		},
		AuthMethods: []sdk.AuthMethod{},
	}
}

func (s *server) newSession(ctx context.Context, reqID string, p sdk.NewSessionRequest) (any, *sdk.RequestError) {
	if !filepath.IsAbs(p.Cwd) {
		return nil, rpcError(codeInvalidParams, "cwd must be an absolute path, got %q", p.Cwd)
	}
	servers, e := mcpServers(p.McpServers)
	if e != nil {
		return nil, e
	}
	sess, err := s.opener.New(ctx, p.Cwd, servers)
	if err != nil {
		return nil, rpcError(codeInternal, "create session in %s: %s", p.Cwd, command.ErrorText(err))
	}
	l := &live{sess: sess}
	if e := s.add(l); e != nil {
		return nil, e
	}
	s.log.Info("session created", "session", sess.ID(), "cwd", p.Cwd)
	s.afterResponse(reqID, l)
	return sdk.NewSessionResponse{SessionId: sdk.SessionId(sess.ID())}, nil
}

func (s *server) loadSession(ctx context.Context, reqID string, p sdk.LoadSessionRequest) (any, *sdk.RequestError) {
	id := string(p.SessionId)
	if id == "" {
		return nil, rpcError(codeInvalidParams, "sessionId is required")
	}
	if !filepath.IsAbs(p.Cwd) {
		return nil, rpcError(codeInvalidParams, "cwd must be an absolute path, got %q", p.Cwd)
	}
	l := s.get(id)
	if l != nil && l.running() {
		return nil, rpcError(codeInvalidRequest, "session %s is running a turn: wait for its session/prompt response or send session/cancel, then load it again", id)
	}
	if l == nil {
		servers, e := mcpServers(p.McpServers)
		if e != nil {
			return nil, e
		}
		sess, err := s.opener.Load(ctx, id, p.Cwd, servers)
		if err != nil {
			return nil, rpcError(codeInternal, "load session %s: %s", id, command.ErrorText(err))
		}
		l = &live{sess: sess}
		if e := s.add(l); e != nil {
			return nil, e
		}
		s.log.Info("session loaded", "session", id)
	}
	// The client rebuilds its view from these notifications, so they must
	// all precede the response; they are sent synchronously here.
	for _, u := range replay(l.sess.Transcript(), l.sess.Info().ActiveRoot) {
		s.send(id, u)
	}
	s.afterResponse(reqID, l)
	return sdk.LoadSessionResponse{}, nil
}

// add registers an opened session, or closes it when the server is
// stopping or the id is already open.
func (s *server) add(l *live) *sdk.RequestError {
	id := l.sess.ID()
	s.mu.Lock()
	_, dup := s.sessions[id]
	closing := s.closing
	if !dup && !closing {
		s.sessions[id] = l
	}
	s.mu.Unlock()
	if !dup && !closing {
		return nil
	}
	if err := l.sess.Close(); err != nil {
		s.log.Warn("close session", "session", id, "err", err)
	}
	if closing {
		return rpcError(codeInternal, "yolop is shutting down")
	}
	return rpcError(codeInvalidRequest, "session %s is already open on this connection", id)
}

func (s *server) get(id string) *live {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

// afterResponse sends what a client needs once it knows the session
// (available commands, notes about the session's state) after the response
// to request reqID has been written: a client cannot attribute session
// updates for a session id it has not yet been told.
func (s *server) afterResponse(reqID string, l *live) {
	if reqID == "" {
		return
	}
	written := s.out.afterResponse(reqID)
	id := l.sess.ID()
	notes := sessionNotes(l.sess.Info())
	s.wg.Add(1) // the caller is a running handler, so the count is not zero
	go func() {
		defer s.wg.Done()
		select {
		case <-written:
		case <-s.conn.Done():
			s.out.forget(reqID)
			return
		case <-s.base.Done():
			s.out.forget(reqID)
			return
		}
		s.send(id, availableCommands())
		if notes != "" {
			s.send(id, sdk.UpdateAgentMessageText(notes))
		}
	}()
}

func (s *server) send(sessionID string, u sdk.SessionUpdate) {
	// Not the turn's context: updates that describe a cancelled turn must
	// still reach the client.
	err := s.conn.SendNotification(context.Background(), sdk.ClientMethodSessionUpdate,
		sdk.SessionNotification{SessionId: sdk.SessionId(sessionID), Update: u})
	if err != nil {
		s.log.Warn("send session/update", "session", sessionID, "err", err)
	}
}

func (s *server) say(sessionID, text string) {
	s.send(sessionID, sdk.UpdateAgentMessageText(text))
}

func unknownSession(id string) *sdk.RequestError {
	return rpcError(codeInvalidParams, "unknown session %q: create one with session/new or open it with session/load", id)
}

func (s *server) prompt(ctx context.Context, p sdk.PromptRequest) (any, *sdk.RequestError) {
	id := string(p.SessionId)
	l := s.get(id)
	if l == nil {
		return nil, unknownSession(id)
	}
	text, e := promptText(p.Prompt)
	if e != nil {
		return nil, e
	}
	if strings.TrimSpace(text) == "" {
		return nil, rpcError(codeInvalidParams, "the prompt is empty")
	}

	turnCtx, cancel := context.WithCancel(ctx)
	defer context.AfterFunc(s.base, cancel)()
	switch err := l.begin(cancel); {
	case errors.Is(err, errBusy):
		cancel()
		return nil, rpcError(codeInvalidRequest, "session %s is already running a turn: wait for its session/prompt response or send session/cancel first", id)
	case err != nil:
		cancel()
		return nil, unknownSession(id)
	}
	defer l.end()

	var stop sdk.StopReason
	if command.IsCommand(text) {
		stop, e = s.runCommand(turnCtx, l, text)
	} else {
		stop, e = s.runTurn(turnCtx, l, command.Prompt(text))
	}
	if e != nil {
		return nil, e
	}
	return sdk.PromptResponse{StopReason: stop}, nil
}

// promptText flattens the prompt's content blocks into the text the agent
// sees. Text and resource links are the baseline every agent supports;
// initialize advertises nothing else.
func promptText(blocks []sdk.ContentBlock) (string, *sdk.RequestError) {
	var b strings.Builder
	for _, c := range blocks {
		switch {
		case c.Text != nil:
			b.WriteString(c.Text.Text)
		case c.ResourceLink != nil:
			b.WriteString(linkText(c.ResourceLink.Uri))
		case c.Image != nil:
			return "", rpcError(codeInvalidParams, "image content is not supported: send text (initialize advertises no image capability)")
		case c.Audio != nil:
			return "", rpcError(codeInvalidParams, "audio content is not supported: send text (initialize advertises no audio capability)")
		case c.Resource != nil:
			return "", rpcError(codeInvalidParams, "embedded resources are not supported: send a resource link instead (initialize advertises no embeddedContext capability)")
		}
	}
	return b.String(), nil
}

// linkText shows a file link as its path, the way a user would type it.
func linkText(uri string) string {
	if u, err := url.Parse(uri); err == nil && u.Scheme == "file" && u.Path != "" {
		return u.Path
	}
	return uri
}

func (s *server) runTurn(ctx context.Context, l *live, text string) (sdk.StopReason, *sdk.RequestError) {
	id := l.sess.ID()
	out := &turnOut{s: s, session: id, root: l.sess.Info().ActiveRoot, started: map[string]bool{}}
	res, err := l.sess.Prompt(ctx, text, out.update)
	sawError := out.finish()
	if err != nil {
		if msg, ok := refusal(err); ok {
			s.say(id, msg)
			return sdk.StopReasonEndTurn, nil
		}
		if ctx.Err() != nil {
			return sdk.StopReasonCancelled, nil
		}
		return "", rpcError(codeInternal, "turn failed: %s", command.ErrorText(err))
	}
	stop := sdk.StopReasonEndTurn
	switch res.Status {
	case "cancelled":
		stop = sdk.StopReasonCancelled
	case "failed", "interrupted":
		if !sawError && res.Error != "" {
			s.say(id, "\nThe turn failed: "+res.Error+"\n")
		}
	}
	for _, w := range res.Warnings {
		s.say(id, "\n\nWarning: "+w+"\n")
	}
	if res.Pending != nil {
		s.say(id, "\n\nThe model asked for a restore. Nothing has changed yet.\n\n"+previewText(res.Pending))
	}
	s.sendUsage(id, l.sess.Info())
	return stop, nil
}

// sendUsage tells the client how full the model context is (usage_update),
// when both the window and the last reported size are known.
func (s *server) sendUsage(id string, in app.Info) {
	if in.ContextWindow <= 0 || in.ContextTokens <= 0 {
		return
	}
	s.send(id, sdk.SessionUpdate{UsageUpdate: &sdk.SessionUsageUpdate{SessionUpdate: "usage_update", Used: in.ContextTokens, Size: in.ContextWindow}})
}

func (s *server) runCommand(ctx context.Context, l *live, text string) (sdk.StopReason, *sdk.RequestError) {
	id := l.sess.ID()
	cmd, err := command.Parse(text)
	if err != nil {
		msg, _ := refusal(err)
		s.say(id, msg)
		return sdk.StopReasonEndTurn, nil
	}
	if d, _ := command.Lookup(cmd.Name); d.Hosts&command.HostACP == 0 {
		s.say(id, fmt.Sprintf("/%s is not available in an editor. Commands here: %s", cmd.Name, acpCommandNames()))
		return sdk.StopReasonEndTurn, nil
	}
	res, err := l.sess.Exec(ctx, cmd)
	if err != nil {
		if msg, ok := refusal(err); ok {
			s.say(id, msg)
			return sdk.StopReasonEndTurn, nil
		}
		if ctx.Err() != nil {
			return sdk.StopReasonCancelled, nil
		}
		return "", rpcError(codeInternal, "/%s failed: %s", cmd.Name, command.ErrorText(err))
	}
	s.say(id, resultText(res))
	return sdk.StopReasonEndTurn, nil
}

// refusal renders an error the user can act on; false for other errors.
func refusal(err error) (string, bool) {
	var ce *checkpoint.Error
	if errors.As(err, &ce) {
		return fmt.Sprintf("Refused (%s): %s", ce.Code, ce.Msg), true
	}
	var ue *command.UsageError
	if errors.As(err, &ue) {
		return "Usage: " + ue.Msg, true
	}
	return "", false
}

func (s *server) cancel(p sdk.CancelNotification) {
	id := string(p.SessionId)
	l := s.get(id)
	switch {
	case l == nil:
		s.log.Warn("session/cancel for an unknown session", "session", id)
	case l.cancelTurn():
		s.log.Info("turn cancelled", "session", id)
	}
}

func (s *server) closeSession(p sdk.CloseSessionRequest) (any, *sdk.RequestError) {
	id := string(p.SessionId)
	s.mu.Lock()
	l := s.sessions[id]
	delete(s.sessions, id)
	s.mu.Unlock()
	if l == nil {
		return nil, unknownSession(id)
	}
	if done := l.retire(); done != nil {
		<-done
	}
	if err := l.sess.Close(); err != nil {
		return nil, rpcError(codeInternal, "close session %s: %v", id, err)
	}
	s.log.Info("session closed", "session", id)
	return sdk.CloseSessionResponse{}, nil
}

// mcpServers converts the client's MCP servers (stdio and HTTP).
func mcpServers(in []sdk.McpServer) ([]mcp.Server, *sdk.RequestError) {
	var out []mcp.Server
	for _, m := range in {
		var s mcp.Server
		switch {
		case m.Stdio != nil:
			s = mcp.Server{Name: m.Stdio.Name, Command: m.Stdio.Command, Args: m.Stdio.Args, Env: map[string]string{}}
			for _, e := range m.Stdio.Env {
				s.Env[e.Name] = e.Value
			}
		case m.Http != nil:
			s = mcp.Server{Name: m.Http.Name, URL: m.Http.Url, Headers: map[string]string{}}
			for _, h := range m.Http.Headers {
				s.Headers[h.Name] = h.Value
			}
		default:
			return nil, rpcError(codeInvalidParams, "mcpServers: only stdio and http servers are supported (initialize advertises http)")
		}
		if err := s.Validate(); err != nil {
			return nil, rpcError(codeInvalidParams, "mcpServers: %v", err)
		}
		out = append(out, s)
	}
	return out, nil
}
