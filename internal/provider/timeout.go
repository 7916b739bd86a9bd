package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Default network timeouts. Reasoning models can think for minutes before
// their first token, and some servers send nothing while they do, so the
// first-byte and idle timeouts are generous: they exist to end a turn that
// will never finish, not to hurry a slow one.
const (
	DefaultConnectTimeout   = 30 * time.Second
	DefaultFirstByteTimeout = 10 * time.Minute
	DefaultIdleTimeout      = 10 * time.Minute
)

// Environment variables that override the [timeouts] settings.
const (
	EnvConnectTimeout   = "YOLOP_CONNECT_TIMEOUT"
	EnvFirstByteTimeout = "YOLOP_FIRST_BYTE_TIMEOUT"
	EnvIdleTimeout      = "YOLOP_IDLE_TIMEOUT"
)

// Timeouts bounds how long a model call may wait on the network. A zero
// field means its default; a negative one disables that timeout.
type Timeouts struct {
	// Connect bounds the TCP connect and the TLS handshake.
	Connect time.Duration
	// FirstByte bounds the wait from sending a request to the response
	// headers.
	FirstByte time.Duration
	// Idle bounds the silence between two reads of a streamed response,
	// the first one included.
	Idle time.Duration
}

// WithDefaults fills zero fields with the defaults.
func (t Timeouts) WithDefaults() Timeouts {
	if t.Connect == 0 {
		t.Connect = DefaultConnectTimeout
	}
	if t.FirstByte == 0 {
		t.FirstByte = DefaultFirstByteTimeout
	}
	if t.Idle == 0 {
		t.Idle = DefaultIdleTimeout
	}
	return t
}

// TimeoutsSection is the [timeouts] table of the settings file. Values are
// Go durations ("90s", "15m"); "0" disables a timeout.
type TimeoutsSection struct {
	Connect   string `toml:"connect"`
	FirstByte string `toml:"first_byte"`
	Idle      string `toml:"idle"`
}

// resolveTimeouts reads each timeout from the environment, else the
// settings, else leaves it zero (the default).
func resolveTimeouts(env func(string) string, s TimeoutsSection, settingsPath string) (Timeouts, error) {
	var t Timeouts
	for _, f := range []struct {
		dst          *time.Duration
		envName, key string
		setting      string
	}{
		{&t.Connect, EnvConnectTimeout, "connect", s.Connect},
		{&t.FirstByte, EnvFirstByteTimeout, "first_byte", s.FirstByte},
		{&t.Idle, EnvIdleTimeout, "idle", s.Idle},
	} {
		v, from := env(f.envName), f.envName
		if v == "" {
			v, from = f.setting, fmt.Sprintf("[timeouts] %s in %s", f.key, settingsName(settingsPath))
		}
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		d, err := time.ParseDuration(v)
		if v == "0" {
			d, err = 0, nil
		}
		if err != nil || d < 0 {
			return Timeouts{}, fmt.Errorf("%s: %q is not a duration; write it like \"90s\" or \"15m\", or \"0\" to disable the timeout", from, v)
		}
		if d == 0 {
			d = -1 // disabled
		}
		*f.dst = d
	}
	return t, nil
}

// TimeoutError says that the server stopped answering. It is retryable:
// nothing of the turn's model step was kept.
type TimeoutError struct {
	Provider string        // "openai", "anthropic"
	URL      string        // base URL
	Phase    string        // "connect", "first byte", "idle"
	After    time.Duration // the timeout that fired
	// Data is set when some of the response body had arrived (idle).
	Data bool
}

func (e *TimeoutError) Error() string {
	var what, knob string
	switch e.Phase {
	case "connect":
		what = fmt.Sprintf("could not connect to %s within %s", e.URL, e.After)
		knob = fmt.Sprintf("[timeouts] connect or %s", EnvConnectTimeout)
	case "first byte":
		what = fmt.Sprintf("%s sent no response within %s of the request", e.URL, e.After)
		knob = fmt.Sprintf("[timeouts] first_byte or %s", EnvFirstByteTimeout)
	default:
		what = fmt.Sprintf("%s sent its response headers, then nothing for %s", e.URL, e.After)
		if e.Data {
			what = fmt.Sprintf("%s stopped sending for %s in the middle of the response", e.URL, e.After)
		}
		knob = fmt.Sprintf("[timeouts] idle or %s", EnvIdleTimeout)
	}
	return fmt.Sprintf("%s: %s; the turn can be retried (a model that thinks longer may need a larger %s)", e.Provider, what, knob)
}

// Timeout reports true, like a net.Error.
func (e *TimeoutError) Timeout() bool { return true }

// HTTPClient returns the client a provider sends its requests with: base
// (nil for a fresh one with t.Connect applied to dialing and the TLS
// handshake), with every request watched for the first-byte and idle
// timeouts. Pair it with Watch around each call.
func HTTPClient(base *http.Client, t Timeouts) *http.Client {
	t = t.WithDefaults()
	var c http.Client
	if base != nil {
		c = *base
	}
	rt := c.Transport
	if rt == nil {
		if base != nil {
			rt = http.DefaultTransport
		} else {
			tr := http.DefaultTransport.(*http.Transport).Clone()
			if t.Connect > 0 {
				tr.DialContext = (&net.Dialer{Timeout: t.Connect, KeepAlive: 30 * time.Second}).DialContext
				tr.TLSHandshakeTimeout = t.Connect
			}
			rt = tr
		}
	}
	c.Transport = &watchTransport{next: rt, t: t}
	return &c
}

