package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// maxMessage is the largest line accepted from the client. The SDK's reader
// gives up on the whole connection past 10 MiB; refusing the one message
// keeps the session alive and tells the client why.
const maxMessage = 8 << 20

// idSep joins a request's method and its id when the inbound filter tags a
// request (see inbound). A NUL never occurs in an ACP method name.
const idSep = "\x00"

// inbound sits between the client's stream and the SDK's reader. The SDK
// silently drops lines that are not JSON; JSON-RPC wants a parse error, so
// inbound answers those itself. It also tags every request's method with
// the request id ("session/new\x00" + id): the SDK hands a handler the
// method and params but not the id, and the id is what lets a handler
// schedule notifications that must follow its own response.
type inbound struct {
	src     *bufio.Reader
	out     *outbound
	log     *slog.Logger
	pending []byte // filtered bytes not yet handed to the SDK
	err     error  // the source's error, returned once pending is drained
}

func newInbound(r io.Reader, out *outbound, log *slog.Logger) *inbound {
	return &inbound{src: bufio.NewReaderSize(r, 64<<10), out: out, log: log}
}

func (in *inbound) Read(p []byte) (int, error) {
	for len(in.pending) == 0 {
		if in.err != nil {
			return 0, in.err
		}
		line, tooLong, err := in.readLine()
		if err != nil {
			in.err = err
		}
		switch {
		case tooLong:
			in.reject(nil, -32700, fmt.Sprintf("Parse error: message longer than %d bytes", maxMessage))
		case len(bytes.TrimSpace(line)) > 0:
			in.pending = in.filter(line)
		}
	}
	n := copy(p, in.pending)
	in.pending = in.pending[n:]
	return n, nil
}

// readLine returns the next line without its newline. A line longer than
// maxMessage is consumed and reported as tooLong.
func (in *inbound) readLine() (line []byte, tooLong bool, err error) {
	for {
		chunk, err := in.src.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > maxMessage+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), tooLong, err
	}
}

// envelope is the part of a JSON-RPC message inbound and outbound inspect.
type envelope struct {
	ID     json.RawMessage  `json:"id"`
	Method *string          `json:"method"`
	Result json.RawMessage  `json:"result"`
	Error  *json.RawMessage `json:"error"`
}

// filter returns the bytes to pass to the SDK for one client line, or nil
// after answering the line itself.
func (in *inbound) filter(line []byte) []byte {
	var env envelope
	if err := json.Unmarshal(line, &env); err != nil {
		in.reject(nil, -32700, "Parse error: "+err.Error())
		return nil
	}
	hasID := len(env.ID) > 0 && string(env.ID) != "null"
	switch {
	case env.Method == nil && hasID && env.Result == nil && env.Error == nil:
		in.reject(env.ID, -32600, "Invalid request: a request needs a method")
		return nil
	case env.Method == nil || !hasID:
		// A response to one of our requests, or a notification: untouched.
		return append(line, '\n')
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil {
		in.reject(nil, -32700, "Parse error: "+err.Error())
		return nil
	}
	if strings.Contains(*env.Method, idSep) {
		in.reject(env.ID, -32600, "Invalid request: method names cannot contain NUL")
		return nil
	}
	tagged, _ := json.Marshal(*env.Method + idSep + idKey(env.ID))
	fields["method"] = tagged
	b, err := json.Marshal(fields)
	if err != nil {
		in.reject(env.ID, -32600, "Invalid request: "+err.Error())
		return nil
	}
	return append(b, '\n')
}

func (in *inbound) reject(id json.RawMessage, code int, msg string) {
	in.log.Warn("rejected client message", "code", code, "message", msg)
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   any             `json:"error"`
	}{"2.0", id, map[string]any{"code": code, "message": msg}})
	if _, err := in.out.Write(append(b, '\n')); err != nil {
		in.log.Warn("write error response", "err", err)
	}
}

// idKey is the canonical text of a JSON-RPC id: the compact JSON.
func idKey(id json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, id); err != nil {
		return string(id)
	}
	return b.String()
}

// outbound serializes every write to the client (the SDK's messages and
// inbound's error answers) and signals when the response to a given request
// id has been written, so that notifications that must follow a response
// (available_commands_update after session/new) really do.
type outbound struct {
	mu    sync.Mutex // guards w (one message per Write) and after
	w     io.Writer
	after map[string]chan struct{} // request id → closed once its response is written
}

func newOutbound(w io.Writer) *outbound {
	return &outbound{w: w, after: make(map[string]chan struct{})}
}

func (o *outbound) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n, err := o.w.Write(p)
	if err == nil && len(o.after) > 0 {
		var env envelope
		if json.Unmarshal(p, &env) == nil && env.Method == nil && len(env.ID) > 0 {
			k := idKey(env.ID)
			if ch, ok := o.after[k]; ok {
				close(ch)
				delete(o.after, k)
			}
		}
	}
	return n, err
}

// afterResponse returns a channel closed once the response to request id
// has been written. Register it before the handler returns.
func (o *outbound) afterResponse(id string) <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	ch := make(chan struct{})
	o.after[id] = ch
	return ch
}

// forget drops a registration whose response will never be written.
func (o *outbound) forget(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.after, id)
}
