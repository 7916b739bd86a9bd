package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// newSet makes a tool set on a fresh root with a spill directory beside it.
func newSet(t *testing.T, mod ...func(*Env)) (*Set, string) {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	env := Env{Root: root, SpillDir: filepath.Join(base, "spill")}
	for _, m := range mod {
		m(&env)
	}
	s, err := New(env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Tasks().StopAll)
	return s, s.Root()
}

// call runs a tool with arguments marshalled from v (or used as is when v is
// a string) and fails the test on a Go error.
func call(t *testing.T, s *Set, name string, v any) Result {
	t.Helper()
	args, ok := v.(string)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		args = string(b)
	}
	r, err := s.Run(context.Background(), name, args)
	if err != nil {
		t.Fatalf("%s %s: %v", name, args, err)
	}
	return r
}

func mustOK(t *testing.T, r Result) Result {
	t.Helper()
	if r.IsError {
		t.Fatalf("unexpected error result: %s", r.Content)
	}
	return r
}

func mustErr(t *testing.T, r Result, want ...string) {
	t.Helper()
	if !r.IsError {
		t.Fatalf("want an error result, got: %s", r.Content)
	}
	for _, w := range want {
		if !strings.Contains(r.Content, w) {
			t.Fatalf("error result %q does not contain %q", r.Content, w)
		}
	}
}

func putFile(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFileT(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// processGone reports whether pid no longer runs (absent or a zombie).
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return true
	}
	return b[i+2] == 'Z' || b[i+2] == 'X'
}

// waitGone waits for a SIGKILLed process to disappear. The bound only keeps
// a broken kill from hanging the test run; it measures nothing.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if processGone(pid) {
			return
		}
	}
	t.Fatalf("process %d still runs", pid)
}

// waitFor polls cond; the bound only keeps a failure from hanging the run.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// resolverModes runs f with the kernel's openat2 and with openat2 answering
// ENOSYS, as on a kernel before 5.6, which makes every open take the
// O_NOFOLLOW walk.
func resolverModes(t *testing.T, f func(t *testing.T, force func(*beneath))) {
	t.Helper()
	for _, m := range []struct {
		name  string
		force func(*beneath)
	}{
		{"openat2", func(*beneath) {}},
		{"walk", func(b *beneath) {
			b.openat2 = func(int, string) (int, error) { return -1, unix.ENOSYS }
		}},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			f(t, m.force)
		})
	}
}