type watchKey struct{}

// watch is one model call's watchdog state.
type watch struct {
	cancel context.CancelCauseFunc
}

// Watch returns a context for one model call. When a request made with an
// HTTPClient under it times out, the whole call is cancelled (so an SDK
// does not retry a server that does not answer) and Timeout reports why.
// stop releases the context.
func Watch(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	ctx = context.WithValue(ctx, watchKey{}, &watch{cancel: cancel})
	return ctx, func() { cancel(context.Canceled) }
}

// Timeout returns the *TimeoutError that ended a call made under a Watch
// context, or nil. provider and url fill the error's identity.
func Timeout(ctx context.Context, provider, url string) *TimeoutError {
	var te *TimeoutError
	if errors.As(context.Cause(ctx), &te) {
		out := *te
		out.Provider, out.URL = provider, url
		return &out
	}
	return nil
}

// watchTransport enforces the first-byte and idle timeouts on each request.
type watchTransport struct {
	next http.RoundTripper
	t    Timeouts
}

func (w *watchTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	call, _ := req.Context().Value(watchKey{}).(*watch)
	fire := func(te *TimeoutError) {
		// The whole call first: the request's context derives from it,
		// so both are cancelled before anything waiting on the request
		// wakes, and a caller that sees the request fail already finds
		// the call over (an SDK's retry loop does not start again).
		if call != nil {
			call.cancel(te)
		}
		cancel(te)
	}
	var headerTimer *time.Timer
	if w.t.FirstByte > 0 {
		headerTimer = time.AfterFunc(w.t.FirstByte, func() { fire(&TimeoutError{Phase: "first byte", After: w.t.FirstByte}) })
	}
	res, err := w.next.RoundTrip(req.WithContext(ctx))
	if headerTimer != nil {
		headerTimer.Stop()
	}
	if err != nil {
		var te *TimeoutError
		if errors.As(context.Cause(ctx), &te) {
			err = te
		} else if isDialTimeout(err) && w.t.Connect > 0 {
			err = &TimeoutError{Phase: "connect", After: w.t.Connect}
		}
		cancel(err)
		return nil, err
	}
	res.Body = newIdleBody(res.Body, ctx, cancel, w.t.Idle, fire)
	return res, nil
}

// isDialTimeout reports whether err is a timed-out connect or TLS
// handshake.
func isDialTimeout(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" && op.Timeout() {
		return true
	}
	return strings.Contains(err.Error(), "TLS handshake timeout")
}

// idleBody fails a read that waits longer than idle for data. The timer
// measures silence, not the whole body: every read that returns data
// rearms it.
type idleBody struct {
	rc     io.ReadCloser
	ctx    context.Context
	cancel context.CancelCauseFunc
	idle   time.Duration
	timer  *time.Timer // nil when the idle timeout is off
	got    atomic.Bool // some data arrived (read by the timer's goroutine)
}

func newIdleBody(rc io.ReadCloser, ctx context.Context, cancel context.CancelCauseFunc, idle time.Duration, fire func(*TimeoutError)) *idleBody {
	b := &idleBody{rc: rc, ctx: ctx, cancel: cancel, idle: idle}
	if idle > 0 {
		b.timer = time.AfterFunc(idle, func() { fire(&TimeoutError{Phase: "idle", After: idle, Data: b.got.Load()}) })
	}
	return b
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if b.timer != nil {
		switch {
		case err == io.EOF:
			b.timer.Stop()
		case n > 0:
			b.got.Store(true)
			b.timer.Reset(b.idle)
		}
	}
	if err != nil && err != io.EOF {
		var te *TimeoutError
		if errors.As(context.Cause(b.ctx), &te) {
			return n, te
		}
	}
	return n, err
}

func (b *idleBody) Close() error {
	if b.timer != nil {
		b.timer.Stop()
	}
	err := b.rc.Close()
	b.cancel(context.Canceled)
	return err
}

// MalformedError says that the server's response could not be decoded:
// not the user's fault and usually transient.
type MalformedError struct {
	Provider, URL string
	Err           error
}

func (e *MalformedError) Error() string {
	return fmt.Sprintf("%s: the server sent a malformed response; the turn can be retried (%s: %v)", e.Provider, e.URL, e.Err)
}

func (e *MalformedError) Unwrap() error { return e.Err }

// IsMalformed reports whether err comes from decoding a response body that
// is not valid JSON or does not have the expected shape.
func IsMalformed(err error) bool {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.As(err, &syn) || errors.As(err, &typ) ||
		strings.Contains(err.Error(), "unexpected end of JSON input") ||
		strings.Contains(err.Error(), "invalid character")
}
