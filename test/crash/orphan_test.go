package crash

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/spawn"
)

// startTurn starts a turn with the binary and returns the running process.
func (e *env) startTurn(prompt string) *exec.Cmd {
	e.t.Helper()
	cmd := exec.Command(bin, "--provider", "sim", "--output-format", "json", "--session", e.sid, "-p", prompt)
	cmd.Dir = e.repo
	cmd.Env = append(append(append([]string(nil), baseEnv...), "YOLOP_DATA_DIR="+e.data), e.extra...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	return cmd
}

// helpersOf lists the spawn helpers among pid's children.
func helpersOf(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, d := range ents {
		p, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(st, ')')
		f := strings.Fields(string(st[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(pid) {
			continue
		}
		if cl, err := os.ReadFile("/proc/" + d.Name() + "/cmdline"); err == nil && bytes.Contains(cl, []byte(spawn.HelperArg)) {
			out = append(out, p)
		}
	}
	return out
}

// killTurn SIGKILLs the running yolop and, with helpers, its spawn helpers
// first (the worst case: nothing is left to end the commands but the next
// process's repair).
func (e *env) killTurn(cmd *exec.Cmd, helpers bool) {
	e.t.Helper()
	if helpers {
		for _, h := range helpersOf(cmd.Process.Pid) {
			_ = syscall.Kill(h, syscall.SIGKILL)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		e.t.Fatal(err)
	}
	_ = cmd.Wait()
}

func (e *env) waitPath(rel string) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(e.root, rel)); err == nil {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s never appeared", rel)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// restoreWorkspace previews and confirms a workspace rewind to the head
// checkpoint (the killed turn), each in a new process, and returns the
// files the confirm verified.
func (e *env) rewindKilledTurn() (string, map[string]file) {
	e.t.Helper()
	rows := e.list()
	if len(rows) == 0 || rows[0].Status != "interrupted" {
		e.t.Fatalf("after the kill: rows %+v, want the killed turn interrupted", rows)
	}
	cmd := "/rewind " + rows[0].ID + " workspace"
	e.restore(cmd)
	return cmd, e.files()
}

func linuxOnly(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the process helper's guarantees are Linux's (subreaper, /proc)")
	}
}

const orphanTurn = "$ echo mid > mid.txt; sleep 5; echo LATE > mid.txt; echo late > late.txt"

// TestOrphanWriter: the yolop process is killed one second into a turn
// whose command would write again five seconds in; a new process previews
// and confirms the workspace rewind of that turn, and several seconds
// later the worktree still equals the verified tree. With "helper killed"
// the commands' helper is killed too, so only the next process's repair
// can end the command, and it says so.
func TestOrphanWriter(t *testing.T) {
	linuxOnly(t)
	for _, helperKilled := range []bool{false, true} {
		t.Run(fmt.Sprintf("helper killed=%v", helperKilled), func(t *testing.T) {
			t.Parallel()
			e := &env{t: t, repo: gittest.NewRepo(t), data: t.TempDir()}
			e.turn(turn1)
			before := e.files()
			cmd := e.startTurn(orphanTurn)
			e.waitPath("mid.txt")
			time.Sleep(time.Second - 100*time.Millisecond)
			e.killTurn(cmd, helperKilled)
			notes := e.repairNotes()
			// With its helper killed, only the repair can end the command,
			// and it must say so. Without, the helper ends it; the repair
			// may still meet it (and say so) when it opens the session
			// while the helper is at work.
			if helperKilled && !hasNote(notes, "Ended") {
				t.Fatalf("repair notes %q: want the survivors ended and the user told", notes)
			}
			_, verified := e.rewindKilledTurn()
			if d := diff(before, verified); len(d) > 0 {
				t.Fatalf("the restore did not reach the state before the turn: %v", d)
			}
			time.Sleep(6 * time.Second)
			if d := diff(verified, e.files()); len(d) > 0 {
				t.Fatalf("the worktree changed after the verified restore: %v", d)
			}
		})
	}
}

// writers are shell commands that keep writing the workspace in every way
// a command can outlive its shell.
var writers = []string{
	"(while :; do echo bg >> bg%d.txt; sleep 0.02; done) &",
	"setsid sh -c 'while :; do echo sid >> sid%d.txt; sleep 0.02; done' &",
	"nohup sh -c 'while :; do echo nohup >> nohup%d.txt; sleep 0.02; done' >/dev/null 2>&1 &",
	"sh -c '(while :; do echo dbl >> dbl%d.txt; sleep 0.02; done &) ' &",
	"env -u YOLOP_SESSION_ID sh -c 'while :; do echo noenv >> noenv%d.txt; sleep 0.02; done' &",
}

// TestCrashLoop kills yolop at random moments of turns whose commands keep
// writing (background jobs, setsid, nohup, double forks), sometimes with
// their helpers, then previews and confirms the rewind of the killed turn
// in a new process and checks that the worktree still equals the verified
// tree a few seconds later. YOLOP_CRASH_LOOP sets the number of iterations
// (default 4).
func TestCrashLoop(t *testing.T) {
	linuxOnly(t)
	n := 4
	if v := os.Getenv("YOLOP_CRASH_LOOP"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("YOLOP_CRASH_LOOP=%q: want a positive number of iterations", v)
		}
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("YOLOP_CRASH_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (YOLOP_CRASH_SEED reproduces it)", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	e := &env{t: t, repo: gittest.NewRepo(t), data: t.TempDir()}
	e.turn(turn1)
	bad := 0
	for i := range n {
		before := e.files()
		var b strings.Builder
		fmt.Fprintf(&b, "$ echo start > start%d.txt; ", i)
		for _, w := range writers {
			if rng.IntN(2) == 0 {
				fmt.Fprintf(&b, w+" ", i)
			}
		}
		fmt.Fprintf(&b, "sleep 3; echo end > end%d.txt", i)
		helperKilled := rng.IntN(3) == 0
		cmd := e.startTurn(b.String())
		e.waitPath(fmt.Sprintf("start%d.txt", i))
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		e.killTurn(cmd, helperKilled)
		_, verified := e.rewindKilledTurn()
		if d := diff(before, verified); len(d) > 0 {
			t.Fatalf("iteration %d: the restore did not reach the state before the turn: %v", i, d)
		}
		time.Sleep(1500 * time.Millisecond)
		if d := diff(verified, e.files()); len(d) > 0 {
			bad++
			t.Errorf("iteration %d (%q, helper killed %v): the worktree changed after the verified restore: %v", i, b.String(), helperKilled, d)
		}
	}
	t.Logf("%d iterations, %d inconsistencies", n, bad)
}
