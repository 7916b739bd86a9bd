package snapshot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// revertAndRestore takes the steps back over a fresh capture and restores
// the result, as an in-place rewind does.
func revertAndRestore(t *testing.T, e *Engine, steps []Step, o RevertOptions) map[string]PathOutcome {
	t.Helper()
	ctx := context.Background()
	cur := capture(t, e, "")
	tree, outs, err := e.Revert(ctx, cur.Tree, steps, o)
	if err != nil {
		t.Fatalf("Revert: %v", err)
	}
	if _, err := e.Restore(ctx, cur, tree); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	m := map[string]PathOutcome{}
	for _, po := range outs {
		m[po.Path] = po
	}
	return m
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func TestRevertKeepsTheUsersEdits(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	sh(t, wt, `printf 'a\nb\nc\nd\ne\nf\ng\n' > text.txt; printf 'x\n' > other.txt; printf 'bin\000ary' > blob.bin; git add -A; git commit -qm base`)
	e := openEngine(t, wt)
	start := capture(t, e, "cp1")
	// The agent's turn: edits line b, adds a file, deletes one, renames
	// one, changes a binary file and a mode.
	sh(t, wt, `sed -i 's/^b$/B-agent/' text.txt; printf 'new\n' > made.txt; rm other.txt; printf 'bin\000AGENT' > blob.bin; printf 'u\n' > user-file.txt; rm user-file.txt`)
	end := capture(t, e, "end-cp1")
	// The user, between turns: edits another line of the same file,
	// changes the binary file too, creates a file of their own.
	sh(t, wt, `sed -i 's/^f$/F-user/' text.txt; printf 'bin\000USER' > blob.bin; printf 'mine\n' > mine.txt`)

	got := revertAndRestore(t, e, []Step{{From: start.Tree, To: end.Tree, Label: "cp1"}}, RevertOptions{})
	if s := read(t, filepath.Join(wt, "text.txt")); s != "a\nb\nc\nd\ne\nF-user\ng\n" {
		t.Errorf("text.txt = %q: want the agent's line undone and the user's kept", s)
	}
	if got["text.txt"].Outcome != Merged {
		t.Errorf("text.txt outcome %q, want merged", got["text.txt"].Outcome)
	}
	if s := read(t, filepath.Join(wt, "blob.bin")); s != "bin\000USER" || got["blob.bin"].Outcome != Kept {
		t.Errorf("blob.bin = %q (%s): the user's binary change must be kept", s, got["blob.bin"].Outcome)
	}
	if s := read(t, filepath.Join(wt, "other.txt")); s != "x\n" || got["other.txt"].Outcome != Restored {
		t.Errorf("other.txt = %q (%s): want restored", s, got["other.txt"].Outcome)
	}
	if _, err := os.Lstat(filepath.Join(wt, "made.txt")); !os.IsNotExist(err) || got["made.txt"].Outcome != Restored {
		t.Errorf("made.txt: want removed, got err %v (%s)", err, got["made.txt"].Outcome)
	}
	if s := read(t, filepath.Join(wt, "mine.txt")); s != "mine\n" {
		t.Errorf("mine.txt = %q: a file no agent turn touched must stay", s)
	}
	if _, ok := got["mine.txt"]; ok {
		t.Errorf("mine.txt has an outcome: no step changed it")
	}
}

func TestRevertOverlapKeptOrMarked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		o    RevertOptions
		want Outcome
		file string
	}{
		{"kept", RevertOptions{}, Kept, "one\nuser\nthree\n"},
		{"markers", RevertOptions{Markers: true}, Conflict, ""},
		{"overwrite", RevertOptions{Overwrite: true}, Overwritten, "one\ntwo\nthree\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wt := gittest.NewRepo(t)
			sh(t, wt, `printf 'one\ntwo\nthree\n' > f.txt; git add -A; git commit -qm base`)
			e := openEngine(t, wt)
			start := capture(t, e, "cp1")
			sh(t, wt, `printf 'one\nagent\nthree\n' > f.txt`)
			end := capture(t, e, "end-cp1")
			sh(t, wt, `printf 'one\nuser\nthree\n' > f.txt`)
			got := revertAndRestore(t, e, []Step{{From: start.Tree, To: end.Tree, Label: "cp1"}}, tc.o)
			if got["f.txt"].Outcome != tc.want {
				t.Fatalf("outcome %q, want %q", got["f.txt"].Outcome, tc.want)
			}
			s := read(t, filepath.Join(wt, "f.txt"))
			if tc.file != "" && s != tc.file {
				t.Fatalf("f.txt = %q, want %q", s, tc.file)
			}
			if tc.want == Conflict && (!strings.Contains(s, "<<<<<<< yours") || !strings.Contains(s, ">>>>>>> before cp1") || !strings.Contains(s, "user") || !strings.Contains(s, "two")) {
				t.Fatalf("f.txt has no labelled markers: %q", s)
			}
		})
	}
}

