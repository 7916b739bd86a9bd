package sandbox

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/spawn"
)

// TestRecycledWorktreeOutOfReach is attack 8 of the issue "Sealed": a
// process of session A that escaped everything that ends a session's
// processes (its yolop and process helper were killed, it left the
// session's process group and environment marker, and its recorded parent
// is gone) keeps the Landlock policy of A, whose rules are attached to the
// inodes of A's worktree and git admin directory. After A is removed and
// its worktree parked and claimed by session B, that process must not be
// able to write B's files or B's admin directory: recycling moves the
// files into a fresh directory with a fresh admin directory. The process
// tries to write every worktree and admin directory of the repository
// every 50 ms and logs what it could (to /dev/shm, the one place of its
// policy outside A's directories that the test can read).
func TestRecycledWorktreeOutOfReach(t *testing.T) {
	needABI(t, 3)
	t.Parallel()
	e := newEnv(t, "")
	e.turn(nil, "true") // session A and its worktree
	aRoot := e.root
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	shm := filepath.Join("/dev/shm", "yolop-recycle-"+hex.EncodeToString(b[:]))
	if err := os.Mkdir(shm, 0o777); err != nil {
		t.Skipf("no /dev/shm to log to: %v", err)
	}
	t.Cleanup(func() {
		if pid, err := os.ReadFile(filepath.Join(shm, "pid")); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(pid))); err == nil {
				_ = syscall.Kill(n, syscall.SIGKILL)
			}
		}
		os.RemoveAll(shm)
	})
	common := filepath.Join(e.repo, ".git")
	loop := `echo $$ > ` + shm + `/pid; while :; do for d in ` + e.data + `/worktrees/*/s_* ` + common + `/worktrees/*; do ` +
		`if [ -d "$d" ]; then if (echo a > "$d/pwned-by-a") 2>/dev/null; then echo "ok $d"; else echo "no $d"; fi; fi; done >> ` + shm + `/log; sleep 0.05; done`
	script := `(env -u YOLOP_SESSION_ID setsid sh -c '` + loop + `' </dev/null >/dev/null 2>&1 &); while [ ! -s ` + shm + `/log ]; do sleep 0.05; done; exec sleep 600`
	cmd := exec.Command(bin, "--provider", "sim", "--output-format", "json", "--session", e.sid, "-p", "$ "+script)
	cmd.Dir = e.repo
	cmd.Env = e.environ()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitLog(t, shm, func(l string) bool { return l == "ok "+aRoot })
	// The worst case: the helpers, every process the ledger knows and
	// yolop are killed (the helpers first, so that none ends the escaped
	// process on its way out); only the escaped process lives on.
	ledger := filepath.Join(e.data, "sessions", e.sid, spawn.LedgerFile)
	raw, _ := os.ReadFile(ledger)
	var recs []spawn.Record
	for _, l := range strings.Split(string(raw), "\n") {
		var r spawn.Record
		if json.Unmarshal([]byte(l), &r) == nil && r.PID > 0 && r.Op == "start" {
			recs = append(recs, r)
		}
	}
	for _, helpers := range []bool{true, false} {
		for _, r := range recs {
			if (r.Role == spawn.RoleHelper) == helpers && spawn.Alive(r) {
				_ = syscall.Kill(r.PID, syscall.SIGKILL)
			}
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// Killed processes linger until reaped; the park below rightly
	// refuses while the ledger names a live one.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		var live []spawn.Record
		for _, r := range recs {
			if spawn.Alive(r) {
				live = append(live, r)
			}
		}
		if len(live) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("recorded processes still live: %+v", live)
		}
	}
	pidb, err := os.ReadFile(filepath.Join(shm, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	daemon, _ := strconv.Atoi(strings.TrimSpace(string(pidb)))
	if syscall.Kill(daemon, 0) != nil {
		t.Fatalf("the escaped process did not survive; output:\n%s", out.String())
	}

	// A is removed and its worktree parked; B claims it.
	e.extra = []string{"YOLOP_WORKTREE_SPARES=1"}
	rm := exec.Command(bin, "sessions", "rm", "--force", e.sid)
	rm.Dir, rm.Env = e.repo, e.environ()
	if o, err := rm.CombinedOutput(); err != nil || !strings.Contains(string(o), "as the spare") {
		t.Fatalf("sessions rm: %v\n%s", err, o)
	}
	e.sid, e.root = "", ""
	m := e.turn(nil, "echo b > b.txt")
	if string(m["recycled"]) != "true" {
		t.Fatalf("session B did not claim the spare: %s", m["recycled"])
	}
	bRoot := e.root
	ad, err := exec.Command("git", "-C", bRoot, "rev-parse", "--absolute-git-dir").Output()
	if err != nil {
		t.Fatal(err)
	}
	bAdmin := strings.TrimSpace(string(ad))
	// Several rounds of the process's loop over B's directories.
	for range 3 {
		mark := countLines(t, shm)
		waitLog(t, shm, func(l string) bool { return strings.HasSuffix(l, " "+bRoot) }, mark)
		waitLog(t, shm, func(l string) bool { return strings.HasSuffix(l, " "+bAdmin) }, mark)
	}
	log := readLog(t, shm)
	for _, l := range log {
		if l == "ok "+bRoot || l == "ok "+bAdmin {
			t.Errorf("A's escaped process wrote B's directory: %s", l)
		}
	}
	for _, p := range []string{filepath.Join(bRoot, "pwned-by-a"), filepath.Join(bAdmin, "pwned-by-a")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists", p)
		}
	}
	// B's start prepares a spare in the background; it must be done
	// before the data directory is removed.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		sp, _ := filepath.Glob(filepath.Join(e.data, "worktrees", "*", ".spare-1"))
		tmp, _ := filepath.Glob(filepath.Join(e.data, "worktrees", "*", ".tmp-*"))
		if len(sp) > 0 && len(tmp) == 0 {
			return
		}
	}
	t.Fatal("the background preparation of a spare never finished")
}

func readLog(t *testing.T, shm string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(shm, "log"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

func countLines(t *testing.T, shm string) int { return len(readLog(t, shm)) }

// waitLog waits (up to a minute) for a log line after the first skip lines
// that matches.
func waitLog(t *testing.T, shm string, match func(string) bool, skip ...int) {
	t.Helper()
	from := 0
	if len(skip) > 0 {
		from = skip[0]
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		lines := readLog(t, shm)
		for i := from; i < len(lines); i++ {
			if match(lines[i]) {
				return
			}
		}
	}
	t.Fatalf("the process's log never had the line looked for; it holds:\n%s", strings.Join(tail(readLog(t, shm), 20), "\n"))
}

func tail(l []string, n int) []string {
	if len(l) > n {
		return l[len(l)-n:]
	}
	return l
}
