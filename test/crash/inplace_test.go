package crash

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/snapshot"
)

// The in-place scenario: three agent turns in the user's own checkout,
// then the user's edits, then `/rewind cp2 both`, which merges a.txt (the
// agent's line two undone, the user's line seven kept), keeps o.txt (the
// user's edit overlaps the agent's), restores data.bin and deletes
// two.txt and three.txt.
const (
	inPlaceTurn1 = "write a.txt\nl1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nEOF\n$ printf 'bin\\000v1' > data.bin && printf 'orig\\n' > o.txt"
	inPlaceTurn2 = "$ sed -i 's/^l2$/l2-agent/' a.txt && printf 'two\\n' > two.txt && rm data.bin"
	inPlaceTurn3 = "$ printf 'three\\n' > three.txt && sed -i 's/^orig$/agent3/' o.txt"
	inPlaceCmd   = "/rewind cp2 both"
)

// inPlaceEnv runs the scenario up to the preview's state: the three turns
// and the user's edits.
func inPlaceEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, repo: gittest.NewRepo(t), data: t.TempDir()}
	m := e.ok("--in-place", "-p", inPlaceTurn1)
	e.sid, e.root = str(m, "session_id"), str(m, "active_root")
	if e.root != e.repo || str(m, "workspace_mode") != "in-place" {
		t.Fatalf("not in place: %s", m["active_root"])
	}
	e.turn(inPlaceTurn2)
	e.turn(inPlaceTurn3)
	// The user's edits since: one line of a.txt far from the agent's, an
	// overlapping rewrite of o.txt, a file of their own.
	b, err := os.ReadFile(filepath.Join(e.root, "a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, e.root, "a.txt", strings.Replace(string(b), "l7\n", "l7-user\n", 1))
	write(t, e.root, "o.txt", "the user's o\n")
	write(t, e.root, "notes/user.txt", "the user's own notes\n")
	return e
}

// TestCrashInPlaceRestore kills the binary at every restore failpoint of a
// restore in place, with the user's edits present, then lets the user
// edit again before the next open (their editor does not wait): the open
// repairs every path to before or after the restore, puts back only paths
// still holding what the restore wrote, and loses no edit of the user's.
//
//	go test ./test/crash -v -run TestCrashInPlaceRestore
func TestCrashInPlaceRestore(t *testing.T) {
	// What the restore leaves when nothing stops it, from a twin run.
	twin := inPlaceEnv(t)
	before := twin.files()
	twin.restore(inPlaceCmd)
	after := twin.files()
	for _, p := range []string{"two.txt", "three.txt"} {
		if _, ok := after[p]; ok {
			t.Fatalf("the twin restore kept %s", p)
		}
	}
	if a := string(after["a.txt"].data); !strings.Contains(a, "l7-user\n") || strings.Contains(a, "l2-agent") {
		t.Fatalf("the twin restore did not merge a.txt: %q", a)
	}
	if string(after["o.txt"].data) != "the user's o\n" {
		t.Fatalf("the twin restore did not keep o.txt: %q", after["o.txt"].data)
	}

	var mu sync.Mutex
	var table []outcome
	t.Cleanup(func() {
		sort.Slice(table, func(i, j int) bool { return index(table[i].name) < index(table[j].name) })
		var b strings.Builder
		b.WriteString("\n| failpoint (in place) | process | head after reopen | files after reopen | user edits lost | user told |\n|---|---|---|---|---|---|\n")
		for _, o := range table {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", o.name, o.killed, o.head, o.workspace, o.lost, o.told)
		}
		t.Log(b.String())
	})
	for _, fp := range []string{"preview.after_capture", "restore.after_intent", "restore.after_write", "restore.after_delete", "restore.before_verify", "restore.before_head", "restore.after_head"} {
		t.Run(fp, func(t *testing.T) {
			t.Parallel()
			o := crashInPlace(t, fp, before, after)
			mu.Lock()
			table = append(table, o)
			mu.Unlock()
		})
	}
}

func crashInPlace(t *testing.T, fp string, before, after map[string]file) outcome {
	e := inPlaceEnv(t)
	if d := diff(before, e.files()); len(d) > 0 {
		t.Fatalf("the scenario is not deterministic: %v", d)
	}
	git0 := e.gitState()
	o := outcome{name: fp, killed: "SIGKILL"}
	args := []string{"--session", e.sid, "-p", inPlaceCmd}
	if fp != "preview.after_capture" {
		tok := str(e.ok(args...), "token")
		args[len(args)-1] = inPlaceCmd + " --confirm " + tok
	}
	r := e.yolop(fp, args...)
	if !r.killed {
		t.Fatalf("%s was not reached: exit %d\n%s\n%s", fp, r.code, r.stdout, r.stderr)
	}
	mid := e.files()
	for p, f := range mid {
		if b, a := before[p], after[p]; !sameFile(f, b) && !sameFile(f, a) {
			t.Fatalf("killed at %s: %s is neither as before nor as after the restore: %q", fp, p, f.data)
		}
	}
	// The user goes on editing before yolop opens again: a line added to
	// the merged file, a new file.
	cur, err := os.ReadFile(filepath.Join(e.root, "a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, e.root, "a.txt", string(cur)+"after the crash\n")
	write(t, e.root, "late.txt", "written while yolop was down\n")

	notes := e.repairNotes()
	rows := e.list()
	e.requireGit(git0)
	now := e.files()
	// The edits made after the kill are in place.
	if !bytes.HasSuffix(now["a.txt"].data, []byte("after the crash\n")) || !bytes.Contains(now["a.txt"].data, []byte("l7-user\n")) {
		t.Fatalf("a.txt lost the user's edits: %q", now["a.txt"].data)
	}
	if string(now["late.txt"].data) != "written while yolop was down\n" {
		t.Fatalf("late.txt = %q", now["late.txt"].data)
	}
	want := before
	switch fp {
	case "preview.after_capture":
		o.head, o.workspace, o.told = "cp3 (unchanged)", "unchanged", "nothing to tell"
		if len(notes) != 0 || head(rows) != "cp3" {
			t.Fatalf("rows %+v notes %v", rows, notes)
		}
	case "restore.after_head":
		// head.moved is durable: the restore happened.
		want = after
		o.head, o.workspace, o.told = "cp1 (the restore's)", "as the restore left them", "nothing to tell (restore completed)"
		if len(notes) != 0 || head(rows) != "cp1" {
			t.Fatalf("rows %+v notes %v: want the restore applied", rows, notes)
		}
	default:
		o.head, o.workspace = "cp3 (old head)", "every path put back as before the restore"
		if head(rows) != "cp3" {
			t.Fatalf("rows %+v: want the old head cp3", rows)
		}
		if !e.timelineHas("restore.aborted", "rolled back on open") {
			t.Fatal("no restore.aborted record for the interrupted restore")
		}
		if !hasNote(notes, "was interrupted") || !hasNote(notes, snapshot.RefPrefix+e.sid+"/r1") {
			t.Fatalf("repair notes do not tell the user: %v", notes)
		}
		o.told = "yes: " + quoteNote(notes)
	}
	for p, w := range want {
		g, ok := now[p]
		switch {
		case p == "a.txt":
			if string(g.data) != string(w.data)+"after the crash\n" {
				t.Fatalf("a.txt = %q, want %q and the line added after the crash", g.data, w.data)
			}
		case !ok:
			t.Fatalf("%s is missing after the open, want %q", p, w.data)
		case !sameFile(g, w):
			t.Fatalf("%s = %q after the open, want %q", p, g.data, w.data)
		}
	}
	for p := range now {
		if _, ok := want[p]; !ok && p != "late.txt" {
			t.Fatalf("%s is there after the open, and should not be", p)
		}
	}
	// The files before the restore are in its recovery snapshot, byte for
	// byte (the user's own notes and o.txt among them).
	if fp != "preview.after_capture" {
		recovery := snapshot.RefPrefix + e.sid + "/r1"
		for _, p := range []string{"notes/user.txt", "o.txt"} {
			if got := gittest.Git(t, e.root, "cat-file", "-p", recovery+":"+p); got+"\n" != string(before[p].data) {
				t.Fatalf("%s:%s = %q", recovery, p, got)
			}
		}
	}
	o.lost = "none"

	if fp != "restore.after_head" {
		// A new preview and confirm after the repair: the restore in place
		// takes the agent's turns back and keeps every edit of the user's.
		e.restore(inPlaceCmd)
		got := e.files()
		if a := string(got["a.txt"].data); a != string(after["a.txt"].data)+"after the crash\n" {
			t.Fatalf("restore after the repair: a.txt = %q", a)
		}
		for _, p := range []string{"o.txt", "notes/user.txt", "data.bin"} {
			if !sameFile(got[p], after[p]) {
				t.Fatalf("restore after the repair: %s = %q, want %q", p, got[p].data, after[p].data)
			}
		}
		if _, ok := got["two.txt"]; ok {
			t.Fatal("restore after the repair kept two.txt")
		}
		if string(got["late.txt"].data) != "written while yolop was down\n" {
			t.Fatalf("restore after the repair: late.txt = %q", got["late.txt"].data)
		}
		e.requireGit(git0)
	}
	return o
}

func sameFile(a, b file) bool { return a.mode == b.mode && bytes.Equal(a.data, b.data) }
