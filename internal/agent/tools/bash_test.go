package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/spawn"
)

func TestBashForeground(t *testing.T) {
	t.Parallel()
	s, root := newSet(t)
	tests := []struct {
		name    string
		args    map[string]any
		want    []string
		notWant []string
		isErr   bool
	}{
		{name: "exit code and streams", args: map[string]any{"command": "echo out; echo err >&2; exit 3"},
			want: []string{"exit code: 3\n", "stdout:\nout\n", "stderr:\nerr\n"}},
		{name: "runs in the root", args: map[string]any{"command": "pwd"}, want: []string{"stdout:\n" + root + "\n"}},
		{name: "stdin is empty", args: map[string]any{"command": "cat; echo done"}, want: []string{"exit code: 0", "stdout:\ndone\n"}},
		{name: "no output", args: map[string]any{"command": "true"}, want: []string{"exit code: 0\n(no output)\n"}},
		{name: "no pager, no prompts", args: map[string]any{"command": "echo $PAGER $GIT_PAGER $GIT_TERMINAL_PROMPT"}, want: []string{"cat cat 0"}},
		{name: "leftover processes are killed", args: map[string]any{"command": "sleep 100 & echo started"},
			want: []string{"exit code: 0", "left running were killed", "started"}},
		{name: "empty command", args: map[string]any{"command": "  "}, isErr: true, want: []string{"non-empty command"}},
		{name: "negative timeout", args: map[string]any{"command": "true", "timeout_ms": -5}, isErr: true, want: []string{"must be positive"}},
		{name: "huge timeout", args: map[string]any{"command": "true", "timeout_ms": int64(1) << 40}, isErr: true, want: []string{"above the maximum"}},
		{name: "timeout with background", args: map[string]any{"command": "true", "timeout_ms": 5, "background": true}, isErr: true, want: []string{"does not apply to background"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := call(t, s, "bash", tc.args)
			if r.IsError != tc.isErr {
				t.Fatalf("IsError = %v: %s", r.IsError, r.Content)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Content, w) {
					t.Fatalf("result %q lacks %q", r.Content, w)
				}
			}
		})
	}
}

// TestBashTimeoutKillsGroup runs a command that never ends and leaves a
// grandchild behind; the timeout must kill both.
func TestBashTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	s, root := newSet(t)
	r := call(t, s, "bash", map[string]any{
		"command":    "sleep 100 & echo $! > bg.pid; echo waiting; sleep 100; wait",
		"timeout_ms": 500,
	})
	mustErr(t, r, "timed out after 500ms", "whole process group", "waiting")
	pid, err := strconv.Atoi(strings.TrimSpace(readFileT(t, root, "bg.pid")))
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	if a := s.Tasks().Active(); len(a) != 0 {
		t.Fatalf("active after timeout: %+v", a)
	}
}

func TestBashCancelKillsGroup(t *testing.T) {
	t.Parallel()
	s, root := newSet(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		waitFor(t, "the command to start", func() bool {
			_, err := os.Stat(filepath.Join(root, "bg.pid"))
			return err == nil && len(s.Tasks().Active()) == 1
		})
		cancel()
	}()
	r, err := s.Run(ctx, "bash", `{"command":"sleep 100 & echo $! > bg.pid.tmp; mv bg.pid.tmp bg.pid; sleep 100"}`)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if !strings.Contains(r.Content, "cancelled") {
		t.Fatalf("result %q", r.Content)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(readFileT(t, root, "bg.pid")))
	waitGone(t, pid)
}

