// Package apptest assembles sessions for tests with the product's own
// constructor, app.Open: a test states what differs from a plain session
// (its repository, a request, hooks) and gets the same wiring users run,
// closed when the test ends.
package apptest

import (
	"context"
	"testing"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/provider"
)

// Env is a plain environment for a session in dir: a data directory of the
// test's own, the offline sim provider, no spare worktrees, no watcher.
func Env(t testing.TB, dir string) app.Env {
	t.Helper()
	return app.Env{DataDir: t.TempDir(), Dir: dir, Provider: provider.Config{Provider: provider.NameSim}}
}

// Open opens req in env and closes the session when the test ends; a
// failure to open or to close fails the test.
func Open(t testing.TB, env app.Env, req app.Request) *app.Session {
	t.Helper()
	s, err := app.Open(context.Background(), env, req)
	if err != nil {
		t.Fatalf("open a session: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close session %s: %v", s.ID(), err)
		}
	})
	return s
}
