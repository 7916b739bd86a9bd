package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sync"

	"github.com/yolop-dev/yolop/internal/secret"
)

// traceMu serializes every trace append in the process, so two providers (or
// two goroutines of one) writing to the same file never interleave lines even
// on file systems where O_APPEND alone gives no such promise.
var traceMu sync.Mutex

// Trace appends one JSON line per provider request to a file
// (YOLOP_TRACE_REQUESTS). Lines never contain credentials: HTTP providers log
// the request body and a URL stripped of user info and query, never headers,
// and every known key value (package secret) is redacted from the line.
// A nil *Trace is valid and records nothing.
type Trace struct {
	path string
}

// NewTrace returns a Trace appending to path, or nil when path is empty.
func NewTrace(path string) *Trace {
	if path == "" {
		return nil
	}
	return &Trace{path: path}
}

// Path is the trace file, or "" for a nil Trace.
func (t *Trace) Path() string {
	if t == nil {
		return ""
	}
	return t.path
}

// traceLine is the shape of one line. Body is the exact request body for
// HTTP providers and the JSON of the Request for the sim.
type traceLine struct {
	Provider string          `json:"provider"`
	Op       string          `json:"op,omitempty"`
	URL      string          `json:"url,omitempty"`
	Body     json.RawMessage `json:"body"`
}

// Append records one request. op is empty for a model step and "compact" for
// a compaction call; rawURL may be empty. body must be valid JSON.
func (t *Trace) Append(providerName, op, rawURL string, body []byte) error {
	if t == nil {
		return nil
	}
	if !json.Valid(body) {
		return fmt.Errorf("trace %s: request body is not JSON", t.path)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, body); err != nil {
		return fmt.Errorf("trace %s: %w", t.path, err)
	}
	line, err := json.Marshal(traceLine{Provider: providerName, Op: op, URL: redactURL(rawURL), Body: compact.Bytes()})
	if err != nil {
		return fmt.Errorf("trace %s: %w", t.path, err)
	}
	// A tool result or a pasted file can carry a key; the trace is
	// documented as never holding one.
	line = append(secret.RedactJSON(line), '\n')

	traceMu.Lock()
	defer traceMu.Unlock()
	f, err := os.OpenFile(t.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open request trace %s: %w", t.path, err)
	}
	// The file may predate us with looser permissions; requests can hold
	// private source code, so it is owner-only whatever created it.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("chmod request trace %s: %w", t.path, err)
	}
	// One write call per line: with O_APPEND the kernel places it at the end
	// atomically with respect to other appenders.
	if _, err := f.Write(line); err != nil {
		f.Close()
		return fmt.Errorf("append request trace %s: %w", t.path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close request trace %s: %w", t.path, err)
	}
	return nil
}

// redactURL drops user info and the query string, the two places where a URL
// can carry a credential (some gateways take ?api-key=…).
func redactURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.User = nil
	u.RawQuery = ""
	u.ForceQuery = false
	u.Fragment = ""
	return u.String()
}

// Middleware returns an HTTP middleware (the shape both SDKs accept) that
// appends each outgoing request body to t before sending it. It records
// exactly the bytes on the wire and nothing from the headers, where the
// credentials live. Retries are separate requests and get separate lines.
func (t *Trace) Middleware(providerName, op string) func(*http.Request, func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	return func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		if t == nil || req.Body == nil {
			return next(req)
		}
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read request body for trace: %w", err)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		if err := t.Append(providerName, op, req.URL.String(), body); err != nil {
			return nil, err
		}
		return next(req)
	}
}

// CompactInstruction is the request appended to the conversation when an
// HTTP provider is asked to compact it.
const CompactInstruction = "Summarize the conversation so far for your own later use: the user's goals, decisions made, files touched and their current state, open problems and next steps. Reply with the summary only."
