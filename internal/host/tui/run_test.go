package tui

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/app"
)

func TestRunQuitsOnSlashQuit(t *testing.T) {
	t.Parallel()
	in, w := io.Pipe()
	defer w.Close()
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), &fakeSession{info: baseInfo()}, Options{In: in, Out: io.Discard, NoColor: true})
	}()
	if _, err := io.WriteString(w, "/quit\r"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run after /quit: %v, want nil", err)
	}
}

// Cancelling Run's context stops a running turn, and Run returns only after
// the turn's Prompt call has returned, so the caller can close the session.
func TestRunWaitsForTheTurnOnCancel(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	var returned atomic.Bool
	f := &fakeSession{info: baseInfo()}
	f.prompt = func(ctx context.Context, text string, on func(agent.Update)) (app.TurnResult, error) {
		close(started)
		<-ctx.Done()
		on(agent.Update{Kind: agent.UpdateText, Text: "late update nobody reads"})
		returned.Store(true)
		return app.TurnResult{Status: "cancelled"}, nil
	}
	in, w := io.Pipe()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, f, Options{In: in, Out: io.Discard, NoColor: true}) }()
	if _, err := io.WriteString(w, "hello\r"); err != nil {
		t.Fatal(err)
	}
	<-started
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if !returned.Load() {
		t.Fatal("Run returned while the turn was still running")
	}
}
