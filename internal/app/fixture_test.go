package app_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/app/apptest"
	"github.com/yolop-dev/yolop/internal/checkpoint"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/session"
)

// fixtureRoot is the directory the fixture session was made in; text files
// that name it are rewritten to the test's own directory on unpacking.
const fixtureRoot = "/tmp/yolopfixture"

// fixtureSession is the id of the session in
// testdata/session-2026-12-01.tar.gz, written by yolop as of 2026-12-01
// (before turn.completed carried files_changed and before summary.json):
// a repository and a data dir where, with the sim provider in print mode,
//
//	cp1 write a.txt            (1 file)
//	cp2 $ printf b > b.txt && rm a.txt   (2 files)
//	cp3 think …; write c.txt   (1 file)
//	/rewind cp2 both (confirmed: cp2 and cp3 abandoned)
//	cp4 $ mkdir -p d && printf x > d/x.txt   (1 file)
//	/compact                   (boundary at the end of cp4)
//	cp5 echo after compaction  (0 files)
//	/undo (confirmed: cp5 abandoned, the redo slot holds it)
const fixtureSession = "s_01m8qxx7pp2qgkr3jvqxanhpse"

// unpackFixture extracts the fixture into a new directory and returns it.
func unpackFixture(t *testing.T) string {
	return unpackFixtureFile(t, "session-2026-12-01.tar.gz")
}

// unpackFixtureFile extracts a fixture of testdata made under fixtureRoot.
func unpackFixtureFile(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o700); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.ContainsRune(b, 0) {
				b = bytes.ReplaceAll(b, []byte(fixtureRoot), []byte(dir))
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, os.FileMode(h.Mode)&0o777); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("fixture entry %s: unexpected type %c", h.Name, h.Typeflag)
		}
	}
	return dir
}

func execCmd(t *testing.T, s *app.Session, line string) command.Result {
	t.Helper()
	cmd, err := command.Parse(line)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Exec(context.Background(), cmd)
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return res
}

type rowWant struct {
	id        string
	files     int
	abandoned bool
}

func checkRows(t *testing.T, what string, rows []checkpoint.Row, want []rowWant) {
	t.Helper()
	if len(rows) != len(want) {
		t.Fatalf("%s: %d rows %+v, want %d", what, len(rows), rows, len(want))
	}
	for i, w := range want {
		r := rows[i]
		if r.ID != w.id || r.FilesChanged != w.files || r.Abandoned != w.abandoned || r.Status != "completed" || !r.Workspace {
			t.Errorf("%s row %d: %+v, want %+v (completed, workspace)", what, i, r, w)
		}
	}
}

