package worktree

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// prepareFailedName, in <data-dir>/worktrees/<repo-id>/, records why the
// last background preparation of a spare for that repository failed. The
// preparation runs detached with nowhere to print; this note is how the
// user learns of it (`worktree list`, the next session start). A
// preparation that succeeds removes it.
const prepareFailedName = ".prepare-failed"

// PrepareFailure is the record a failed spare preparation leaves.
type PrepareFailure struct {
	RepoID string    `json:"-"`
	Repo   string    `json:"repo"` // the checkout it was started from
	At     time.Time `json:"at"`
	Err    string    `json:"error"`
}

// Note is the sentence shown at a session start.
func (f PrepareFailure) Note() string {
	return fmt.Sprintf("the background preparation of a spare worktree for %s failed at %s: %s; until one succeeds, sessions here start with a full checkout (it is tried again after this session's first turn; `yolop worktree list` shows the last failure)",
		f.Repo, f.At.Local().Format("2006-01-02 15:04:05"), f.Err)
}

// recordPrepare writes (err != nil) or clears (err == nil) the failure
// note of the repository whose spares live in dir. A preparation that
// found the repository has all its spares clears it too (nothing is
// missing); one that was cancelled leaves it as it was.
func recordPrepare(dir, repoRoot string, err error) {
	p := filepath.Join(dir, prepareFailedName)
	switch {
	case err == nil, errors.Is(err, ErrSpareLimit):
		_ = os.Remove(p)
	case errors.Is(err, context.Canceled):
	default:
		b, jerr := json.Marshal(PrepareFailure{Repo: repoRoot, At: time.Now(), Err: err.Error()})
		if jerr != nil {
			return
		}
		// Written whole or not at all: a torn note is worse than none.
		tmp := p + ".tmp"
		if os.WriteFile(tmp, b, 0o600) == nil {
			_ = os.Rename(tmp, p)
		}
	}
}

// RecordPrepareFailure notes that the background preparation for repo
// could not even be started (err).
func (m *Manager) RecordPrepareFailure(repo *Repo, err error) {
	if repo == nil || err == nil {
		return
	}
	dir, derr := m.repoDir(repo.CommonDir)
	if derr != nil || mkdirPrivate(dir) != nil {
		return
	}
	recordPrepare(dir, repo.Root, err)
}

// readPrepareFailure reads the failure note in dir (nil when none).
func readPrepareFailure(dir string) *PrepareFailure {
	b, err := os.ReadFile(filepath.Join(dir, prepareFailedName))
	if err != nil {
		return nil
	}
	var f PrepareFailure
	if json.Unmarshal(b, &f) != nil || f.Err == "" {
		f = PrepareFailure{Err: "unreadable note: " + strings.TrimSpace(string(b))}
	}
	f.RepoID = filepath.Base(dir)
	return &f
}

// PrepareFailures lists the repositories whose last spare preparation
// failed, by repository directory.
func (m *Manager) PrepareFailures() ([]PrepareFailure, error) {
	dirs, err := m.repoDirs()
	if err != nil {
		return nil, err
	}
	var out []PrepareFailure
	for _, dir := range dirs {
		if f := readPrepareFailure(dir); f != nil {
			out = append(out, *f)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RepoID < out[j].RepoID })
	return out, nil
}
