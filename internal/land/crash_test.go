package land

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/yolop-dev/yolop/internal/failpoint"
	"github.com/yolop-dev/yolop/internal/snapshot"
)

// childSpec tells the re-executed test binary what to run.
type childSpec struct {
	Action   string // apply or undo
	Session  Session
	StateDir string
}

// crashChild runs one apply or undo in this process; an armed
// YOLOP_FAILPOINT kills it on the way.
func crashChild() int {
	var spec childSpec
	if err := json.Unmarshal([]byte(os.Getenv("LAND_CRASH_CHILD")), &spec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	s := spec.Session
	eng, err := snapshot.Open(ctx, snapshot.Options{Worktree: s.Worktree, SessionID: s.ID, StateDir: spec.StateDir, Failpoint: failpoint.Hit})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	s.Engine = eng
	switch spec.Action {
	case "apply":
		_, err = Apply(ctx, s, ApplyOptions{})
	case "undo":
		_, err = Undo(ctx, s, UndoOptions{})
	}
	eng.Wait()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func runChild(t *testing.T, r *rig, action, fp string) {
	t.Helper()
	r.sess.Engine.Wait()
	s := r.sess
	s.Engine = nil
	spec, _ := json.Marshal(childSpec{Action: action, Session: s, StateDir: filepath.Join(filepath.Dir(r.sess.Worktree), "state")})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LAND_CRASH_CHILD="+string(spec), failpoint.Env+"="+fp)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("%s at %s: the child was not killed (%v): %s", action, fp, err, out)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("%s at %s: child ended with %v, not SIGKILL: %s", action, fp, err, out)
	}
}

// crashRig is a session and a checkout with edits on both sides: a merge,
// creations, deletions and a directory that becomes a file.
func crashRig(t *testing.T) *rig {
	r := newRig(t, map[string]string{"a.txt": lines, "d/x.txt": "x\n", "keep.txt": "k\n", "del.txt": "gone\n"})
	wt, co := r.sess.Worktree, r.checkout
	write(t, wt, "a.txt", strings.Replace(lines, "one", "ONE", 1))
	write(t, wt, "n/new.txt", "new\n")
	remove(t, wt, "del.txt")
	remove(t, wt, "d/x.txt")
	remove(t, wt, "d")
	write(t, wt, "d", "now a file\n")
	write(t, co, "a.txt", strings.Replace(lines, "seven", "SEVEN", 1))
	write(t, co, "mine.txt", "user's\n")
	return r
}

func TestCrashDuringApply(t *testing.T) {
	points := []string{"apply.after_capture", "apply.after_ref", "apply.after_intent", "restore.after_write", "restore.after_delete", "restore.before_verify", "apply.before_done"}
	if testing.Short() {
		points = []string{"restore.after_write"}
	}
	for _, fp := range points {
		t.Run(fp, func(t *testing.T) {
			r := crashRig(t)
			before := manifest(t, r.checkout)
			state := gitState(t, r.checkout)
			runChild(t, r, "apply", fp)
			// The next start settles it: the checkout is as it was.
			if _, err := Repair(ctx, r.data, r.sess.ID, r.checkout); err != nil {
				t.Fatal(err)
			}
			if d := diffManifests(before, manifest(t, r.checkout)); d != "" {
				t.Fatalf("after the crash and repair the checkout differs:\n%s", d)
			}
			if gitState(t, r.checkout) != state {
				t.Fatal("HEAD, refs, index or config changed")
			}
			// And apply + undo work afterwards.
			if _, err := Apply(ctx, r.sess, ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
			if read(t, r.checkout, "d") != "now a file\n" {
				t.Fatal("apply after repair did not write")
			}
			if _, err := Undo(ctx, r.sess, UndoOptions{}); err != nil {
				t.Fatal(err)
			}
			if d := diffManifests(before, manifest(t, r.checkout)); d != "" {
				t.Fatalf("undo after repair:\n%s", d)
			}
		})
	}
}

func TestCrashDuringUndo(t *testing.T) {
	points := []string{"undo.after_intent", "restore.after_write", "restore.after_delete", "restore.before_verify", "undo.before_done"}
	if testing.Short() {
		points = []string{"restore.after_delete"}
	}
	for _, fp := range points {
		t.Run(fp, func(t *testing.T) {
			r := crashRig(t)
			before := manifest(t, r.checkout)
			if _, err := Apply(ctx, r.sess, ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
			runChild(t, r, "undo", fp)
			notes, err := Repair(ctx, r.data, r.sess.ID, r.checkout)
			if err != nil {
				t.Fatal(err)
			}
			if len(notes) != 1 {
				t.Fatalf("repair notes %v", notes)
			}
			if d := diffManifests(before, manifest(t, r.checkout)); d != "" {
				t.Fatalf("interrupted undo was not completed:\n%s", d)
			}
			if l := Last(r.data, r.sess.ID); l == nil || l.State != "undone" {
				t.Fatalf("last %+v", l)
			}
		})
	}
}
