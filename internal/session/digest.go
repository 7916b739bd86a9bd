package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/yolop-dev/yolop/internal/session/jsonl"
)

// DigestFile is the listing digest inside a session directory.
const DigestFile = "summary.json"

// Digest is what a session listing shows beyond workspace.json (which
// holds the title and the last-used time): the number of turns on the
// active branch and whether the session is read-only. The session's writer
// saves it at the end of every turn and restore, so listing many sessions
// reads two small files per session instead of parsing its logs.
//
// It is derived, never the source of truth: it names the size and
// modification time of events.jsonl and timeline.jsonl it was computed
// from, and a digest whose files have changed since (a crash between an
// append and the digest, an older yolop writing the session) is ignored.
//
//	{"v":1,"turns":12,"events":{"size":48213,"mtime_ns":…},"timeline":{"size":6120,"mtime_ns":…}}
type Digest struct {
	V     int `json:"v"`
	Turns int `json:"turns"`
	// ReadOnly says why the session is read-only ("" when writable).
	ReadOnly string `json:"read_only,omitempty"`
	Events   Stamp  `json:"events"`
	Timeline Stamp  `json:"timeline"`
}

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
	if json.Unmarshal(data, &d) != nil || d.V != 1 || d.Turns < 0 {
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
	d.V = 1
	ev, tl, err := Stamps(dir)
	if err != nil {
		return fmt.Errorf("save %s: %w", DigestFile, err)
	}
	if ev != d.Events || tl != d.Timeline {
		return nil
	}
	if old, ok := ReadDigest(dir); ok && old == d {
		return nil
	}
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	err = jsonl.WriteFileAtomic(filepath.Join(dir, DigestFile), append(b, '\n'))
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EROFS) {
		// A listing of sessions it may not write (another user's data
		// dir, a read-only mount) still works, only without the cache.
		return nil
	}
	return err
}

// SaveDigest records the digest of this session as it is now: turns on
// the active branch and the read-only reason ("" when writable). The
// session's writer calls it after every turn and restore.
func (s *Session) SaveDigest(turns int, readOnly string) error {
	ev, tl, err := Stamps(s.Dir)
	if err != nil {
		return fmt.Errorf("save %s: %w", DigestFile, err)
	}
	return SaveDigest(s.Dir, Digest{Turns: turns, ReadOnly: readOnly, Events: ev, Timeline: tl})
}