// A user edit made between two agent turns survives a rewind past both.
func TestRevertTwoTurnsKeepsTheEditBetween(t *testing.T) {
	t.Parallel()
	wt := gittest.NewRepo(t)
	sh(t, wt, `printf '1\n2\n3\n4\n5\n6\n7\n8\n9\n' > f.txt; git add -A; git commit -qm base`)
	e := openEngine(t, wt)
	s1 := capture(t, e, "cp1")
	sh(t, wt, `sed -i 's/^2$/2-agent/' f.txt`)
	e1 := capture(t, e, "end-cp1")
	sh(t, wt, `sed -i 's/^5$/5-user/' f.txt`)
	s2 := capture(t, e, "cp2")
	sh(t, wt, `sed -i 's/^8$/8-agent/' f.txt; printf 'two\n' > t2.txt`)
	e2 := capture(t, e, "end-cp2")
	got := revertAndRestore(t, e, []Step{{From: s2.Tree, To: e2.Tree, Label: "cp2"}, {From: s1.Tree, To: e1.Tree, Label: "cp1"}}, RevertOptions{})
	if s := read(t, filepath.Join(wt, "f.txt")); s != "1\n2\n3\n4\n5-user\n6\n7\n8\n9\n" {
		t.Fatalf("f.txt = %q", s)
	}
	if got["f.txt"].Outcome != Merged || got["t2.txt"].Outcome != Restored {
		t.Fatalf("outcomes %+v", got)
	}
}

// The user's file that a later agent turn overwrote comes back when a
// rewind goes past that turn and an older one whose change the user's
// overlaps: the later turn is taken back, the older turn's change stays
// (it cannot be told from the user's), never the later agent's bytes.
func TestRevertPastAnOverwriteGivesBackTheUsersFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, turn1, user, turn2, want string
	}{
		// The agent deletes the file, the user makes one of their own
		// there, the agent overwrites it.
		{"created by the user", `rm f.txt`, `printf 'mine\n' > f.txt`, `printf 'agent 2\n' > f.txt`, "mine\n"},
		// A binary file each time.
		{"binary", `printf 'bin\000agent1' > f.txt`, `printf 'bin\000user' > f.txt`, `printf 'bin\000agent2' > f.txt`, "bin\x00user"},
		// Overlapping line edits.
		{"overlapping lines", `sed -i 's/^2$/2-agent/' f.txt`, `sed -i 's/^2-agent$/2-user/' f.txt`, `printf 'agent 2\n' > f.txt`, "1\n2-user\n3\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wt := gittest.NewRepo(t)
			sh(t, wt, `printf '1\n2\n3\n' > f.txt; git add -A; git commit -qm base`)
			e := openEngine(t, wt)
			s1 := capture(t, e, "cp1")
			sh(t, wt, tc.turn1)
			e1 := capture(t, e, "end-cp1")
			sh(t, wt, tc.user)
			s2 := capture(t, e, "cp2")
			sh(t, wt, tc.turn2)
			e2 := capture(t, e, "end-cp2")
			got := revertAndRestore(t, e, []Step{{From: s2.Tree, To: e2.Tree, Label: "cp2"}, {From: s1.Tree, To: e1.Tree, Label: "cp1"}}, RevertOptions{})
			if s := read(t, filepath.Join(wt, "f.txt")); s != tc.want {
				t.Fatalf("f.txt = %q, want the user's %q", s, tc.want)
			}
			if o := got["f.txt"]; o.Outcome != Merged || !o.Changed || !strings.Contains(o.Why, "cp1's change stays") {
				t.Fatalf("outcome %+v, want merged, saying cp1's change stays", o)
			}
		})
	}
}
