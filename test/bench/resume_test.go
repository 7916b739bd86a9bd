// Package bench holds whole-system benchmarks that need every part of a
// real session: worktree, snapshot engine, timeline, agent and controller.
package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/provider"
)

func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "bench-home-")
	if err != nil {
		panic(err)
	}
	os.Setenv("HOME", home) // the bash tool reads the profile of $HOME
	code := gittest.Main(m)
	os.RemoveAll(home)
	os.Exit(code)
}

// BenchmarkResume measures opening a session from disk: lock, event log and
// timeline read, worktree reattached, snapshot engine opened, interrupted
// work repaired, the active branch materialized into the message store and
// the transcript built. The session has RESUME_TURNS turns (default 200),
// each with a tool call, and a rewind halfway so that half of the log is
// an abandoned branch.
func BenchmarkResume(b *testing.B) {
	turns := 200
	if v := os.Getenv("RESUME_TURNS"); v != "" {
		turns, _ = strconv.Atoi(v)
	}
	ctx := context.Background()
	repo := gittest.NewRepo(b)
	dataDir := filepath.Join(b.TempDir(), "data")
	env := app.Env{DataDir: dataDir, Dir: repo, Provider: provider.Config{Provider: provider.NameSim}}
	s, err := app.Open(ctx, env, app.New{})
	if err != nil {
		b.Fatal(err)
	}
	for i := 1; i <= turns; i++ {
		p := fmt.Sprintf("write notes/f%04d.txt\nline %d\nEOF\nturn %d done", i%50, i, i)
		if res, err := s.Prompt(ctx, p, nil); err != nil || res.Status != "completed" {
			b.Fatalf("turn %d: %v %+v", i, err, res)
		}
		if i == turns/2 {
			// Abandon the second quarter of the turns so far.
			res, err := s.Exec(ctx, command.Command{Name: "rewind", Target: fmt.Sprintf("cp%d", turns/4)})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.Exec(ctx, command.Command{Name: "rewind", Target: res.Preview.Target, Mode: res.Preview.Mode, Token: res.Preview.Token, Confirm: true}); err != nil {
				b.Fatal(err)
			}
		}
	}
	id := s.ID()
	want := len(s.Transcript())
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		s, err := app.Open(ctx, env, app.Resume{ID: id})
		if err != nil {
			b.Fatal(err)
		}
		if got := len(s.Transcript()); got != want {
			b.Fatalf("transcript has %d items after resume, want %d", got, want)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