// TestBashOutputCap is not parallel: it measures the heap while a command
// prints 50 MB, which other tests would disturb.
func TestBashOutputCap(t *testing.T) {
	s, _ := newSet(t)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := mustOK(t, call(t, s, "bash", map[string]any{"command": "yes | head -c 50000000; echo tail-marker >&2"}))
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	if alloc > 16<<20 {
		t.Fatalf("allocated %d bytes for 50 MB of output; memory is not bounded", alloc)
	}
	t.Logf("50 MB of output: %d bytes allocated in total", alloc)
	if len(r.Content) > 2*DefaultOutputCap+2048 {
		t.Fatalf("result is %d bytes, over the per-stream caps", len(r.Content))
	}
	m := regexp.MustCompile(`\[\.\.\. (\d+) bytes of stdout omitted \((\d+) in total\); full output in (\S+),`).FindStringSubmatch(r.Content)
	if m == nil {
		t.Fatalf("no spill note in %q", r.Content[:min(len(r.Content), 500)])
	}
	if m[1] != strconv.Itoa(50000000-DefaultOutputCap) || m[2] != "50000000" {
		t.Fatalf("omitted %s of %s", m[1], m[2])
	}
	fi, err := os.Stat(m[3])
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 50000000 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("spill file %s: %d bytes, mode %v", m[3], fi.Size(), fi.Mode())
	}
	if !strings.HasPrefix(r.Content, "exit code: 0\nstdout:\ny\ny\n") || !strings.Contains(r.Content, "y\ny\nstderr:\ntail-marker\n") {
		t.Fatalf("head or tail missing: %q ... %q", r.Content[:100], r.Content[len(r.Content)-100:])
	}
}

func TestCaptureKeepsHeadTailAndSpillsAll(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name   string
		writes []string
		head   string
		tail   string
		spill  bool
	}{
		{"fits", []string{"ab", "cd"}, "abc", "d", false},
		{"exactly full", []string{"abcdef"}, "abc", "def", false},
		{"one over", []string{"abcdefg"}, "abc", "efg", true},
		{"many small writes", []string{"a", "b", "c", "d", "e", "f", "g", "h"}, "abc", "fgh", true},
		{"big write", []string{"0123456789"}, "012", "789", true},
	}
	for _, tc := range tests {
		c := &capture{headCap: 3, tailCap: 3, dir: dir, pattern: "c-*"}
		all := ""
		for _, w := range tc.writes {
			if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("%s: write %d, %v", tc.name, n, err)
			}
			all += w
		}
		c.close()
		if string(c.head) != tc.head || string(c.tail) != tc.tail || c.total != int64(len(all)) {
			t.Errorf("%s: head %q tail %q total %d", tc.name, c.head, c.tail, c.total)
		}
		if (c.spill != nil) != tc.spill {
			t.Fatalf("%s: spill %v", tc.name, c.spill != nil)
		}
		if c.spill != nil {
			if got := readFileT(t, "/", c.spill.Name()); got != all {
				t.Errorf("%s: spill holds %q, want %q", tc.name, got, all)
			}
		}
	}
}

func TestBackgroundTaskLifecycle(t *testing.T) {
	t.Parallel()
	s, root := newSet(t)
	tasks := s.Tasks()
	r := mustOK(t, call(t, s, "bash", map[string]any{"command": "echo serving; echo $$ > server.pid; exec sleep 100", "background": true}))
	id := regexp.MustCompile(`task (t\d+)`).FindStringSubmatch(r.Content)
	if id == nil {
		t.Fatalf("no task id in %q", r.Content)
	}
	active := tasks.Active()
	if len(active) != 1 || active[0].ID != id[1] || active[0].Kind != WriterBackground || active[0].PID <= 0 || !strings.Contains(active[0].Command, "sleep 100") {
		t.Fatalf("active %+v", active)
	}
	waitFor(t, "output", func() bool {
		out, _ := tasks.Output(id[1])
		return strings.Contains(out, "| serving")
	})
	list := mustOK(t, call(t, s, "tasks", map[string]any{"action": "list"}))
	if !strings.Contains(list.Content, id[1]+" [running]") || !strings.Contains(list.Content, "| serving") {
		t.Fatalf("list %q", list.Content)
	}
	mustOK(t, call(t, s, "tasks", map[string]any{"action": "stop", "id": id[1]}))
	if a := tasks.Active(); len(a) != 0 {
		t.Fatalf("still active after stop: %+v", a)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(readFileT(t, root, "server.pid")))
	waitGone(t, pid)
	list = mustOK(t, call(t, s, "tasks", map[string]any{"action": "list"}))
	if !strings.Contains(list.Content, id[1]+" [exited, stopped]") {
		t.Fatalf("list after stop %q", list.Content)
	}
	if err := tasks.Stop(id[1]); err != nil {
		t.Fatalf("second stop: %v", err)
	}
	if err := tasks.Stop("t999"); !errors.Is(err, ErrUnknownTask) {
		t.Fatalf("stop unknown: %v", err)
	}
	mustErr(t, call(t, s, "tasks", map[string]any{"action": "stop", "id": "t999"}), "unknown task")
	mustErr(t, call(t, s, "tasks", map[string]any{"action": "stop"}), "needs an id")
	mustErr(t, call(t, s, "tasks", map[string]any{"action": "kill"}), "unknown action")

	// A task that ends by itself leaves Active and reports its exit code.
	r = mustOK(t, call(t, s, "bash", map[string]any{"command": "echo bye; exit 4", "background": true}))
	id2 := regexp.MustCompile(`task (t\d+)`).FindStringSubmatch(r.Content)[1]
	waitFor(t, "the task to exit", func() bool { return len(tasks.Active()) == 0 })
	out, ok := tasks.Output(id2)
	if !ok || !strings.Contains(out, "exited, exit code 4") || !strings.Contains(out, "| bye") {
		t.Fatalf("output %q", out)
	}
}

