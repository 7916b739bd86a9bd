// Package providertest has hostile HTTP servers for provider tests: servers
// that accept a request and never answer, stop answering mid-stream, or
// send an event that is not JSON.
package providertest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// Behaviors of a hostile server.
const (
	// HangBeforeHeaders reads the request and never answers.
	HangBeforeHeaders = "hang-before-headers"
	// HangMidStream sends the response headers and the given events, then
	// nothing more.
	HangMidStream = "hang-mid-stream"
	// SendAndEnd sends the given events (a test puts the malformed one
	// among them) and ends the response.
	SendAndEnd = "send-and-end"
)

// Server is a hostile server; Requests counts the requests it received.
type Server struct {
	*httptest.Server
	requests atomic.Int64
}

// Requests is the number of requests received so far.
func (s *Server) Requests() int64 { return s.requests.Load() }

// NewServer starts a server with the given behavior. events are raw SSE
// text sent before the hang, or the whole stream for SendAndEnd
// ("event: x\ndata: {...}\n\n").
// The server releases its hanging handlers when the test ends.
func NewServer(t *testing.T, behavior, events string) *Server {
	t.Helper()
	s := &Server{}
	done := make(chan struct{})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		hang := func() {
			select {
			case <-done:
			case <-r.Context().Done():
			}
		}
		if behavior == HangBeforeHeaders {
			hang()
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, events)
		w.(http.Flusher).Flush()
		switch behavior {
		case HangMidStream:
			hang()
		case SendAndEnd:
		default:
			panic("providertest: unknown behavior " + behavior)
		}
	}))
	t.Cleanup(func() {
		close(done)
		s.Close()
	})
	return s
}
