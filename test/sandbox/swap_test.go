package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// swapArg makes the test binary the attacker: a program that exchanges a
// directory and a symlink with renameat2(RENAME_EXCHANGE), which a
// sandboxed command may do inside its worktree.
const swapArg = "__swap"

// swapMain is `__swap pause DIR A B N` (at each of N stops of yolop's pause
// point, exchange A and B, then let yolop go on) or `__swap loop A B` (as
// fast as possible until killed).
func swapMain(args []string) int {
	switch {
	case len(args) == 5 && args[0] == "pause":
		dir, a, b := args[1], args[2], args[3]
		n, err := strconv.Atoi(args[4])
		if err != nil {
			fmt.Fprintln(os.Stderr, "swap:", err)
			return 2
		}
		for i := 0; i < n; i++ {
			r, err := os.Open(filepath.Join(dir, "paused"))
			if err != nil {
				fmt.Fprintln(os.Stderr, "swap:", err)
				return 1
			}
			line, err := bufio.NewReader(r).ReadString('\n')
			r.Close()
			if err != nil {
				fmt.Fprintln(os.Stderr, "swap:", err)
				return 1
			}
			if err := exchange(a, b); err != nil {
				fmt.Fprintln(os.Stderr, "swap:", err)
				return 1
			}
			fmt.Printf("swapped at %s", line)
			w, err := os.OpenFile(filepath.Join(dir, "resume"), os.O_WRONLY, 0)
			if err != nil {
				fmt.Fprintln(os.Stderr, "swap:", err)
				return 1
			}
			_, err = w.WriteString("go\n")
			w.Close()
			if err != nil {
				fmt.Fprintln(os.Stderr, "swap:", err)
				return 1
			}
		}
		return 0
	case len(args) == 3 && args[0] == "loop":
		for {
			if err := exchange(args[1], args[2]); err != nil {
				fmt.Fprintln(os.Stderr, "swap:", err)
				return 1
			}
		}
	}
	fmt.Fprintln(os.Stderr, "swap: usage: __swap pause DIR A B N | __swap loop A B")
	return 2
}

// victims makes n files in the user's checkout, outside the worktree.
func victims(t *testing.T, dir string, n int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d", i)), []byte("the user's\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// TestDeleteFollowsNoSwappedSymlink is issue 25's attack 5 as the agent
// would mount it: a sandboxed background task exchanges a directory of the
// worktree with a symlink into the user's checkout while the model deletes
// the directory's files with delete_file. No file outside the worktree may
// go. "paused" orders the race exactly with the pause point between the
// tool's path resolution and the removal: every delete is resolved while
// the name is the directory and removed after the exchange made it the
// link. "free" is the attack as reported, timed by nobody.
func TestDeleteFollowsNoSwappedSymlink(t *testing.T) {
	needABI(t, 3)
	t.Parallel()
	t.Run("paused", func(t *testing.T) {
		t.Parallel()
		const n = 40
		hooks := t.TempDir()
		for _, f := range []string{"paused", "resume"} {
			if err := syscall.Mkfifo(filepath.Join(hooks, f), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		// The task must open the FIFOs for writing: a declared cache.
		e := newEnv(t, fmt.Sprintf("[sandbox]\nextra_caches = [%q]\n", hooks))
		user := filepath.Join(e.repo, "victims")
		victims(t, user, n)
		e.turn(nil, fmt.Sprintf("mkdir d && for i in $(seq -f %%03g %d); do echo agent > d/f$i; done && ln -s %s l", n, user))
		// Each exchange swaps the names, so the deletes alternate between
		// them: each is resolved while its name is the directory.
		var prompt strings.Builder
		fmt.Fprintf(&prompt, "call bash {\"command\":\"%s %s pause %s d l %d\",\"background\":true}\n", self(t), swapArg, hooks, n)
		for i := 1; i <= n; i++ {
			name := "d"
			if i%2 == 0 {
				name = "l"
			}
			fmt.Fprintf(&prompt, "rm %s/f%03d\n", name, i)
		}
		e.extra = []string{"YOLOP_PAUSEPOINT=tools.after_resolve:" + hooks}
		m := e.yolop("--session", e.sid, "-p", prompt.String())
		if st := str(m, "status"); st != "completed" {
			t.Fatalf("turn: %s: %s", st, m["error"])
		}
		if got := countFiles(t, user); got != n {
			t.Errorf("%d of the user's %d files outside the worktree were deleted", n-got, n)
		}
		// Each delete removed the file it resolved, in the worktree:
		// whichever name the directory has now, it is empty.
		dir := filepath.Join(e.root, "d")
		if fi, err := os.Lstat(dir); err != nil || fi.Mode()&os.ModeSymlink != 0 {
			dir = filepath.Join(e.root, "l")
		}
		if got := countFiles(t, dir); got != 0 {
			t.Errorf("the worktree's directory still holds %d files", got)
		}
		if res := e.toolResults(); strings.Count(res, "deleted file") != n {
			t.Errorf("want %d deletions in the tool results:\n%s", n, res)
		}
	})
	t.Run("free", func(t *testing.T) {
		t.Parallel()
		const n = 200
		e := newEnv(t, "")
		user := filepath.Join(e.repo, "victims")
		victims(t, user, n)
		e.turn(nil, fmt.Sprintf("mkdir d && for i in $(seq -f %%03g %d); do echo agent > d/f$i; done && ln -s %s l", n, user))
		var prompt strings.Builder
		fmt.Fprintf(&prompt, "call bash {\"command\":\"%s %s loop d l\",\"background\":true}\n", self(t), swapArg)
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&prompt, "rm d/f%03d\n", i)
		}
		m := e.yolop("--session", e.sid, "-p", prompt.String())
		if st := str(m, "status"); st != "completed" {
			t.Fatalf("turn: %s: %s", st, m["error"])
		}
		if got := countFiles(t, user); got != n {
			t.Errorf("%d of the user's %d files outside the worktree were deleted", n-got, n)
		}
	})
}

func self(t *testing.T) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