func TestForegroundCommandIsActiveWriter(t *testing.T) {
	t.Parallel()
	s, root := newSet(t)
	tasks := s.Tasks()
	done := make(chan Result)
	go func() {
		r, _ := s.Run(context.Background(), "bash", `{"command":"while [ ! -e go ]; do sleep 0.01; done; echo finished"}`)
		done <- r
	}()
	waitFor(t, "the command to be active", func() bool { return len(tasks.Active()) == 1 })
	w := tasks.Active()[0]
	if w.Kind != WriterBash || !strings.Contains(w.Command, "finished") {
		t.Fatalf("writer %+v", w)
	}
	putFile(t, root, "go", "")
	r := <-done
	if !strings.Contains(r.Content, "finished") {
		t.Fatalf("result %q", r.Content)
	}
	if a := tasks.Active(); len(a) != 0 {
		t.Fatalf("active after the command ended: %+v", a)
	}
	// Foreground commands are not kept in the listing once done.
	if l := tasks.list(); !strings.HasPrefix(l, "no tasks") {
		t.Fatalf("list %q", l)
	}

	// Stopping a foreground command (as a host would) ends the call.
	go func() {
		r, _ := s.Run(context.Background(), "bash", `{"command":"sleep 100"}`)
		done <- r
	}()
	waitFor(t, "the command to be active", func() bool { return len(tasks.Active()) == 1 })
	tasks.StopAll()
	mustErr(t, <-done, "stopped by request")
}

// TestForSession: a session's registry keeps its ledger, its commands'
// TMPDIR and the remembered login environment in the session directory,
// and marks every command with the session.
func TestForSession(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ts := ForSession(dir, "s_one", t.TempDir(), TaskOptions{PassEnv: []string{"A_TOKEN"}, Env: EnvLogin})
	o := ts.opts
	if o.Session != "s_one" || o.Ledger != filepath.Join(dir, spawn.LedgerFile) || o.TmpDir != filepath.Join(dir, SessionTmpDir) ||
		o.LoginCache != filepath.Join(dir, "login-env.json") || o.Env != EnvLogin || len(o.PassEnv) != 1 {
		t.Fatalf("options: %+v", o)
	}
	if ts.BackgroundRunning() {
		t.Fatal("a new registry has a background task")
	}
}

// TestSessionSpillDir: output goes to the session directory, or to the
// temp dir when the active root holds the session directory; a root that
// holds both is refused.
func TestSessionSpillDir(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	dir := filepath.Join(data, "sessions", "s_spill")
	got, err := SessionSpillDir(dir, "s_spill", t.TempDir())
	if err != nil || got != filepath.Join(dir, "spill") {
		t.Fatalf("a project root: %s %v", got, err)
	}
	got, err = SessionSpillDir(dir, "s_spill", data)
	if err != nil || !strings.HasPrefix(got, os.TempDir()) || filepath.Base(filepath.Dir(got)) != "s_spill" {
		t.Fatalf("a root above the data directory: %s %v", got, err)
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(got)) })
	if st, err := os.Stat(got); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("spill dir %s: %v %v", got, st.Mode(), err)
	}
	if _, err := SessionSpillDir(dir, "s_spill", "/"); err == nil {
		t.Fatal("a root holding both the data and the temp directory was not refused")
	}
}
