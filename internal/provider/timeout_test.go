package provider

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestResolveTimeouts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	settings := filepath.Join(dir, "settings.toml")
	if err := os.WriteFile(settings, []byte("[timeouts]\nconnect = \"5s\"\nfirst_byte = \"20m\"\nidle = \"0\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	got, err := Resolve(Config{}, env(nil), settings)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Timeouts{Connect: 5 * time.Second, FirstByte: 20 * time.Minute, Idle: -1}); got.Timeouts != want {
		t.Errorf("settings: timeouts %+v, want %+v", got.Timeouts, want)
	}
	got, err = Resolve(Config{}, env(map[string]string{EnvIdleTimeout: "90s", EnvConnectTimeout: "0"}), settings)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Timeouts{Connect: -1, FirstByte: 20 * time.Minute, Idle: 90 * time.Second}); got.Timeouts != want {
		t.Errorf("env over settings: timeouts %+v, want %+v", got.Timeouts, want)
	}
	got, err = Resolve(Config{}, env(nil), "")
	if err != nil {
		t.Fatal(err)
	}
	if d := got.Timeouts.WithDefaults(); d != (Timeouts{DefaultConnectTimeout, DefaultFirstByteTimeout, DefaultIdleTimeout}) {
		t.Errorf("defaults: %+v", d)
	}
	for _, bad := range []map[string]string{{EnvFirstByteTimeout: "ten minutes"}, {EnvIdleTimeout: "-5s"}} {
		_, err := Resolve(Config{}, env(bad), settings)
		if err == nil || !strings.Contains(err.Error(), "is not a duration") || !strings.Contains(err.Error(), "YOLOP_") {
			t.Errorf("env %v: error %v, want one naming the variable and the format", bad, err)
		}
	}
	if err := os.WriteFile(settings, []byte("[timeouts]\nfirstbyte = \"1m\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(Config{}, env(nil), settings); err == nil || !strings.Contains(err.Error(), "first_byte") {
		t.Errorf("a misspelt timeout key: %v, want the known keys listed", err)
	}
}

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A connect that times out (in the dialer, which the test cannot make hang
// reliably on loopback) is reported as a connect timeout naming its
// setting, and a caller's own client keeps its transport but is watched.
func TestConnectTimeoutAndCallerClient(t *testing.T) {
	t.Parallel()
	dialTimeout := &net.OpError{Op: "dial", Net: "tcp", Err: timeoutErr{}}
	c := HTTPClient(&http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return nil, dialTimeout
	})}, Timeouts{Connect: 2 * time.Second})
	req, err := http.NewRequest(http.MethodPost, "http://192.0.2.1/v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Do(req)
	var te *TimeoutError
	if !errors.As(err, &te) || te.Phase != "connect" {
		t.Fatalf("error %v, want a connect timeout", err)
	}
	te.Provider, te.URL = NameOpenAI, "http://192.0.2.1/v1"
	if msg := te.Error(); !strings.Contains(msg, "could not connect to http://192.0.2.1/v1 within 2s") || !strings.Contains(msg, EnvConnectTimeout) {
		t.Errorf("message %q", msg)
	}

	// The header timeout cancels the call's Watch context, so an SDK's
	// retry loop stops instead of waiting the timeout again.
	block := make(chan struct{})
	defer close(block)
	c = HTTPClient(&http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
		return nil, r.Context().Err()
	})}, Timeouts{FirstByte: 50 * time.Millisecond})
	ctx, stop := Watch(context.Background())
	defer stop()
	req, err = http.NewRequestWithContext(ctx, http.MethodPost, "http://192.0.2.1/v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(req); !errors.As(err, &te) || te.Phase != "first byte" {
		t.Fatalf("error %v, want a first-byte timeout", err)
	}
	if ctx.Err() == nil || Timeout(ctx, NameAnthropic, "u") == nil {
		t.Fatal("the timeout did not end the whole call")
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }
