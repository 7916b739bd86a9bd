package session

import (
	"bytes"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/yolop-dev/yolop/internal/testenv"
)

// childLockEnv makes the test binary act as a second process that tries to
// open a session and reports what happened.
const childLockEnv = "YOLOP_SESSION_TEST_CHILD_OPEN"

func TestMain(m *testing.M) {
	testenv.NoRaceExitSleep()
	if spec := os.Getenv(childLockEnv); spec != "" {
		dataDir, id := spec, os.Getenv(childLockEnv+"_ID")
		s, err := Open(dataDir, id)
		if err == nil {
			s.Close()
			fmt.Println("opened")
			os.Exit(0)
		}
		var le *LockedError
		if errors.As(err, &le) {
			fmt.Printf("locked holder=%d msg=%s\n", le.Holder, err)
			os.Exit(3)
		}
		fmt.Println("error:", err)
		os.Exit(4)
	}
	os.Exit(m.Run())
}

func conversation() Workspace {
	return Workspace{Kind: KindConversation, ActiveRoot: "/tmp/x", NoWorkspaceReason: "not a git repository", Title: "t"}
}

func newSession(t *testing.T) (string, *Session) {
	t.Helper()
	dataDir := t.TempDir()
	s, err := Create(dataDir, conversation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return dataDir, s
}

func appendN(t *testing.T, s *Session, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := s.Append("message", "cp1", map[string]any{"i": i, "text": strings.Repeat("x", 40)}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCreateAppendReopen(t *testing.T) {
	t.Parallel()
	dataDir, s := newSession(t)
	if !strings.HasPrefix(s.ID, "s_") || s.ID != strings.ToLower(s.ID) {
		t.Fatalf("id %q: want lowercase s_<ulid>", s.ID)
	}
	if err := s.Durable(); err != nil {
		t.Fatalf("Durable: %v", err)
	}
	ev, err := s.Append("user", "", json.RawMessage(`{"text":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Seq != 1 || ev.V != EventVersion {
		t.Fatalf("first event = %+v, want seq 1 v %d", ev, EventVersion)
	}
	appendN(t, s, 4)
	if _, err := s.Append("x", "", json.RawMessage(`{bad`)); err == nil {
		t.Fatal("invalid raw JSON accepted")
	}
	if got := s.LastSeq(); got != 5 {
		t.Fatalf("LastSeq = %d, want 5", got)
	}
	ws := s.Workspace()
	ws.Title = "renamed"
	if err := s.SaveWorkspace(ws); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2, err := Open(dataDir, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	evs := s2.Events()
	if len(evs) != 5 {
		t.Fatalf("reopened with %d events, want 5", len(evs))
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
	if string(evs[0].Data) != `{"text":"hi"}` || evs[1].Turn != "cp1" {
		t.Fatalf("round trip lost data: %+v %+v", evs[0], evs[1])
	}
	if got := s2.Workspace(); got.Title != "renamed" || got.SessionID != s.ID || got.Created.IsZero() || !got.Updated.After(got.Created) && !got.Updated.Equal(got.Created) {
		t.Fatalf("workspace after reopen = %+v", got)
	}
	if ro, why := s2.ReadOnly(); ro || len(s2.Repaired()) != 0 {
		t.Fatalf("intact session: read-only=%v (%s), repaired=%v", ro, why, s2.Repaired())
	}
	next, err := s2.Append("message", "cp2", nil)
	if err != nil || next.Seq != 6 {
		t.Fatalf("append after reopen: %+v, %v", next, err)
	}
}

// A session Start made is complete on disk once Durable returns: listed
// with its workspace, and a workspace written before then is not
// replaced by the first one.
func TestStartIsOnDiskOnceDurable(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	for i, save := range []bool{false, true} {
		ws := conversation()
		ws.Title = "first"
		s, err := Start(dataDir, ws)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append("message", "", map[string]any{"text": "hi"}); err != nil {
			t.Fatal(err)
		}
		want := "first"
		if save {
			w := s.Workspace()
			w.Title, want = "saved", "saved"
			if err := s.SaveWorkspace(w); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Durable(); err != nil {
			t.Fatal(err)
		}
		got, err := PeekWorkspace(dataDir, s.ID)
		if err != nil || got.Title != want {
			t.Fatalf("case %d: workspace.json = %+v, %v; want title %q", i, got, err, want)
		}
		list, err := List(dataDir)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, sum := range list {
			if sum.ID == s.ID {
				found = sum.Problem == ""
			}
		}
		if !found {
			t.Fatalf("case %d: %s not listed as complete: %+v", i, s.ID, list)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := Open(dataDir, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(r.Events()); n != 1 {
			t.Fatalf("case %d: %d events after reopening, want 1", i, n)
		}
		r.Close()
	}
}

func TestCreateRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ws   Workspace
		want string
	}{
		{"unknown kind", Workspace{Kind: "x"}, "workspace kind"},
		{"worktree without path", Workspace{Kind: KindWorktree}, "worktree path"},
		{"path traversal id", Workspace{Kind: KindConversation, SessionID: "../evil"}, "invalid session id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dataDir := t.TempDir()
			_, err := Create(dataDir, tt.ws)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want mention of %q", err, tt.want)
			}
			entries, _ := os.ReadDir(SessionsDir(dataDir))
			if len(entries) != 0 {
				t.Fatalf("a refused create left %d entries", len(entries))
			}
		})
	}
	dataDir, s := newSession(t)
	ws := conversation()
	ws.SessionID = s.ID
	if _, err := Create(dataDir, ws); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("duplicate create: %v", err)
	}
}

func TestOpenNotFound(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	for _, open := range []func(string, string) (*Session, error){Open, OpenReadOnly} {
		_, err := open(dataDir, "s_01jf0000000000000000000000")
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "s_01jf0000000000000000000000") {
			t.Fatalf("err = %v, want ErrNotFound naming the id", err)
		}
	}
}

func TestLockSameProcess(t *testing.T) {
	t.Parallel()
	dataDir, s := newSession(t)
	appendN(t, s, 2)
	before := snapshotDir(t, s.Dir)
	_, err := Open(dataDir, s.ID)
	var le *LockedError
	if !errors.Is(err, ErrLocked) || !errors.As(err, &le) {
		t.Fatalf("second Open: %v, want *LockedError", err)
	}
	if le.ID != s.ID || le.Holder != os.Getpid() || !strings.Contains(err.Error(), s.ID) {
		t.Fatalf("LockedError = %+v (%v), want id %s holder %d", le, err, s.ID, os.Getpid())
	}
	if after := snapshotDir(t, s.Dir); after != before {
		t.Fatalf("a refused Open changed the session:\n%s\n---\n%s", before, after)
	}
	// Read-only opens are never blocked.
	ro, err := OpenReadOnly(dataDir, s.ID)
	if err != nil || len(ro.Events()) != 2 {
		t.Fatalf("OpenReadOnly while locked: %v", err)
	}
	if _, err := ro.Append("x", "", nil); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("append to read-only session: %v", err)
	}
	// After Close, the lock is free again.
	s.Close()
	s2, err := Open(dataDir, s.ID)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s2.Close()
}

func TestLockOtherProcess(t *testing.T) {
	t.Parallel()
	dataDir, s := newSession(t)
	run := func() (string, int) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childLockEnv+"="+dataDir, childLockEnv+"_ID="+s.ID)
		out, err := cmd.Output()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	out, code := run()
	want := fmt.Sprintf("locked holder=%d ", os.Getpid())
	if code != 3 || !strings.HasPrefix(out, want) || !strings.Contains(out, s.ID) {
		t.Fatalf("child Open while held: exit %d, %q; want %q naming %s", code, out, want, s.ID)
	}
	s.Close()
	if out, code := run(); code != 0 || out != "opened\n" {
		t.Fatalf("child Open after release: exit %d, %q", code, out)
	}
}

// snapshotDir renders names, modes and contents of a directory.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		fi, err := os.Lstat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		fmt.Fprintf(&b, "%s %v %q\n", e.Name(), fi.Mode(), data)
	}
	return b.String()
}

func TestPermissionsReapplied(t *testing.T) {
	t.Parallel()
	dataDir, s := newSession(t)
	appendN(t, s, 1)
	s.Close()
	extra := filepath.Join(s.Dir, TimelineFile)
	if err := os.WriteFile(extra, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(s.Dir, 0o755)
	for _, n := range []string{EventsFile, WorkspaceFile, lockName, TimelineFile} {
		os.Chmod(filepath.Join(s.Dir, n), 0o644)
	}
	s2, err := Open(dataDir, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	checkMode(t, s.Dir, 0o700|os.ModeDir)
	for _, n := range []string{EventsFile, WorkspaceFile, lockName, TimelineFile} {
		checkMode(t, filepath.Join(s.Dir, n), 0o600)
	}
	checkMode(t, SessionsDir(dataDir), 0o700|os.ModeDir)
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != want {
		t.Errorf("%s: mode %v, want %v", path, fi.Mode(), want)
	}
}

func TestSymlinkedLogRefused(t *testing.T) {
	t.Parallel()
	dataDir, s := newSession(t)
	s.Close()
	outside := filepath.Join(t.TempDir(), "elsewhere.jsonl")
	if err := os.WriteFile(outside, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ev := filepath.Join(s.Dir, EventsFile)
	os.Remove(ev)
	if err := os.Symlink(outside, ev); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dataDir, s.ID); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("Open with symlinked events.jsonl: %v, want a refusal naming the symlink", err)
	}
	fi, _ := os.Stat(outside)
	if fi.Mode().Perm() != 0o644 {
		t.Fatalf("symlink target was chmod'ed to %v", fi.Mode())
	}
	// The failed Open released the lock.
	os.Remove(ev)
	os.WriteFile(ev, nil, 0o600)
	s2, err := Open(dataDir, s.ID)
	if err != nil {
		t.Fatalf("Open after fixing the symlink: %v", err)
	}
	s2.Close()
}

// corrupt writes a session with n events, then applies mutate to
// events.jsonl and reopens it.
func corrupt(t *testing.T, n int, mutate func(data []byte) []byte) (*Session, []byte, string) {
	t.Helper()
	dataDir, s := newSession(t)
	appendN(t, s, n)
	s.Close()
	path := filepath.Join(s.Dir, EventsFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mutated := mutate(bytes.Clone(data))
	if err := os.WriteFile(path, mutated, 0o600); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(dataDir, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close() })
	return s2, mutated, path
}

// lineStart is the offset of 0-based line i.
func lineStart(data []byte, i int) int {
	off := 0
	for ; i > 0; i-- {
		off += bytes.IndexByte(data[off:], '\n') + 1
	}
	return off
}

func TestCorruption(t *testing.T) {
	t.Parallel()
	const n = 60 // ~100 bytes per line: several 512-byte sectors
	tests := []struct {
		name     string
		mutate   func([]byte) []byte
		survive  int  // events kept
		readOnly bool // mid-file corruption
		repaired bool // a tail was kept aside
		line     int  // CorruptError.Line when readOnly
	}{
		{"intact", func(d []byte) []byte { return d }, n, false, false, 0},
		{"truncated mid-record", func(d []byte) []byte { return d[:lineStart(d, n-1)+17] }, n - 1, false, true, 0},
		{"missing final newline", func(d []byte) []byte { return d[:len(d)-1] }, n - 1, false, true, 0},
		{"garbled final line", func(d []byte) []byte { d[len(d)-3] = '#'; return d }, n - 1, false, true, 0},
		{"zeroed tail sector", func(d []byte) []byte {
			end := len(d) - len(d)%512
			if end == len(d) {
				end -= 512
			}
			for i := end; i < len(d); i++ {
				d[i] = 0
			}
			return d
		}, -1, false, true, 0},
		{"zeroed blocks appended", func(d []byte) []byte { return append(d, make([]byte, 4096)...) }, n, false, true, 0},
		{"garbled byte in prefix", func(d []byte) []byte { d[lineStart(d, 10)+3] = '#'; return d }, 10, true, false, 11},
		{"zeroed sector in prefix", func(d []byte) []byte {
			for i := 1024; i < 1536; i++ {
				d[i] = 0
			}
			return d
		}, -1, true, false, -1},
		{"seq gap", func(d []byte) []byte {
			return append(d[:lineStart(d, 20)], d[lineStart(d, 21):]...)
		}, 20, true, false, 21},
		{"repeated seq at end", func(d []byte) []byte {
			return append(d, d[lineStart(d, n-1):]...)
		}, n, true, false, n + 1},
		{"newer version", func(d []byte) []byte {
			return append(d, []byte(fmt.Sprintf(`{"v":9,"seq":%d,"type":"x","ts":"2026-01-01T00:00:00Z"}`+"\n", n+1))...)
		}, n, true, false, n + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, mutated, path := corrupt(t, n, tt.mutate)
			got := len(s.Events())
			if tt.survive >= 0 && got != tt.survive {
				t.Fatalf("%d events survive, want %d", got, tt.survive)
			}
			if got == 0 || got > n {
				t.Fatalf("%d events survive of %d", got, n)
			}
			ro, why := s.ReadOnly()
			if ro != tt.readOnly {
				t.Fatalf("read-only = %v (%s), want %v", ro, why, tt.readOnly)
			}
			after, _ := os.ReadFile(path)
			kept, _ := filepath.Glob(path + ".corrupt-*")
			if tt.readOnly {
				ce := s.Corruption()
				if ce == nil || !errors.Is(ce, ErrCorrupt) || (tt.line > 0 && ce.Line != tt.line) {
					t.Fatalf("corruption = %v, want line %d", ce, tt.line)
				}
				if !strings.Contains(why, "yolop sessions fork "+s.ID) {
					t.Fatalf("read-only reason %q does not say how to fork", why)
				}
				if !bytes.Equal(after, mutated) || len(kept) != 0 {
					t.Fatal("a read-only session was modified")
				}
				_, err := s.Append("x", "", nil)
				if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "sessions fork") {
					t.Fatalf("Append on corrupt session: %v", err)
				}
				return
			}
			if tt.repaired != (len(kept) == 1) || tt.repaired != (len(s.Repaired()) == 1) {
				t.Fatalf("repaired: kept=%v notes=%v, want repaired=%v", kept, s.Repaired(), tt.repaired)
			}
			if tt.repaired {
				aside, _ := os.ReadFile(kept[0])
				if !bytes.Equal(append(bytes.Clone(after), aside...), mutated) {
					t.Fatal("valid prefix + kept tail != original bytes")
				}
				checkMode(t, kept[0], 0o600)
			}
			// The repaired log accepts appends and reopens cleanly.
			ev, err := s.Append("after", "", nil)
			if err != nil || ev.Seq != int64(got+1) {
				t.Fatalf("append after repair: %+v %v", ev, err)
			}
			data, _ := os.ReadFile(path)
			scan := ParseEvents(EventsFile, data)
			if scan.Corrupt != nil || scan.Tail != 0 || len(scan.Events) != got+1 {
				t.Fatalf("after repair+append: %+v", scan)
			}
		})
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	if got, err := List(dataDir); err != nil || len(got) != 0 {
		t.Fatalf("List of empty data dir = %v, %v", got, err)
	}
	var ids []string
	for i := 0; i < 3; i++ {
		s, err := Create(dataDir, conversation())
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
		s.Close()
	}
	// A broken workspace.json, a stray file and an incomplete dir.
	os.WriteFile(filepath.Join(SessionsDir(dataDir), ids[1], WorkspaceFile), []byte("{"), 0o600)
	os.WriteFile(filepath.Join(SessionsDir(dataDir), "notes.txt"), nil, 0o600)
	os.Mkdir(filepath.Join(SessionsDir(dataDir), "s_half"), 0o700)

	got, err := List(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("List returned %d entries, want 5: %+v", len(got), got)
	}
	problems := map[string]string{}
	var order []string
	for _, g := range got {
		problems[g.ID] = g.Problem
		if strings.HasPrefix(g.ID, "s_") && len(g.ID) > 10 {
			order = append(order, g.ID)
		}
	}
	if want := []string{ids[2], ids[1], ids[0]}; strings.Join(order, ",") != strings.Join(want, ",") {
		t.Fatalf("order %v, want newest first %v", order, want)
	}
	if problems[ids[0]] != "" || problems[ids[2]] != "" {
		t.Fatalf("healthy sessions reported problems: %v", problems)
	}
	for _, id := range []string{ids[1], "notes.txt", "s_half"} {
		if problems[id] == "" {
			t.Errorf("%s listed without its problem", id)
		}
	}
}

func TestNewIDSortsByCreation(t *testing.T) {
	t.Parallel()
	prev := NewID()
	for i := 0; i < 1000; i++ {
		id := NewID()
		if id <= prev {
			t.Fatalf("%s after %s: ids must sort by creation", id, prev)
		}
		if checkID(id) != nil {
			t.Fatalf("NewID %q is not a valid id", id)
		}
		prev = id
	}
}

// TestAppendedLinesTakeTheFastPath: every line Append writes is decoded by
// fastEvent, to the event Append returned.
func TestAppendedLinesTakeTheFastPath(t *testing.T) {
	t.Parallel()
	_, s := newSession(t)
	defer s.Close()
	var want []Event
	for i, d := range []any{map[string]string{"text": "héllo \"q\"\n<tag> & \x01"}, nil, []int{1, 2}, map[string]any{"nested": map[string]any{"a": nil}}} {
		turn := ""
		if i%2 == 1 {
			turn = "cp1"
		}
		ev, err := s.Append("user.message", turn, d)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, ev)
	}
	data, err := os.ReadFile(s.Path(EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	for i, l := range lines {
		got, ok := fastEvent(l)
		if d := want[i].Data; len(d) > 0 && d[0] != '{' {
			if ok {
				t.Fatalf("line %d: fast path took non-object data %s", i+1, d)
			}
			continue
		}
		if !ok || got.Seq != want[i].Seq || got.Type != want[i].Type || got.Turn != want[i].Turn || !got.Time.Equal(want[i].Time) || !bytes.Equal(got.Data, want[i].Data) {
			t.Fatalf("line %d %s: fast path %v %+v, want %+v", i+1, l, ok, got, want[i])
		}
	}
}

// Ids made from many goroutines at once must sort in the order each
// goroutine made them. A generator that takes the time before it takes its
// lock, and remembers only the last millisecond, lets a goroutine that
// waited on the lock with an older timestamp reset the entropy, and the
// next id in the newer millisecond can then sort before the previous one.
func TestNewIDMonotonicAcrossGoroutines(t *testing.T) {
	t.Parallel()
	workers, perWorker := 8, 10000
	if testing.Short() {
		perWorker = 2000
	}
	var (
		mu  sync.Mutex
		bad []string
		all = make([][]string, workers)
		wg  sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := make([]string, 0, perWorker)
			prev := ""
			for range perWorker {
				id := NewID()
				if id <= prev {
					mu.Lock()
					if len(bad) < 3 {
						bad = append(bad, fmt.Sprintf("%s after %s", id, prev))
					}
					mu.Unlock()
				}
				ids = append(ids, id)
				prev = id
			}
			all[w] = ids
		}()
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("ids made one after another sort backwards:\n%s", strings.Join(bad, "\n"))
	}
	seen := make(map[string]bool, workers*perWorker)
	for _, ids := range all {
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("duplicate id %s", id)
			}
			seen[id] = true
		}
	}
}

// maxFirstReader yields 0xff for its first n bytes (the first id's
// entropy, at its maximum), then random bytes.
type maxFirstReader struct{ n int }

func (r *maxFirstReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return crand.Read(p)
	}
	k := min(r.n, len(p))
	for i := range p[:k] {
		p[i] = 0xff
	}
	r.n -= k
	return k, nil
}

func TestULIDGenClockBackAndOverflow(t *testing.T) {
	t.Parallel()
	g := &ulidGen{entropy: ulid.Monotonic(crand.Reader, 0)}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	a := g.next(t0)
	b := g.next(t0.Add(-time.Hour)) // the wall clock stepped back
	if b.Compare(a) <= 0 {
		t.Fatalf("after a clock step back: %s is not after %s", b, a)
	}
	if b.Time() != a.Time() {
		t.Errorf("clock step back moved the timestamp to %d, want it kept at %d", b.Time(), a.Time())
	}

	// Entropy already at its maximum: the next id in the same millisecond
	// cannot grow, so it moves to the next millisecond.
	full := &ulidGen{entropy: ulid.Monotonic(&maxFirstReader{n: 10}, 0)}
	c := full.next(t0)
	d := full.next(t0)
	if d.Compare(c) <= 0 || d.Time() != c.Time()+1 {
		t.Fatalf("overflow: got %s (ms %d) after %s (ms %d), want the next millisecond", d, d.Time(), c, c.Time())
	}
}
