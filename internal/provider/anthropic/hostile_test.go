package anthropic

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/provider/providertest"
)

// A server that accepts the request and then stops answering must fail the
// model step with a clear, retryable timeout, and a torn event must say the
// response was malformed. Short timeouts stand in for the generous
// defaults; the guard context turns a hang into a failure instead of a
// stuck test.
func TestHostileServers(t *testing.T) {
	t.Parallel()
	const start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-test\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":4,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
	tests := []struct {
		name, behavior, events string
		phase                  string // TimeoutError phase; "" for malformed
		want                   []string
	}{
		{"hang before headers", providertest.HangBeforeHeaders, "", "first byte",
			[]string{"sent no response within 300ms", "the turn can be retried", "[timeouts] first_byte", provider.EnvFirstByteTimeout}},
		{"headers then silence", providertest.HangMidStream, "", "idle",
			[]string{"sent its response headers, then nothing for 300ms", "the turn can be retried", "[timeouts] idle"}},
		{"hang mid-stream", providertest.HangMidStream, start, "idle",
			[]string{"stopped sending for 300ms in the middle of the response", "the turn can be retried", provider.EnvIdleTimeout}},
		{"malformed event", providertest.SendAndEnd, start + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\n\n", "",
			[]string{"the server sent a malformed response; the turn can be retried"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, tc.behavior, tc.events)
			p, err := New(provider.Config{Model: "claude-test", BaseURL: srv.URL, APIKey: secret,
				Timeouts: provider.Timeouts{FirstByte: 300 * time.Millisecond, Idle: 300 * time.Millisecond}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err = p.Stream(ctx, provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}, nil)
			if ctx.Err() != nil {
				t.Fatalf("the model step hung until the guard deadline: %v", err)
			}
			if err == nil {
				t.Fatal("the model step succeeded against a hostile server")
			}
			t.Logf("error: %v", err)
			var te *provider.TimeoutError
			if tc.phase != "" && (!errors.As(err, &te) || te.Phase != tc.phase) {
				t.Fatalf("error %v (%T), want a %s timeout", err, err, tc.phase)
			}
			if tc.phase == "" {
				var me *provider.MalformedError
				if !errors.As(err, &me) {
					t.Fatalf("error %v (%T), want a malformed response", err, err)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "request to") {
				t.Errorf("error %q reads like a transport failure", err)
			}
			if tc.phase != "" {
				if n := srv.Requests(); n != 1 {
					t.Errorf("the server got %d requests; a timed-out call must not be retried (each retry waits the full timeout again)", n)
				}
			}
		})
	}
}
