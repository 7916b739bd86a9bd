package resume

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/yolop-dev/yolop/internal/agent"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/session/jsonl"
	"github.com/yolop-dev/yolop/internal/timeline"
)

func turn(id, parent string, seqBefore, final int64) []timeline.Record {
	return []timeline.Record{
		{V: 1, Type: timeline.TypeCheckpointCreated, Checkpoint: id, Parent: parent, SeqBefore: seqBefore, Prompt: "prompt " + id,
			Snapshot: &timeline.SnapshotRef{Tree: "tree-" + id, Ref: "refs/yolop/checkpoints/s/" + id}},
		{V: 1, Type: timeline.TypeTurnCompleted, Checkpoint: id, FinalSeq: final, Status: timeline.StatusCompleted},
	}
}

// state is the timeline of turns cp1 to cpN, each after the one before.
func state(t *testing.T, n int) *timeline.State {
	t.Helper()
	var recs []timeline.Record
	parent := ""
	for i := 1; i <= n; i++ {
		id := "cp" + string(rune('0'+i))
		recs = append(recs, turn(id, parent, int64(i-1)*5, int64(i)*5)...)
		parent = id
	}
	st := timeline.Build(recs)
	if st.ReadOnly {
		t.Fatalf("test timeline: %s", st.ReadOnlyReason)
	}
	return st
}

func sample(t *testing.T) File {
	t.Helper()
	return File{
		Events:   session.Prefix{Mark: jsonl.Mark{Offset: 123456, Tail: sha256.Sum256([]byte("events"))}, LastSeq: 15},
		Timeline: jsonl.Mark{Offset: 4321, Tail: sha256.Sum256([]byte("timeline"))},
		Usage:    provider.Usage{InputTokens: 1000, OutputTokens: 200, CacheReadTokens: 30, CacheWriteTokens: 4},
		State:    state(t, 3),
		Context:  &agent.ContextCache{Boundary: 5, Through: 15, Data: []byte("\x01context data")},
	}
}

// TestFormat: the bytes are the ones doc.go describes, built here with
// encoding/binary, with and without a model context; what Decode reads
// encodes to the same bytes again.
func TestFormat(t *testing.T) {
	t.Parallel()
	for _, withContext := range []bool{true, false} {
		f := sample(t)
		if !withContext {
			f.Context = nil
		}
		st, err := timeline.AppendState(nil, f.State)
		if err != nil {
			t.Fatal(err)
		}
		want := binary.AppendUvarint([]byte("yolop-resume\n"), 3)
		want = binary.AppendVarint(want, f.Events.Mark.Offset)
		want = binary.AppendVarint(want, f.Events.LastSeq)
		want = append(want, f.Events.Mark.Tail[:]...)
		want = binary.AppendVarint(want, f.Timeline.Offset)
		want = append(want, f.Timeline.Tail[:]...)
		for _, n := range []int{1000, 200, 30, 4} {
			want = binary.AppendVarint(want, int64(n))
		}
		want = binary.AppendUvarint(want, uint64(len(st)))
		want = append(want, st...)
		if withContext {
			want = binary.AppendUvarint(want, 1)
			want = binary.AppendVarint(want, 5)
			want = binary.AppendVarint(want, 15)
			want = binary.AppendUvarint(want, uint64(len(f.Context.Data)))
			want = append(want, f.Context.Data...)
		} else {
			want = binary.AppendUvarint(want, 0)
		}
		want = binary.BigEndian.AppendUint32(want, crc32.ChecksumIEEE(want))

		got, err := Encode(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("context %v: encoded\n%x\nwant\n%x", withContext, got, want)
		}
		d, err := Decode(got)
		if err != nil {
			t.Fatalf("context %v: %v", withContext, err)
		}
		if d.Events != f.Events || d.Timeline != f.Timeline || d.Usage != f.Usage || (d.Context == nil) != !withContext {
			t.Fatalf("context %v: decoded %+v", withContext, d)
		}
		if withContext && (d.Context.Boundary != 5 || d.Context.Through != 15 || !bytes.Equal(d.Context.Data, f.Context.Data)) {
			t.Fatalf("decoded context %+v", d.Context)
		}
		again, err := Encode(*d)
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("context %v: the decoded file encodes differently (%v)", withContext, err)
		}
	}
}

// TestDamage: a file cut anywhere, with any byte garbled, of another
// version or with bytes after its record is never used.
func TestDamage(t *testing.T) {
	t.Parallel()
	good, err := Encode(sample(t))
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(good) {
		if _, err := Decode(good[:n]); !errors.Is(err, ErrUnreadable) {
			t.Fatalf("cut at %d of %d bytes: %v", n, len(good), err)
		}
	}
	for i := range good {
		bad := bytes.Clone(good)
		bad[i] ^= 0x40
		if _, err := Decode(bad); !errors.Is(err, ErrUnreadable) {
			t.Fatalf("byte %d garbled: %v", i, err)
		}
	}
	// A valid checksum over a body of another version, or with a byte
	// after the record.
	reseal := func(body []byte) []byte { return binary.BigEndian.AppendUint32(body, crc32.ChecksumIEEE(body)) }
	body := good[:len(good)-4]
	other := bytes.Clone(body)
	other[len("yolop-resume\n")] = 4
	if _, err := Decode(reseal(other)); !errors.Is(err, ErrUnreadable) {
		t.Fatalf("version 4 read: %v", err)
	}
	if _, err := Decode(reseal(append(bytes.Clone(body), 0))); !errors.Is(err, ErrUnreadable) {
		t.Fatalf("a trailing byte was accepted: %v", err)
	}
}

