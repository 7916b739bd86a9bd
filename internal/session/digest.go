package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/yolop-dev/yolop/internal/fsutil"
	"github.com/yolop-dev/yolop/internal/session/jsonl"
)

// DigestFile is the listing digest inside a session directory.
const DigestFile = "summary.json"

// Digest is what a session listing shows beyond workspace.json (which
// holds the title): the number of turns on the active branch, whether the
// session is read-only, and when it was last used. The session's writer
// saves it at the end of every turn and restore, so listing many sessions
// reads two small files per session instead of parsing its logs.
//
// It is derived, never the source of truth: it names the size and
// modification time of events.jsonl and timeline.jsonl it was computed
// from, and a digest whose files have changed since (a crash between an
// append and the digest, an older yolop writing the session) is ignored.
//
//	{"v":1,"rev":2,"turns":12,"last_used":"2026-12-01T10:00:00Z","events":{"size":48213,"mtime_ns":…},"timeline":{"size":6120,"mtime_ns":…}}
//
// Rev says which fields the writer filled: digests without it (rev 1)
// predate last_used and are treated as stale, so that a listing never
// shows a session as never used because its digest is old.
type Digest struct {
	V   int `json:"v"`
	Rev int `json:"rev,omitempty"`
	// Turns is the number of turns on the active branch.
	Turns int `json:"turns"`
	// ReadOnly says why the session is read-only ("" when writable).
	ReadOnly string `json:"read_only,omitempty"`
	// LastUsed is when a turn last ran or a restore was last confirmed
	// (timeline.State.LastUsed); zero when neither ever happened.
	LastUsed time.Time `json:"last_used,omitzero"`
	Events   Stamp     `json:"events"`
	Timeline Stamp     `json:"timeline"`
}

// DigestRev is the revision of the digest this yolop writes and reads.
const DigestRev = 2

// Stamp identifies the content of an append-only file: every append
// changes its size and modification time. A missing file has Size -1.
type Stamp struct {
	Size    int64 `json:"size"`
	ModTime int64 `json:"mtime_ns"`
}

// Stamps returns the current stamps of a session directory's event log and
// timeline. Take them before reading the files when computing a digest.
func Stamps(dir string) (events, timeline Stamp, err error) {
	if events, err = stampOf(filepath.Join(dir, EventsFile)); err != nil {
		return events, timeline, err
	}
	timeline, err = stampOf(filepath.Join(dir, TimelineFile))
	return events, timeline, err
}

func stampOf(path string) (Stamp, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Stamp{Size: -1}, nil
	}
	if err != nil {
		return Stamp{}, err
	}
	return Stamp{Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}, nil
}

// ReadDigest returns the digest of the session in dir when it exists and
// still describes the session's files.
func ReadDigest(dir string) (Digest, bool) {
	data, err := jsonl.ReadFile(filepath.Join(dir, DigestFile))
	if err != nil {
		return Digest{}, false
	}
	var d Digest
	if json.Unmarshal(data, &d) != nil || d.V != 1 || d.Rev != DigestRev || d.Turns < 0 {
		return Digest{}, false
	}
	ev, tl, err := Stamps(dir)
	if err != nil || ev != d.Events || tl != d.Timeline {
		return Digest{}, false
	}
	return d, true
}

// SaveDigest writes the digest of the session in dir, computed from files
// whose stamps were events and timeline before they were read. It writes
// nothing when the files changed since (a writer appended meanwhile: its
// own digest, or the next listing, will describe them) or when the same
// digest is already there.
func SaveDigest(dir string, d Digest) error {
	d.V, d.Rev = 1, DigestRev
	d.LastUsed = d.LastUsed.UTC()
	ev, tl, err := Stamps(dir)
	if err != nil {
		return fmt.Errorf("save %s: %w", DigestFile, err)
	}
	if ev != d.Events || tl != d.Timeline {
		return nil
	}
	if old, ok := ReadDigest(dir); ok && old.Turns == d.Turns && old.ReadOnly == d.ReadOnly && old.LastUsed.Equal(d.LastUsed) && old.Events == d.Events && old.Timeline == d.Timeline {
		return nil
	}
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("save %s: %w", DigestFile, err)
	}
	// Checked against the logs' stamps when read: a crash may only cost
	// the next listing the work it saves.
	err = fsutil.WriteFileCache(filepath.Join(dir, DigestFile), append(b, '\n'), 0o600)
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EROFS) {
		// A listing of sessions it may not write (another user's data
		// dir, a read-only mount) still works, only without the cache.
		return nil
	}
	if err != nil {
		return fmt.Errorf("save %s: %w", DigestFile, err)
	}
	return nil
}

// SaveDigest records the digest of this session as it is now (d's
// Turns, ReadOnly and LastUsed; the stamps are taken here). The session's
// writer calls it after every turn and restore, when both logs are
// flushed.
func (s *Session) SaveDigest(d Digest) error {
	ev, tl, err := Stamps(s.Dir)
	if err != nil {
		return fmt.Errorf("save %s: %w", DigestFile, err)
	}
	d.Events, d.Timeline = ev, tl
	return SaveDigest(s.Dir, d)
}
