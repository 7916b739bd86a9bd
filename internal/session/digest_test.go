package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDigest: a saved digest is read back while the logs are unchanged,
// is ignored once either log changes, and a digest computed from files
// that changed meanwhile is not written.
func TestDigest(t *testing.T) {
	t.Parallel()
	_, s := newSession(t)
	defer s.Close()
	if _, ok := ReadDigest(s.Dir); ok {
		t.Fatal("a new session has a digest")
	}
	if _, err := s.Append("m", "cp1", map[string]string{"text": "hi"}); err != nil {
		t.Fatal(err)
	}
	used := time.Date(2026, 12, 1, 10, 0, 0, 5, time.UTC)
	if err := s.SaveDigest(Digest{Turns: 3, LastUsed: used}); err != nil {
		t.Fatal(err)
	}
	d, ok := ReadDigest(s.Dir)
	if !ok || d.Turns != 3 || d.ReadOnly != "" || d.Timeline.Size != 0 || !d.LastUsed.Equal(used) {
		t.Fatalf("digest: %+v %v", d, ok)
	}
	// A digest written before last_used existed is stale.
	b, err := os.ReadFile(filepath.Join(s.Dir, DigestFile))
	if err != nil {
		t.Fatal(err)
	}
	old := strings.Replace(string(b), `"rev":2,`, "", 1)
	if old == string(b) {
		t.Fatalf("no rev in %s", b)
	}
	if err := os.WriteFile(filepath.Join(s.Dir, DigestFile), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := ReadDigest(s.Dir); ok {
		t.Fatal("a digest without rev 2 was read")
	}
	// An append to either log makes it stale.
	if _, err := s.Append("m", "cp1", map[string]string{"text": "again"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := ReadDigest(s.Dir); ok {
		t.Fatal("digest still valid after an event was appended")
	}
	if err := s.SaveDigest(Digest{Turns: 4}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir, TimelineFile), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := ReadDigest(s.Dir); ok {
		t.Fatal("digest still valid after the timeline changed")
	}
	// Computed from stamps taken before a change: not written.
	ev, tl, err := Stamps(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append("m", "cp1", map[string]string{"text": "meanwhile"}); err != nil {
		t.Fatal(err)
	}
	if err := SaveDigest(s.Dir, Digest{Turns: 9, Events: ev, Timeline: tl}); err != nil {
		t.Fatal(err)
	}
	if d, ok := ReadDigest(s.Dir); ok {
		t.Fatalf("a digest of files that changed meanwhile was kept: %+v", d)
	}
	// Damaged: ignored.
	if err := os.WriteFile(filepath.Join(s.Dir, DigestFile), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := ReadDigest(s.Dir); ok {
		t.Fatal("a damaged digest was read")
	}
}
