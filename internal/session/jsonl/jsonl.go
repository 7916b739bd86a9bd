// Package jsonl is the append-only JSON-lines file shared by yolop's session
// logs (events.jsonl, timeline.jsonl, compaction-checkpoints.jsonl).
//
// It knows nothing about record types. It opens files owner-only without
// following symlinks, splits their bytes into a valid prefix, a torn tail
// and (when present) the first corrupt line of the committed prefix, keeps a
// torn tail aside before truncating it, and appends one line per write with
// an fsync.
//
// The distinction between a torn tail and mid-file corruption follows one
// rule: a line that does not parse, or the final bytes without a newline, is
// part of the tail when no parsable line follows it. A bad line followed by
// a good one cannot come from an interrupted append (every append is one
// write followed by fsync), so it is reported as corruption and nothing is
// repaired.
package jsonl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/fsutil"
)

// ErrCorrupt is wrapped by every *CorruptError.
var ErrCorrupt = fault.Plain("jsonl: corrupt record")

// CorruptError locates a record that cannot be trusted.
type CorruptError struct {
	File   string // file name (base name for logs inside a session dir)
	Line   int    // 1-based line number
	Offset int64  // byte offset of the line's first byte; -1 when unknown
	Reason string
}

func (e *CorruptError) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("%s line %d: %s", e.File, e.Line, e.Reason)
	}
	return fmt.Sprintf("%s line %d (byte %d): %s", e.File, e.Line, e.Offset, e.Reason)
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// Record is one accepted line.
type Record[T any] struct {
	Line int   // 1-based
	Off  int64 // offset of the first byte
	End  int64 // offset just past the newline
	Val  T
}

// Scan is the classification of a file's bytes.
type Scan[T any] struct {
	// Records are the accepted lines of the valid prefix, in order.
	Records []Record[T]
	// Valid is the length of the valid prefix in bytes.
	Valid int64
	// Tail is the number of bytes after Valid that form a torn tail. It is
	// zero when Corrupt is set: nothing is repaired then.
	Tail int64
	// TailReason says what was wrong with the first torn-tail line.
	TailReason string
	// Corrupt is the first bad line of the committed prefix (a bad line
	// followed by a good one), or nil.
	Corrupt *CorruptError
}

// Parse classifies data. parse decodes one line (without its newline) and
// returns an error when the line is not a record.
func Parse[T any](file string, data []byte, parse func([]byte) (T, error)) Scan[T] {
	var (
		s        Scan[T]
		off      int64
		lineNo   int
		firstBad *CorruptError
	)
	for off < int64(len(data)) {
		lineNo++
		rest := data[off:]
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			// Bytes without a final newline: an interrupted append.
			if firstBad == nil {
				firstBad = &CorruptError{File: file, Line: lineNo, Offset: off, Reason: "incomplete final record (no newline)"}
			}
			break
		}
		line := rest[:i]
		end := off + int64(i) + 1
		v, err := parse(line)
		if err != nil {
			if firstBad == nil {
				firstBad = &CorruptError{File: file, Line: lineNo, Offset: off, Reason: describe(line, err)}
			}
			off = end
			continue
		}
		if firstBad != nil {
			// A good line after a bad one: the bad one is in the
			// committed prefix.
			s.Corrupt = firstBad
			return s
		}
		s.Records = append(s.Records, Record[T]{Line: lineNo, Off: off, End: end, Val: v})
		s.Valid = end
		off = end
	}
	s.Tail = int64(len(data)) - s.Valid
	if firstBad != nil {
		s.TailReason = firstBad.Reason
	}
	return s
}

// IsObject reports whether line holds a JSON object (json.Unmarshal would
// accept "null" into a struct).
func IsObject(line []byte) bool {
	t := bytes.TrimLeft(line, " \t\r")
	return len(t) > 0 && t[0] == '{'
}

func describe(line []byte, err error) string {
	if len(line) == 0 {
		return "empty line"
	}
	if bytes.Count(line, []byte{0}) == len(line) {
		return "zeroed bytes"
	}
	return "malformed record: " + err.Error()
}

// File is an append-only JSON-lines file opened for writing. It is not safe
// for concurrent use; owners serialize access.
type File struct {
	f    *os.File
	path string
	size int64
	// broken is set when a failed append could not be rolled back; the
	// file may then end in a partial line and must not grow further.
	broken error
}

// OpenFile opens path read-write for appending, creating it (0600) when
// create is set. It refuses symlinks and non-regular files and re-applies
// 0600. It returns the file's current contents.
func OpenFile(path string, create bool) (*File, []byte, error) {
	return openFile(path, create, true)
}

// CreateFile is OpenFile with create, for a log expected to be new,
// without syncing its directory: the caller makes the new name durable.
func CreateFile(path string) (*File, error) {
	f, _, err := openFile(path, true, false)
	return f, err
}

