package app_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/provider"
	// The real providers, against local servers (app links only sim).
	_ "github.com/yolop-dev/yolop/internal/provider/all"
)

// TestTurnUsageFromProviderFixtures: the tokens a provider reports (the
// recorded streams of both real providers, cache counts included) reach
// the turn's result and the session's totals, and survive a reopen.
func TestTurnUsageFromProviderFixtures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		provider, fixture string
		want              provider.Usage
	}{
		{"openai", "../provider/openai/testdata/text.sse", provider.Usage{InputTokens: 4, OutputTokens: 5, CacheReadTokens: 8}},
		{"anthropic", "../provider/anthropic/testdata/compact.sse", provider.Usage{InputTokens: 5, OutputTokens: 6}},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			t.Parallel()
			body, err := os.ReadFile(tc.fixture)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Write(body)
			}))
			defer srv.Close()
			dir := t.TempDir()
			data := filepath.Join(dir, "data")
			cfg := provider.Config{Provider: tc.provider, Model: "test-model", BaseURL: srv.URL, APIKey: "k", ContextWindow: 1000}
			s, err := app.Open(context.Background(), app.Env{DataDir: data, Dir: gittest.NewRepo(t), Provider: cfg}, app.New{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Prompt(context.Background(), "hello", nil)
			if err != nil || res.Status != "completed" {
				t.Fatalf("turn: %+v, %v", res, err)
			}
			if res.Usage != tc.want {
				t.Fatalf("turn usage %+v, want %+v", res.Usage, tc.want)
			}
			in := s.Info()
			if in.Usage != tc.want || in.ContextWindow != 1000 || in.ContextTokens != tc.want.Prompt()+tc.want.OutputTokens {
				t.Fatalf("session usage %+v, context %d of %d", in.Usage, in.ContextTokens, in.ContextWindow)
			}
			id := s.ID()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, err = app.Open(context.Background(), app.Env{DataDir: data, Provider: cfg}, app.Resume{ID: id})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := s.Info().Usage; got != tc.want {
				t.Fatalf("usage after reopening %+v, want %+v", got, tc.want)
			}
		})
	}
}
