package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/session"
)

// TestContextCacheMatchesReplay: after every step of a session's life
// (turns with tool calls, a rewind, compactions, undo and redo, turns
// appended past the resume file), a session opened from its resume file's
// context cache gives the model exactly the context, and the host exactly
// the transcript, that replaying the logs gives.
func TestContextCacheMatchesReplay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := simRepo(t)
	data := env.DataDir

	s, err := app.Open(ctx, env, app.New{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(ctx, "write f0.txt\nzero\nEOF", nil); err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	resume := filepath.Join(session.SessionsDir(data), id, "resume.bin")

	type view struct{ context, transcript, parts string }
	see := func(s *app.Session) view {
		t.Helper()
		b, err := json.Marshal(s.Parts().Agent.Context())
		if err != nil {
			t.Fatal(err)
		}
		v := view{context: string(b)}
		items, err := json.Marshal(s.Transcript())
		if err != nil {
			t.Fatal(err)
		}
		v.transcript = string(items)
		return v
	}
	open := func() *app.Session {
		t.Helper()
		s, err := app.Open(ctx, env, app.Resume{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	closeS := func(s *app.Session) {
		t.Helper()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// check opens the session from its resume file, then by replaying
	// the logs, and compares; the resume file is put back as it was, so
	// the next step starts from what the product left.
	check := func(step string, fromCache bool) {
		t.Helper()
		saved, err := os.ReadFile(resume)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		s := open()
		if s.Parts().Session.Skipped() == 0 {
			t.Fatalf("%s: the resume file was not used", step)
		}
		if got := s.Parts().ContextCached; got != fromCache {
			t.Fatalf("%s: context from the cache: %v, want %v", step, got, fromCache)
		}
		// The newest part comes first, and the two parts are the whole.
		tail, earlier := s.TranscriptParts()
		all := tail
		if earlier != nil {
			all = append(earlier(), tail...)
		}
		parts, err := json.Marshal(all)
		if err != nil {
			t.Fatal(err)
		}
		cached := see(s)
		cached.parts = string(parts)
		closeS(s)
		if err := os.Remove(resume); err != nil {
			t.Fatal(err)
		}
		s = open()
		replayed := see(s)
		replayed.parts = replayed.transcript
		closeS(s)
		if cached != replayed {
			t.Fatalf("%s: opened from the resume file:\n%+v\nreplayed:\n%+v", step, cached, replayed)
		}
		if err := os.WriteFile(resume, saved, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	turn := func(s *app.Session, i int) {
		t.Helper()
		prompts := []string{
			"write f%d.txt\nline %d\nEOF",
			"$ echo %d >> log.txt && cat log.txt | wc -l # %d",
			"think about %d and %d",
		}
		p := prompts[i%len(prompts)]
		if _, err := s.Prompt(ctx, fmt.Sprintf(p, i, i), nil); err != nil {
			t.Fatal(err)
		}
	}
	run := func(lines ...string) {
		t.Helper()
		s := open()
		defer closeS(s)
		for _, l := range lines {
			res := execCmd(t, s, l)
			if res.Preview != nil {
				execCmd(t, s, l+" --confirm "+res.Preview.Token)
			}
		}
	}

	n := 1
	turns := func(k int) {
		t.Helper()
		s := open()
		defer closeS(s)
		for range k {
			turn(s, n)
			n++
		}
	}
	turns(30)
	check("30 turns", true)
	run("/rewind cp20 conversation")
	check("after a conversation rewind", true)
	turns(3)
	check("turns after the rewind", true)
	run("/compact")
	check("after /compact", true)
	turns(25)
	check("turns after the compaction", true)
	run("/undo")
	check("after /undo", true)
	run("/redo")
	check("after /redo", true)
	run("/compact")
	turns(2)
	check("a second compaction, then turns", true)
	// A turn the resume file does not cover: it is older than the logs.
	saved, err := os.ReadFile(resume)
	if err != nil {
		t.Fatal(err)
	}
	turns(4)
	if err := os.WriteFile(resume, saved, 0o600); err != nil {
		t.Fatal(err)
	}
	check("turns past the resume file", true)
	run("/rewind cp5 both")
	if err := os.WriteFile(resume, saved, 0o600); err != nil {
		t.Fatal(err)
	}
	check("a rewind past the resume file", false)
}