func openFile(path string, create, syncNew bool) (*File, []byte, error) {
	flags := os.O_RDWR | os.O_APPEND | syscall.O_NOFOLLOW | syscall.O_CLOEXEC
	f, err := os.OpenFile(path, flags, 0o600)
	made := false
	for try := 0; create && errors.Is(err, os.ErrNotExist) && try < 3; try++ {
		// Made here, or by a racing opener: only a file made here has a
		// new name to make durable.
		if f, err = os.OpenFile(path, flags|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
			made = true
		} else if errors.Is(err, os.ErrExist) {
			f, err = os.OpenFile(path, flags, 0o600)
		}
	}
	if err != nil {
		return nil, nil, openError(path, err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
		}
	}()
	if err := checkRegular(f, path); err != nil {
		return nil, nil, err
	}
	if err := f.Chmod(0o600); err != nil {
		return nil, nil, fmt.Errorf("set permissions of %s: %w", path, err)
	}
	if made && syncNew {
		// The directory entry is new; make it durable. One that existed
		// already was made durable by whoever made it.
		if err := SyncDir(filepath.Dir(path)); err != nil {
			return nil, nil, err
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	ok = true
	return &File{f: f, path: path, size: int64(len(data))}, data, nil
}

// ReadFile reads path without following a symlink and without writing.
func ReadFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, openError(path, err)
	}
	defer f.Close()
	if err := checkRegular(f, path); err != nil {
		return nil, err
	}
	// Sized from the file, as os.ReadFile does: growing a buffer for a
	// long session's derived files (megabytes) copied them many times.
	size := 512
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 && fi.Size() < 1<<40 {
		size = int(fi.Size()) + bytes.MinRead // ReadFrom grows when less is free
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return buf.Bytes(), nil
}

func openError(path string, err error) error {
	if errors.Is(err, syscall.ELOOP) {
		return fmt.Errorf("open %s: refusing to follow a symlink; replace it with a regular file: %w", path, err)
	}
	return fmt.Errorf("open %s: %w", path, err)
}

func checkRegular(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("open %s: not a regular file (%s)", path, fi.Mode().Type())
	}
	return nil
}

// Path is the file's path.
func (l *File) Path() string { return l.path }

// Size is the file's length as known to this writer.
func (l *File) Size() int64 { return l.size }

// TruncateTail keeps data[valid:] aside in "<path>.corrupt-<UTC time>"
// (0600, fsynced), then truncates the file to valid and fsyncs it. The
// broken bytes are never lost: they are written aside before the file
// shrinks. It returns the path of the kept bytes.
func (l *File) TruncateTail(data []byte, valid int64) (string, error) {
	if valid >= int64(len(data)) {
		return "", nil
	}
	kept, err := keepAside(l.path, data[valid:])
	if err != nil {
		return "", err
	}
	if err := l.f.Truncate(valid); err != nil {
		return kept, fmt.Errorf("truncate %s to %d bytes: %w", l.path, valid, err)
	}
	if err := l.f.Sync(); err != nil {
		return kept, fmt.Errorf("fsync %s: %w", l.path, err)
	}
	l.size = valid
	return kept, nil
}

func keepAside(path string, tail []byte) (string, error) {
	stamp := time.Now().UTC().Format("20060102T150405.000000000Z")
	for i := 0; ; i++ {
		name := path + ".corrupt-" + stamp
		if i > 0 {
			name = fmt.Sprintf("%s-%d", name, i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
		if errors.Is(err, os.ErrExist) && i < 100 {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("keep torn tail of %s aside: %w", path, err)
		}
		_, werr := f.Write(tail)
		serr := f.Sync()
		cerr := f.Close()
		if err := errors.Join(werr, serr, cerr); err != nil {
			os.Remove(name)
			return "", fmt.Errorf("keep torn tail of %s aside in %s: %w", path, name, err)
		}
		if err := SyncDir(filepath.Dir(path)); err != nil {
			return "", err
		}
		return name, nil
	}
}

// Append marshals v as one line and writes it with a single write call,
// then fsyncs. A failed write is rolled back by truncating to the previous
// length, so the file never ends in a partial line that a later append
// would bury in the committed prefix.
func (l *File) Append(v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode record for %s: %w", l.path, err)
	}
	return l.AppendLine(line)
}

// AppendLine writes line (which must not contain a newline) plus '\n' and
// fsyncs.
func (l *File) AppendLine(line []byte) error {
	if l.broken != nil {
		return fmt.Errorf("append to %s: an earlier write failed and could not be undone (%v); reopen the session to repair its tail", l.path, l.broken)
	}
	if bytes.IndexByte(line, '\n') >= 0 {
		return fmt.Errorf("append to %s: record contains a newline", l.path)
	}
	buf := make([]byte, 0, len(line)+1)
	buf = append(buf, line...)
	buf = append(buf, '\n')
	n, err := l.f.Write(buf)
	if err == nil {
		err = l.f.Sync()
	}
	if err != nil {
		if n > 0 {
			if terr := l.f.Truncate(l.size); terr != nil {
				l.broken = terr
			}
		}
		return fmt.Errorf("append to %s: %w", l.path, err)
	}
	l.size += int64(n)
	return nil
}

// Sync fsyncs the file.
func (l *File) Sync() error {
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", l.path, err)
	}
	return nil
}

// Close closes the file.
func (l *File) Close() error { return l.f.Close() }

// SyncDir fsyncs a directory (fsutil.SyncDir).
func SyncDir(dir string) error { return fsutil.SyncDir(dir) }

// WriteFileAtomic replaces path with data durably, owner-only (0600).
func WriteFileAtomic(path string, data []byte) error {
	return fsutil.WriteFileAtomic(path, data, 0o600)
}

// Digits reads a JSON number that is a non-negative integer without sign,
// leading zero, fraction or exponent, small enough for any int
// (at most 15 digits): the fast decoders of the logs' lines use it, and
// leave anything else to encoding/json.
func Digits(p []byte) (int64, []byte, bool) {
	i := 0
	var n int64
	for i < len(p) && p[i] >= '0' && p[i] <= '9' {
		n = n*10 + int64(p[i]-'0')
		i++
	}
	if i == 0 || i > 15 || (i > 1 && p[0] == '0') {
		return 0, p, false
	}
	if i < len(p) && (p[i] == '.' || p[i] == 'e' || p[i] == 'E') {
		return 0, p, false
	}
	return n, p[i:], true
}
