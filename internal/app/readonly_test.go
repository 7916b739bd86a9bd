package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/command"
	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/session"
)

// readOnlyChildEnv makes the test binary act as the process that lists a
// session on a read-only data directory; its value is the data directory.
const readOnlyChildEnv = "YOLOP_APP_TEST_READONLY_DATA"

// TestListOnReadOnlyDataDir: listing checkpoints needs no write, so a
// read-only data directory must not stop it (it used to fail on the
// session lock). The condition is real: the data directory is bind-mounted
// read-only in a private mount namespace (file modes do not stop root).
// Where mounting is not permitted the test is skipped and says why.
func TestListOnReadOnlyDataDir(t *testing.T) {
	if data := os.Getenv(readOnlyChildEnv); data != "" {
		readOnlyChild(t, data)
		return
	}
	t.Parallel()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("skipped: needs unshare(1) to mount the data directory read-only in a private mount namespace")
	}
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	data := t.TempDir()
	s, err := app.Open(ctx, app.Env{DataDir: data, Dir: repo, Provider: provider.Config{Provider: provider.NameSim}}, app.New{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"write a.txt\none\nEOF", "$ echo two > b.txt && rm a.txt"} {
		if res, err := s.Prompt(ctx, p, nil); err != nil || res.Status != "completed" {
			t.Fatalf("turn %q: %+v %v", p, res, err)
		}
	}
	id := s.ID()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// mount --bind D D; mount -o remount,bind,ro D; then run this test in
	// the child mode, inside the namespace.
	script := `mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" || exit 77; shift; exec "$@"`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh", data,
		os.Args[0], "-test.run=^TestListOnReadOnlyDataDir$", "-test.v")
	cmd.Env = append(os.Environ(), readOnlyChildEnv+"="+data, "YOLOP_APP_TEST_SESSION="+id)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && (ee.ExitCode() == 77 || strings.Contains(string(out), "unshare failed") || strings.Contains(string(out), "Operation not permitted")) && !strings.Contains(string(out), "--- FAIL") {
		t.Skipf("skipped: this system does not permit a read-only bind mount in a private mount namespace:\n%s", out)
	}
	if err != nil {
		t.Fatalf("the listing on a read-only data directory failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "LISTED cp2 cp1") {
		t.Fatalf("the child did not list the checkpoints:\n%s", out)
	}
}

func readOnlyChild(t *testing.T, data string) {
	ctx := context.Background()
	id := os.Getenv("YOLOP_APP_TEST_SESSION")
	// The condition is real: nothing under the data directory can be written.
	probe := filepath.Join(data, "sessions", id, "probe")
	if err := os.WriteFile(probe, nil, 0o600); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("the data directory is writable in the child (%v); the mount did not take", err)
	}
	// What `yolop checkpoints ID` did before: a writer's open fails on the lock.
	if _, err := session.Open(data, id); !errors.Is(err, session.ErrNotWritable) {
		t.Fatalf("session.Open on a read-only directory: %v, want ErrNotWritable", err)
	}
	env := app.Env{DataDir: data, Provider: provider.Config{Provider: provider.NameSim}}
	if _, err := app.Open(ctx, env, app.Resume{ID: id}); err == nil {
		t.Fatal("a writer's open succeeded on a read-only data directory")
	}
	s, err := app.Open(ctx, env, app.Read{ID: id})
	if err != nil {
		t.Fatalf("open for reading: %v", err)
	}
	defer s.Close()
	res, err := s.Exec(ctx, command.Command{Name: "rewind"})
	if err != nil {
		t.Fatalf("/rewind: %v", err)
	}
	var ids []string
	for _, r := range res.Rows {
		ids = append(ids, r.ID)
		if r.Status != "completed" || !r.Workspace {
			t.Errorf("row %+v: want a completed turn with its workspace snapshot", r)
		}
	}
	if len(res.Rows) == 2 && res.Rows[0].FilesChanged != 2 {
		b, _ := json.Marshal(res.Rows)
		t.Errorf("files_changed of cp2 is not 2 (b.txt added, a.txt deleted): %s", b)
	}
	in := s.Info()
	if !in.ReadOnly || !strings.Contains(in.ReadOnlyReason, "cannot be written") {
		t.Errorf("info: read_only %v reason %q, want it to say the directory cannot be written", in.ReadOnly, in.ReadOnlyReason)
	}
	// Mutations are refused with the reason, and nothing is written.
	if _, err := s.Prompt(ctx, "echo hi", nil); err == nil || !strings.Contains(err.Error(), "reading only") {
		t.Errorf("a turn on the read-only view: %v", err)
	}
	if _, err := s.Exec(ctx, command.Command{Name: "rewind", Target: "cp1"}); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("a preview on the read-only view: %v", err)
	}
	fmt.Printf("LISTED %s\n", strings.Join(ids, " "))
}
