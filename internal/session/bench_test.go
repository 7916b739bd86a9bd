package session

import (
	"os"
	"strconv"
	"testing"
)

// BenchmarkAppend measures one durable (fsynced) event append.
func BenchmarkAppend(b *testing.B) {
	s, err := Create(b.TempDir(), conversation())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	data := map[string]string{"text": "a tool result of moderate size, as a turn writes many of them"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Append("tool.result", "cp1", data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen measures Open (lock, permissions, parse) of a 10k-event log.
func BenchmarkOpen(b *testing.B) {
	dataDir := b.TempDir()
	s, err := Create(dataDir, conversation())
	if err != nil {
		b.Fatal(err)
	}
	var lines []byte
	for i := 1; i <= 10000; i++ {
		lines = append(lines, []byte(`{"v":1,"seq":`)...)
		lines = append(lines, []byte(itoa(i))...)
		lines = append(lines, []byte(`,"type":"m","ts":"2026-01-01T00:00:00Z","turn":"cp1","data":{"text":"some message text of a typical length for a chat turn"}}`+"\n")...)
	}
	if err := s.log.AppendLine(lines[:len(lines)-1]); err == nil {
		b.Fatal("multi-line append accepted")
	}
	s.Close()
	writeFile(b, s.Path(EventsFile), lines)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s2, err := Open(dataDir, s.ID)
		if err != nil {
			b.Fatal(err)
		}
		if len(s2.Events()) != 10000 {
			b.Fatal("lost events")
		}
		s2.Close()
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func writeFile(b *testing.B, path string, data []byte) {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
}