// TestOldFormatSessionOpens: a session written before files_changed and
// the session summary existed opens with the same branch, listing, model
// context and redo slot, and keeps working.
func TestOldFormatSessionOpens(t *testing.T) {
	t.Parallel()
	dir := unpackFixture(t)
	data := filepath.Join(dir, "data")
	open := func() *app.Session {
		s, err := app.Open(context.Background(), app.Env{DataDir: data, Dir: filepath.Join(dir, "repo"), Provider: provider.Config{Provider: provider.NameSim}}, app.Resume{ID: fixtureSession})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	sessDir := filepath.Join(data, "sessions", fixtureSession)
	if d, ok := session.ReadDigest(sessDir); !ok || d.Turns != 2 {
		t.Fatalf("opening an old session did not save its listing digest: %+v %v", d, ok)
	}
	in := s.Info()
	if in.Checkpoints != 2 || !in.RedoAvailable || in.ReadOnly || !in.Workspace || len(in.Repairs) != 0 {
		t.Fatalf("info: %+v", in)
	}
	active := []rowWant{{"cp4", 1, false}, {"cp1", 1, false}}
	all := []rowWant{{"cp5", 0, true}, {"cp4", 1, false}, {"cp3", 1, true}, {"cp2", 2, true}, {"cp1", 1, false}}
	checkRows(t, "/rewind", execCmd(t, s, "/rewind").Rows, active)
	checkRows(t, "/rewind --all", execCmd(t, s, "/rewind --all").Rows, all)

	// The model sees the compaction and nothing after its boundary on
	// this branch; nothing of the abandoned turns.
	msgs := s.Parts().Agent.Context()
	if len(msgs) != 1 || !strings.Contains(msgs[0].Text, "summary of 8 messages: write a.txt hello EOF; $ mkdir -p d &&") {
		t.Fatalf("model context: %+v", msgs)
	}
	var shown []string
	for _, it := range s.Transcript() {
		shown = append(shown, it.Text)
	}
	got := strings.Join(shown, "\n")
	for _, w := range []string{"write a.txt", "mkdir -p d"} {
		if !strings.Contains(got, w) {
			t.Errorf("transcript lacks %q:\n%s", w, got)
		}
	}
	for _, bad := range []string{"pondering", "echo after compaction", "printf b"} {
		if strings.Contains(got, bad) {
			t.Errorf("transcript shows abandoned %q:\n%s", bad, got)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// The counts the old records lack were computed once and kept: the
	// next process reads them instead of running git (a doctored count
	// shows through).
	stats := filepath.Join(data, "sessions", fixtureSession, "checkpoint-stats.json")
	b, err := os.ReadFile(stats)
	if err != nil {
		t.Fatalf("counts of the old records were not kept: %v", err)
	}
	if want := `{"v":1,"files_changed":{"cp1":1,"cp2":2,"cp3":1,"cp4":1,"cp5":0}}` + "\n"; string(b) != want {
		t.Fatalf("checkpoint-stats.json = %s, want %s", b, want)
	}
	if err := os.WriteFile(stats, bytes.Replace(b, []byte(`"cp2":2`), []byte(`"cp2":7`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	s = open()
	all[3].files = 7
	checkRows(t, "/rewind --all from the kept counts", execCmd(t, s, "/rewind --all").Rows, all)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(stats); err != nil {
		t.Fatal(err)
	}
	all[3].files = 2

	// Without the cache a second process computes the same listing, then
	// redo and a new turn work on the old session, and the new turn's
	// record carries its count.
	s = open()
	defer s.Close()
	checkRows(t, "/rewind --all after reopening", execCmd(t, s, "/rewind --all").Rows, all)
	pv := execCmd(t, s, "/redo").Preview
	if pv == nil {
		t.Fatal("/redo gave no preview")
	}
	if res := execCmd(t, s, pv.Command); res.Restored == nil {
		t.Fatalf("%s: %+v", pv.Command, res)
	}
	res, err := s.Prompt(context.Background(), "write e.txt\ne\nEOF", nil)
	if err != nil || res.Status != "completed" || res.CheckpointID != "cp6" {
		t.Fatalf("new turn: %+v, %v", res, err)
	}
	checkRows(t, "/rewind after a new turn", execCmd(t, s, "/rewind").Rows, []rowWant{{"cp6", 1, false}, {"cp5", 0, false}, {"cp4", 1, false}, {"cp1", 1, false}})
	if b, err := os.ReadFile(filepath.Join(s.Info().ActiveRoot, "e.txt")); err != nil || string(b) != "e\n" {
		t.Fatalf("e.txt: %q, %v", b, err)
	}
	if d, ok := session.ReadDigest(sessDir); !ok || d.Turns != 4 {
		t.Fatalf("listing digest after the new turn: %+v %v", d, ok)
	}
	tl, err := os.ReadFile(filepath.Join(data, "sessions", fixtureSession, "timeline.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(tl)), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, `"type":"turn.completed","ts":`) || !strings.Contains(last, `"checkpoint":"cp6"`) || !strings.Contains(last, `"files_changed":1`) {
		t.Fatalf("the new turn's record: %s", last)
	}
}

// simRepo makes a repository with one commit (a.txt) and returns the
// environment of a sim session there.
func simRepo(t *testing.T) app.Env {
	t.Helper()
	repo := gittest.NewRepo(t)
	gittest.WriteFile(t, repo, "a.txt", "a\n")
	gittest.Commit(t, repo, "base")
	return apptest.Env(t, repo)
}
