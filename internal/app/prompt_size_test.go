package app_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/app/apptest"
	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/session"
)

// TestPromptTooLarge: a prompt beyond MaxPromptBytes is refused before
// anything is recorded, with its size, the limit and what to do instead;
// one at the limit runs.
func TestPromptTooLarge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := simRepo(t)
	data := env.DataDir
	s := apptest.Open(t, env, app.New{})
	big := "look at this\n" + strings.Repeat("x", agent.MaxPromptBytes)
	_, err := s.Prompt(ctx, big, nil)
	if err == nil {
		t.Fatal("a prompt over the limit ran")
	}
	if !errors.Is(err, agent.ErrPromptTooLarge) || fault.Of(err) != fault.PromptTooLarge {
		t.Errorf("error %v is not ErrPromptTooLarge (code %q)", err, fault.Of(err))
	}
	for _, want := range []string{"it is 4194317 bytes (4.0 MB), 13 more than the 4194304 bytes", "save the text as a file", "nothing was sent or recorded"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if s.Exists() {
		t.Fatal("the refused prompt created the session")
	}
	if ents, err := os.ReadDir(session.SessionsDir(data)); err == nil && len(ents) > 0 {
		t.Fatalf("the refused prompt left %d session directories", len(ents))
	}
	res, err := s.Prompt(ctx, big[:agent.MaxPromptBytes], nil)
	if err != nil || res.CheckpointID != "cp1" {
		t.Fatalf("a prompt at the limit: %+v, %v", res, err)
	}
}
