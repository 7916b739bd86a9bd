package jsonl

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"syscall"
)

// markWindow is how many bytes before a mark's offset its hash covers.
const markWindow = 4096

// Mark names a prefix of a log that a reader has already parsed (and
// derived state from): its length and a hash of its last bytes. Logs only
// grow by appends, so a file that is at least Offset long and whose bytes
// before Offset still hash to Tail still starts with that prefix, as far
// as a check that does not reread it can tell. A rewritten or truncated
// prefix, the usual ways a log is damaged or replaced, changes the hash.
type Mark struct {
	Offset int64
	Tail   [sha256.Size]byte
}

// tailHash hashes the markWindow bytes before off in f.
func tailHash(f *os.File, off int64) ([sha256.Size]byte, error) {
	start := max(0, off-markWindow)
	buf := make([]byte, off-start)
	if _, err := f.ReadAt(buf, start); err != nil {
		return [sha256.Size]byte{}, err
	}
	if len(buf) > 0 && buf[len(buf)-1] != '\n' {
		return [sha256.Size]byte{}, fmt.Errorf("byte %d is not the end of a line", off)
	}
	return sha256.Sum256(buf), nil
}

// Mark returns the mark of the file as this writer knows it (its whole
// length).
func (l *File) Mark() (Mark, error) {
	h, err := tailHash(l.f, l.size)
	if err != nil {
		return Mark{}, fmt.Errorf("mark %s: %w", l.path, err)
	}
	return Mark{Offset: l.size, Tail: h}, nil
}

// OpenFileAt is OpenFile for a reader that has already parsed the prefix
// m names: when the file still starts with it (see Mark), it returns only
// the bytes after m.Offset and ok. Otherwise it returns the whole file and
// ok false, exactly like OpenFile. The file must exist.
func OpenFileAt(path string, m Mark) (_ *File, data []byte, ok bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, nil, false, openError(path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	if err := checkRegular(f, path); err != nil {
		return nil, nil, false, err
	}
	if err := f.Chmod(0o600); err != nil {
		return nil, nil, false, fmt.Errorf("set permissions of %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, false, fmt.Errorf("stat %s: %w", path, err)
	}
	size := fi.Size()
	from := int64(0)
	if m.Offset > 0 && m.Offset <= size {
		if h, err := tailHash(f, m.Offset); err == nil && h == m.Tail {
			from = m.Offset
		}
	}
	data = make([]byte, size-from)
	if _, err := f.ReadAt(data, from); err != nil && err != io.EOF {
		return nil, nil, false, fmt.Errorf("read %s: %w", path, err)
	}
	return &File{f: f, path: path, size: size}, data, from > 0, nil
}

// TruncateTailAt is TruncateTail for data read from byte base of the file
// (OpenFileAt): valid is relative to data.
func (l *File) TruncateTailAt(data []byte, base, valid int64) (string, error) {
	if valid >= int64(len(data)) {
		return "", nil
	}
	kept, err := keepAside(l.path, data[valid:])
	if err != nil {
		return "", err
	}
	if err := l.f.Truncate(base + valid); err != nil {
		return kept, fmt.Errorf("truncate %s to %d bytes: %w", l.path, base+valid, err)
	}
	if err := l.f.Sync(); err != nil {
		return kept, fmt.Errorf("fsync %s: %w", l.path, err)
	}
	l.size = base + valid
	return kept, nil
}

// ReadPrefix reads the first n bytes of the file (a prefix OpenFileAt
// skipped, when a reader needs it after all).
func (l *File) ReadPrefix(n int64) ([]byte, error) {
	buf := make([]byte, n)
	if _, err := l.f.ReadAt(buf, 0); err != nil && !(err == io.EOF && n == 0) {
		return nil, fmt.Errorf("read %s: %w", l.path, err)
	}
	return buf, nil
}

// ReadRange reads bytes [from, to) of the file.
func (l *File) ReadRange(from, to int64) ([]byte, error) {
	buf := make([]byte, to-from)
	if _, err := l.f.ReadAt(buf, from); err != nil && !(err == io.EOF && to == from) {
		return nil, fmt.Errorf("read %s: %w", l.path, err)
	}
	return buf, nil
}

// ReadAt reads from the file at off (io.ReaderAt).
func (l *File) ReadAt(p []byte, off int64) (int, error) { return l.f.ReadAt(p, off) }
