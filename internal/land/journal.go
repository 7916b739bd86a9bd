package land

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Record types of journal.jsonl.
const (
	recApplyStarted = "apply.started"
	recApplyDone    = "apply.done"
	recApplyAborted = "apply.aborted"
	recUndoStarted  = "undo.started"
	recUndoDone     = "undo.done"
)

// record is one line of journal.jsonl.
type record struct {
	V         int       `json:"v"`
	Type      string    `json:"type"`
	Time      time.Time `json:"ts"`
	SessionID string    `json:"session_id"`
	N         int       `json:"n"`
	Target    string    `json:"target,omitempty"`
	UndoRef   string    `json:"undo_ref,omitempty"`
	Before    string    `json:"before,omitempty"` // the checkout's tree before (raw bytes)
	After     string    `json:"after,omitempty"`  // the tree the step writes
	Paths     []string  `json:"paths,omitempty"`  // the paths it writes
	// Dirs are the written paths' parent directories that existed before
	// the apply: deleting the files it created must not take an emptied
	// directory of the user's with them.
	Dirs      []string `json:"dirs,omitempty"`
	Conflicts int      `json:"conflicts,omitempty"`
	Note      string   `json:"note,omitempty"`
}

// journal is the per-checkout state: a lock and an append-only log.
type journal struct {
	dir  string
	lock *os.File
	recs []record
}

// openJournal takes the checkout's lock and reads its journal.
func openJournal(dataDir, checkout string) (*journal, error) {
	dir := stateDir(dataDir, checkout)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("apply state %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "target"), []byte(checkout+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("apply state %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("apply lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (%s); wait for it to finish and retry", ErrLocked, checkout)
		}
		return nil, fmt.Errorf("apply lock: %w", err)
	}
	recs, err := readJournal(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		f.Close()
		return nil, err
	}
	return &journal{dir: dir, lock: f, recs: recs}, nil
}

func (j *journal) close() {
	if j.lock != nil {
		j.lock.Close() // releases the flock
		j.lock = nil
	}
}

// readJournal reads the records; a torn or garbled last line (a crash
// mid-append) is ignored, a garbled line before it is an error.
func readJournal(path string) ([]record, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read apply journal: %w", err)
	}
	var recs []record
	lines := bytes.Split(b, []byte("\n"))
	for i, l := range lines {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var r record
		if err := json.Unmarshal(l, &r); err != nil {
			last := i == len(lines)-1 || (i == len(lines)-2 && len(lines[len(lines)-1]) == 0)
			if last {
				break
			}
			return nil, fmt.Errorf("apply journal %s line %d is corrupt: %v; move the file aside to continue (its applies can no longer be undone)", path, i+1, err)
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// append writes one record and fsyncs it before returning.
func (j *journal) append(r record) error {
	r.V = 1
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	path := filepath.Join(j.dir, "journal.jsonl")
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("apply journal: %w", err)
	}
	// A torn last line must not glue onto this record.
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		if last, err := lastByte(path); err == nil && last != '\n' {
			b = append([]byte("\n"), b...)
		}
	}
	w := bufio.NewWriter(f)
	w.Write(b)
	w.WriteByte('\n')
	err = w.Flush()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("apply journal: %w", err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		if d, err := os.Open(j.dir); err == nil {
			d.Sync()
			d.Close()
		}
	}
	j.recs = append(j.recs, r)
	return nil
}

func lastByte(path string) (byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return '\n', err
	}
	b := make([]byte, 1)
	_, err = f.ReadAt(b, st.Size()-1)
	return b[0], err
}

// pending returns the last started step that has no outcome, if any.
func (j *journal) pending() *record {
	open := map[[2]any]int{}
	for i, r := range j.recs {
		switch r.Type {
		case recApplyStarted, recUndoStarted:
			open[[2]any{r.SessionID, r.N}] = i
		case recApplyDone, recApplyAborted, recUndoDone:
			delete(open, [2]any{r.SessionID, r.N})
		}
	}
	best := -1
	for _, i := range open {
		if i > best {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	r := j.recs[best]
	return &r
}

// lastApplied returns the newest finished apply of the session that was
// not undone, with its started record (paths, before, after).
func (j *journal) lastApplied(sessionID string) (*record, bool) {
	started := map[int]record{}
	var order []int
	state := map[int]string{}
	for _, r := range j.recs {
		if r.SessionID != sessionID {
			continue
		}
		switch r.Type {
		case recApplyStarted:
			started[r.N] = r
			order = append(order, r.N)
		case recApplyDone, recApplyAborted, recUndoDone:
			state[r.N] = r.Type
		}
	}
	for i := len(order) - 1; i >= 0; i-- {
		n := order[i]
		if state[n] == recApplyDone {
			r := started[n]
			return &r, true
		}
	}
	return nil, false
}

// nextN returns the next apply number of the session in this journal.
func (j *journal) nextN(sessionID string) int {
	n := 0
	for _, r := range j.recs {
		if r.SessionID == sessionID && r.N > n {
			n = r.N
		}
	}
	return n + 1
}
