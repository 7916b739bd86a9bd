package app_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/session"
)

// resumeFixture is the session in testdata/session-2026-12-01b.tar.gz,
// written by yolop as of 2026-12-01 with files_changed and a summary.json
// without last_used, and no resume file (sim provider, print mode):
//
//	cp1 write a.txt
//	cp2 $ printf b > b.txt; think pondering
//	cp3 write c.txt
//	/rewind cp2 both (confirmed: cp2 and cp3 abandoned)
//	cp4 $ mkdir -p d && printf x > d/x.txt
//	/compact                   (boundary at the end of cp4)
//	cp5 echo after compaction  (0 files)
//	cp6 write e.txt
const resumeFixture = "s_01m8r8ee9wts409cjxtkmmh173"

// seen is what a session shows: what a host and the model get from it.
type seen struct {
	rows       string
	context    string
	transcript string
	checkpoint int
	usage      provider.Usage
}

func look(t *testing.T, s *app.Session) seen {
	t.Helper()
	var v seen
	for _, r := range execCmd(t, s, "/rewind --all").Rows {
		v.rows += r.ID + " " + r.Status + " " + r.Title + " " + string(rune('0'+r.FilesChanged)) + " " + map[bool]string{true: "abandoned", false: "active"}[r.Abandoned] + "\n"
	}
	for _, m := range s.Parts().Agent.Context() {
		v.context += string(m.Role) + ": " + m.Text + "\n"
	}
	for _, it := range s.Transcript() {
		v.transcript += it.Text + "\n"
	}
	in := s.Info()
	v.checkpoint = in.Checkpoints
	v.usage = in.Usage
	return v
}

// TestResumeFile: a session of today's format (no resume file) opens by
// replaying its logs and leaves a resume file; the next open reads only
// what the logs gained since and shows exactly the same session; a
// resume file that is damaged, or older than the logs, or whose logs were
// rewritten in place, is never trusted beyond what it can prove.
func TestResumeFile(t *testing.T) {
	t.Parallel()
	dir := unpackFixtureFile(t, "session-2026-12-01b.tar.gz")
	data := filepath.Join(dir, "data")
	sessDir := filepath.Join(data, "sessions", resumeFixture)
	resume := filepath.Join(sessDir, "resume.bin")
	open := func() *app.Session {
		t.Helper()
		s, err := app.Open(context.Background(), app.Env{DataDir: data, Dir: filepath.Join(dir, "repo"), Provider: provider.Config{Provider: provider.NameSim}}, app.Resume{ID: resumeFixture})
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

	s := open()
	if n := s.Parts().Session.Skipped(); n != 0 {
		t.Fatalf("a session without a resume file skipped %d events", n)
	}
	want := look(t, s)
	closeS(s)
	for _, w := range []string{"cp6 completed write e.txt … 1 active", "cp5 completed echo after compaction 0 active", "cp3 completed write c.txt … 1 abandoned", "cp1 completed write a.txt … 1 active"} {
		if !strings.Contains(want.rows, w) {
			t.Errorf("rows lack %q:\n%s", w, want.rows)
		}
	}
	if !strings.Contains(want.context, "summary of 8 messages") || !strings.Contains(want.context, "echo after compaction") || strings.Contains(want.context, "gamma") || strings.Contains(want.context, "pondering") {
		t.Errorf("model context:\n%s", want.context)
	}
	for _, w := range []string{"write a.txt", "mkdir -p d", "echo after compaction", "write e.txt"} {
		if !strings.Contains(want.transcript, w) {
			t.Errorf("transcript lacks %q:\n%s", w, want.transcript)
		}
	}
	if strings.Contains(want.transcript, "pondering") || strings.Contains(want.transcript, "write c.txt") {
		t.Errorf("transcript shows abandoned turns:\n%s", want.transcript)
	}
	if want.checkpoint != 4 || want.usage.InputTokens == 0 {
		t.Fatalf("info: %+v", want)
	}
	// The old digest lacked last_used: it was recomputed.
	if d, ok := session.ReadDigest(sessDir); !ok || d.Turns != 4 || d.LastUsed.IsZero() {
		t.Fatalf("digest: %+v %v", d, ok)
	}

	// Resumed: the logs are not replayed, the session is the same.
	s = open()
	if n := s.Parts().Session.Skipped(); n == 0 {
		t.Fatal("the resume file was not used")
	}
	// The newest part of the transcript comes without the older history,
	// and the two parts make the whole.
	tail, earlier := s.TranscriptParts()
	if earlier == nil || len(tail) == 0 {
		t.Fatalf("transcript parts: %d items, earlier %v", len(tail), earlier != nil)
	}
	var parts string
	for _, it := range append(earlier(), tail...) {
		parts += it.Text + "\n"
	}
	if parts != want.transcript {
		t.Fatalf("transcript parts:\n%s\nwant\n%s", parts, want.transcript)
	}
	if got := look(t, s); got != want {
		t.Fatalf("resumed session differs:\n%+v\nwant\n%+v", got, want)
	}
	closeS(s)
	older, err := os.ReadFile(resume)
	if err != nil {
		t.Fatal(err)
	}

	// Damaged: ignored, the logs are replayed, and it is written again.
	bad := bytes.Clone(older)
	bad[len(bad)/2] ^= 0x40
	if err := os.WriteFile(resume, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	s = open()
	if n := s.Parts().Session.Skipped(); n != 0 {
		t.Fatalf("a damaged resume file was used (%d events skipped)", n)
	}
	if got := look(t, s); got != want {
		t.Fatalf("session after a damaged resume file differs:\n%+v\nwant\n%+v", got, want)
	}
	closeS(s)
	if b, err := os.ReadFile(resume); err != nil || !bytes.Equal(b, older) {
		t.Fatalf("the resume file was not rewritten: %v", err)
	}

	// Older than the logs (a process stopped between a turn's records and
	// the resume file): what was appended since is read on top of it.
	s = open()
	res, err := s.Prompt(context.Background(), "write f.txt\nphi\nEOF", nil)
	if err != nil || res.CheckpointID != "cp7" || len(res.Warnings) != 0 {
		t.Fatalf("turn: %+v %v", res, err)
	}
	want = look(t, s)
	closeS(s)
	if err := os.WriteFile(resume, older, 0o600); err != nil {
		t.Fatal(err)
	}
	s = open()
	if n := s.Parts().Session.Skipped(); n == 0 {
		t.Fatal("an older resume file was not used for what it covers")
	}
	if got := look(t, s); got != want || !strings.Contains(got.rows, "cp7 completed write f.txt") {
		t.Fatalf("session resumed from an older file differs:\n%+v\nwant\n%+v", got, want)
	}
	closeS(s)

	// A log rewritten in place before the resume file's mark: the file
	// cannot vouch for it, the log is replayed as it is now.
	if err := os.WriteFile(resume, older, 0o600); err != nil {
		t.Fatal(err)
	}
	tl := filepath.Join(sessDir, session.TimelineFile)
	b, err := os.ReadFile(tl)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.LastIndex(b, []byte(`"prompt":"write e.txt`))
	if i < 0 {
		t.Fatal("no cp6 record")
	}
	copy(b[i:], `"prompt":"write E.txt`)
	if err := os.WriteFile(tl, b, 0o600); err != nil {
		t.Fatal(err)
	}
	s = open()
	defer s.Close()
	if got := look(t, s); !strings.Contains(got.rows, "cp6 completed write E.txt") {
		t.Fatalf("a rewritten timeline was not replayed:\n%s", got.rows)
	}
}
