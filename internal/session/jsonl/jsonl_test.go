package jsonl

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func parseNum(line []byte) (string, error) {
	if len(line) == 0 || line[0] != 'n' {
		return "", errors.New("bad")
	}
	return string(line), nil
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		data    string
		records int
		valid   int64
		tail    int64
		corrupt int // line; 0 = none
	}{
		{"", 0, 0, 0, 0},
		{"n1\nn2\n", 2, 6, 0, 0},
		{"n1\nn2", 1, 3, 2, 0},           // no final newline
		{"n1\nxx\n", 1, 3, 3, 0},         // bad final line
		{"n1\nxx\n\x00\x00", 1, 3, 5, 0}, // bad lines then zeros: all tail
		{"n1\n\n", 1, 3, 1, 0},           // empty final line
		{"n1\nxx\nn3\n", 1, 3, 0, 2},     // bad line followed by a good one
		{"xx\nn2\nn3", 0, 0, 0, 1},
	}
	for _, tt := range tests {
		s := Parse("f", []byte(tt.data), parseNum)
		got := 0
		if s.Corrupt != nil {
			got = s.Corrupt.Line
		}
		if len(s.Records) != tt.records || s.Valid != tt.valid || s.Tail != tt.tail || got != tt.corrupt {
			t.Errorf("Parse(%q) = %d records, valid %d, tail %d, corrupt line %d; want %d, %d, %d, %d",
				tt.data, len(s.Records), s.Valid, s.Tail, got, tt.records, tt.valid, tt.tail, tt.corrupt)
		}
	}
}

func TestFileAppendAndTruncateTail(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "log.jsonl")
	f, data, err := OpenFile(path, true)
	if err != nil || len(data) != 0 {
		t.Fatal(data, err)
	}
	if err := f.Append(map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if err := f.AppendLine([]byte("a\nb")); err == nil {
		t.Fatal("a line with a newline was accepted")
	}
	f.Close()
	os.WriteFile(path, []byte("{\"n\":1}\n{\"n\":"), 0o600)
	f, data, err = OpenFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kept, err := f.TruncateTail(data, 8)
	if err != nil || !strings.HasPrefix(filepath.Base(kept), "log.jsonl.corrupt-") {
		t.Fatalf("TruncateTail: %q %v", kept, err)
	}
	if b, _ := os.ReadFile(kept); string(b) != "{\"n\":" {
		t.Fatalf("kept %q", b)
	}
	f.AppendLine([]byte(`{"n":2}`))
	if b, _ := os.ReadFile(path); !bytes.Equal(b, []byte("{\"n\":1}\n{\"n\":2}\n")) {
		t.Fatalf("after repair and append: %q", b)
	}
	if _, _, err := OpenFile(filepath.Join(t.TempDir(), "missing"), false); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("open missing without create: %v", err)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "w.json")
	for _, content := range []string{"one", "two"} {
		if err := WriteFileAtomic(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(path); string(b) != content {
			t.Fatalf("content %q, want %q", b, content)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temp files left behind: %v", entries)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
}