// TestContextFor: the kept model context is given only while the
// conversation has only grown since it was built.
func TestContextFor(t *testing.T) {
	t.Parallel()
	data, err := Encode(sample(t)) // built at cp3, through seq 15
	if err != nil {
		t.Fatal(err)
	}
	read := func() *File {
		f, err := Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	apply := func(st *timeline.State, recs ...timeline.Record) *timeline.State {
		for _, r := range recs {
			if err := st.Apply(r); err != nil {
				t.Fatal(err)
			}
		}
		return st
	}
	rewind := []timeline.Record{
		{V: 1, Type: timeline.TypeRestoreStarted, Restore: "r1", Target: "cp2", Mode: timeline.ModeConversation, OldHead: "cp3", NewHead: "cp1", AbandonedHead: "cp3"},
		{V: 1, Type: timeline.TypeHeadMoved, Restore: "r1", Target: "cp2", Mode: timeline.ModeConversation, OldHead: "cp3", NewHead: "cp1", AbandonedHead: "cp3"},
	}
	for _, c := range []struct {
		name string
		now  func(f *File) *timeline.State
		want bool
	}{
		{"same head", func(f *File) *timeline.State { return f.State }, true},
		{"grown by two turns", func(f *File) *timeline.State {
			return apply(f.State, append(turn("cp4", "cp3", 15, 20), turn("cp5", "cp4", 20, 25)...)...)
		}, true},
		{"a turn open", func(f *File) *timeline.State { return apply(f.State, turn("cp4", "cp3", 15, 20)[0]) }, false},
		{"rewound", func(f *File) *timeline.State { return apply(f.State, rewind...) }, false},
		{"restore pending", func(f *File) *timeline.State { return apply(f.State, rewind[0]) }, false},
		{"another state", func(*File) *timeline.State { return state(t, 1) }, false},
	} {
		f := read()
		if got := f.ContextFor(c.now(f)) != nil; got != c.want {
			t.Errorf("%s: context given %v, want %v", c.name, got, c.want)
		}
	}
	var none *File
	if none.ContextFor(state(t, 1)) != nil {
		t.Error("no file gave a context")
	}
}

type fakeLogs struct {
	events   int64
	timeline int64
	boundary int64
}

func (l *fakeLogs) Prefix() (session.Prefix, error) {
	return session.Prefix{Mark: jsonl.Mark{Offset: l.events}, LastSeq: l.events / 100}, nil
}
func (l *fakeLogs) Mark() (jsonl.Mark, error)         { return jsonl.Mark{Offset: l.timeline}, nil }
func (l *fakeLogs) CompactionBoundary() (int64, bool) { return l.boundary, true }
func (l *fakeLogs) Usage() (provider.Usage, int)      { return provider.Usage{InputTokens: 7}, 0 }
func (l *fakeLogs) ContextCache() (agent.ContextCache, bool) {
	return agent.ContextCache{Boundary: l.boundary, Through: l.events / 100, Data: []byte("ctx")}, true
}

// TestWriter: the file is written, then kept while the logs grow a little,
// and written again when they grew past the slack, after a restore and
// after a compaction; a read-only session writes none.
func TestWriter(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, Name)
	logs := &fakeLogs{events: 1000, timeline: 100}
	w := NewWriter(dir, logs, logs, logs, nil)
	st := state(t, 2)
	written := func() bool {
		t.Helper()
		_, err := os.Stat(path)
		if err == nil {
			if Read(dir) == nil {
				t.Fatal("the written file does not read")
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			return true
		}
		return false
	}
	steps := []struct {
		name   string
		change func()
		want   bool
	}{
		{"first save", func() {}, true},
		{"grown a little", func() { logs.events += 1000; logs.timeline += 100 }, false},
		{"events past the slack", func() { logs.events += eventsSlack }, true},
		{"timeline past the slack", func() { logs.timeline += timelineSlack }, true},
		{"a restore", func() { st.NextRestore++ }, true},
		{"nothing since", func() {}, false},
		{"a compaction", func() { logs.boundary = 9 }, true},
	}
	for _, s := range steps {
		s.change()
		if err := w.Save(st); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := written(); got != s.want {
			t.Fatalf("%s: written %v, want %v", s.name, got, s.want)
		}
	}
	ro := &timeline.State{ReadOnly: true}
	logs.events += eventsSlack
	if err := NewWriter(dir, logs, logs, logs, nil).Save(ro); err != nil || written() {
		t.Fatalf("a read-only session wrote its resume file (%v)", err)
	}

	// A writer opened over a file the logs were resumed from keeps it
	// while they grow a little.
	data, err := Encode(File{Events: session.Prefix{Mark: jsonl.Mark{Offset: logs.events}}, Timeline: jsonl.Mark{Offset: logs.timeline}, State: st,
		Context: &agent.ContextCache{Boundary: logs.boundary}})
	if err != nil {
		t.Fatal(err)
	}
	onDisk, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	logs.events += 10
	if err := NewWriter(dir, logs, logs, logs, onDisk).Save(st); err != nil || written() {
		t.Fatalf("the file the logs were resumed from was rewritten (%v)", err)
	}
}
