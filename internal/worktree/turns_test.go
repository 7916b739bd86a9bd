package worktree

import (
	"context"
	"fmt"
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
)

// The test binary run as a separate preparing process (TestMain).
const (
	preparerEnv     = "WORKTREE_TEST_PREPARER_DATA"
	preparerRepoEnv = "WORKTREE_TEST_PREPARER_REPO"
)

func runPreparer(data, repo string) int {
	r, err := Detect(context.Background(), repo)
	if err == nil {
		_, err = (&Manager{DataDir: data, Spares: 1}).PrepareSpare(context.Background(), r, "")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "preparer:", err)
		return 1
	}
	return 0
}

// slowCheckout commits a file whose checkout (git's smudge filter, run by
// every checkout of the repository from now on) waits until the returned
// go is called, so that a preparation is caught in flight.
func slowCheckout(t *testing.T, repo string) (goOn func()) {
	t.Helper()
	dir := t.TempDir()
	flag := filepath.Join(dir, "go")
	gittest.WriteFile(t, repo, ".gitattributes", "slow.txt filter=slow\n")
	gittest.WriteFile(t, repo, "slow.txt", "slow\n")
	gittest.Commit(t, repo, "a file whose checkout waits")
	// It also goes on once the test is over (its directory removed), so
	// that a test that failed before goOn leaves no checkout behind.
	gittest.Git(t, repo, "config", "filter.slow.smudge", "while [ ! -e '"+flag+"' ] && [ -d '"+dir+"' ]; do sleep 0.02; done; cat")
	return func() {
		if err := os.WriteFile(flag, nil, 0o600); err != nil {
			t.Error(err)
		}
	}
}

// slowPreparation starts a spare's preparation in a new rig r, its
// checkout held until goOn; data is r's data directory, symlinks resolved,
// and prepared gets the preparation's result.
func slowPreparation(t *testing.T) (r *spareRig, repo *Repo, data string, goOn func(), prepared <-chan error) {
	t.Helper()
	r = newSpareRig(t)
	goOn = slowCheckout(t, r.repo)
	repo = detect(t, r.repo)
	done := make(chan error, 1)
	go func() {
		_, err := (&Manager{DataDir: r.data, Spares: 1, PollEvery: 10 * time.Millisecond}).PrepareSpare(context.Background(), repo, "")
		done <- err
	}()
	data, err := filepath.EvalSymlinks(r.data)
	if err != nil {
		t.Fatal(err)
	}
	return r, repo, data, goOn, done
}

// livePreparation waits until dir holds the lock of a live preparation
// and returns its record.
func livePreparation(t *testing.T, dir string) prepareRecord {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		locks, _ := filepath.Glob(filepath.Join(dir, tmpPrefix+"*"+lockSuffix))
		for _, l := range locks {
			if rec, ok := readPrepareRecord(l); ok {
				return rec
			}
		}
	}
	t.Fatal("no preparation started")
	return prepareRecord{}
}

// leftovers lists the entries of the repository's spare directory other
// than the lock and the sessions' worktrees.
func leftovers(t *testing.T, dir string, sessions ...string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if n == repoLockName || strings.HasPrefix(n, pendingPrefix) {
			continue
		}
		keep := false
		for _, s := range sessions {
			keep = keep || n == s
		}
		if !keep {
			out = append(out, n)
		}
	}
	return out
}

// TestStartClaimsThePreparationInFlight: a start that finds a spare being
// prepared (and a turn of another session running, which would otherwise
// pause the preparation) says it waits, waits, and claims that spare: one
// checkout in all, not two.
func TestStartClaimsThePreparationInFlight(t *testing.T) {
	t.Parallel()
	r := newSpareRig(t)
	goOn := slowCheckout(t, r.repo)
	repo := detect(t, r.repo)
	release, err := HoldTurn(context.Background(), repo.CommonDir)
	if err != nil {
		t.Fatal(err)
	}
	prepared := make(chan error, 1)
	var spare string
	go func() {
		var err error
		spare, err = (&Manager{DataDir: r.data, Spares: 1, PollEvery: 10 * time.Millisecond}).PrepareSpare(context.Background(), repo, "")
		prepared <- err
	}()
	rec := livePreparation(t, r.spareDir())
	// A start that does not wait would hang in its own checkout: let it
	// go on after a while, so that the test fails instead.
	never := time.AfterFunc(time.Minute, goOn)
	defer never.Stop()
	var told []string
	m := &Manager{DataDir: r.data, Spares: 1, Notify: func(msg string) {
		told = append(told, msg)
		goOn() // the checkout goes on once the start waits for it
	}}
	st, err := m.Start(context.Background(), detect(t, r.repo), "s_waits", "waits")
	release()
	if err != nil {
		t.Fatal(err)
	}
	st.Done()
	if err := <-prepared; err != nil {
		t.Fatalf("the preparation failed: %v", err)
	}
	if len(told) != 1 || !strings.Contains(told[0], "waiting for the spare worktree being prepared") || !strings.Contains(told[0], strconv.Itoa(rec.PID)) {
		t.Fatalf("the start told %q", told)
	}
	if !st.Recycled || spare == "" || exists(spare) {
		t.Fatalf("the start did not claim the prepared spare %q (recycled %v, notes %v)", spare, st.Recycled, st.Notes)
	}
	if got := gittest.Git(t, st.Path, "status", "--porcelain", "--untracked-files=all"); got != "" {
		t.Fatalf("the claimed worktree is dirty: %s", got)
	}
	if out := gittest.Git(t, r.repo, "worktree", "list", "--porcelain"); strings.Count(out, "worktree ") != 2 {
		t.Fatalf("git's worktrees (want the checkout and the session's):\n%s", out)
	}
	if l := leftovers(t, r.spareDir(), "s_waits"); len(l) != 0 {
		t.Fatalf("left in %s: %v", r.spareDir(), l)
	}
}

// TestSecondStartDoesNotWaitForAReservedPreparation: one preparation, two
// starts: the one that reserved it waits, the other checks out its own.
func TestSecondStartDoesNotWaitForAReservedPreparation(t *testing.T) {
	t.Parallel()
	r := newSpareRig(t)
	dir := r.spareDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	tmp, err := newTmp(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tmp.release()
	if err := tmp.describe(gittest.Git(t, r.repo, "rev-parse", "HEAD")); err != nil {
		t.Fatal(err)
	}
	res := reserve(tmp.path + waitSuffix)
	if res == nil {
		t.Fatal("no reservation")
	}
	defer res.release()
	m := &Manager{DataDir: r.data, Spares: 1, Notify: func(msg string) { t.Errorf("a reserved preparation was waited for: %s", msg) }}
	st, err := m.Start(context.Background(), detect(t, r.repo), "s_own", "own")
	if err != nil {
		t.Fatal(err)
	}
	st.Done()
	if st.Recycled {
		t.Fatal("recycled without a spare")
	}
}

// TestStartAfterThePreparerIsKilled: the preparing process is killed with
// SIGKILL while a start waits for it: the start checks out its own
// worktree, the half-made spare is removed, and none of the preparation's
// processes is left (stopped or not).
func TestStartAfterThePreparerIsKilled(t *testing.T) {
	t.Parallel()
	r := newSpareRig(t)
	goOn := slowCheckout(t, r.repo)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), preparerEnv+"="+r.data, preparerRepoEnv+"="+r.repo)
	// As the product starts it: leading its own session.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() { _ = cmd.Process.Kill(); <-exited }()
	rec := livePreparation(t, r.spareDir())
	if rec.PID != cmd.Process.Pid {
		t.Fatalf("the preparation is process %d, want %d", rec.PID, cmd.Process.Pid)
	}
	never := time.AfterFunc(time.Minute, goOn)
	defer never.Stop()
	m := &Manager{DataDir: r.data, Spares: 1, Notify: func(string) {
		if err := cmd.Process.Kill(); err != nil {
			t.Error(err)
		}
		<-exited
		goOn() // for this start's own checkout
	}}
	st, err := m.Start(context.Background(), detect(t, r.repo), "s_own", "own")
	if err != nil {
		t.Fatal(err)
	}
	st.Done()
	if st.Recycled {
		t.Fatal("a half-made spare was claimed")
	}
	if got := gittest.Git(t, st.Path, "status", "--porcelain", "--untracked-files=all"); got != "" {
		t.Fatalf("the new worktree is dirty: %s", got)
	}
	if l := leftovers(t, r.spareDir(), "s_own"); len(l) != 0 {
		t.Fatalf("left in %s: %v", r.spareDir(), l)
	}
	if out := gittest.Git(t, r.repo, "worktree", "list", "--porcelain"); strings.Count(out, "worktree ") != 2 || strings.Contains(out, "prunable") {
		t.Fatalf("git's worktrees (want the checkout and the session's):\n%s", out)
	}
	if runtime.GOOS == "linux" {
		// The kernel hangs up the orphaned group: its checkout and the
		// sentinel end.
		sid := cmd.Process.Pid
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			left := inSession(sid)
			if len(left) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("processes of the killed preparation are left: %v", left)
			}
		}
	}
}

// procStat is what a test reads of /proc/<pid>/stat.
type procStat struct {
	pid, pgrp, sid int
	state          string
	comm           string
}

func readStat(pid string) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return procStat{}, false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return procStat{}, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 4 {
		return procStat{}, false
	}
	n, _ := strconv.Atoi(pid)
	pg, _ := strconv.Atoi(f[2])
	sid, _ := strconv.Atoi(f[3])
	return procStat{pid: n, pgrp: pg, sid: sid, state: f[0], comm: s[open+1 : end]}, f[0] != "Z"
}

func allStats() []procStat {
	names, _ := filepath.Glob("/proc/[0-9]*")
	var out []procStat
	for _, n := range names {
		if st, ok := readStat(filepath.Base(n)); ok {
			out = append(out, st)
		}
	}
	return out
}

// inSession lists the live processes of session sid.
func inSession(sid int) []string {
	var out []string
	for _, st := range allStats() {
		if st.sid == sid {
			out = append(out, fmt.Sprintf("%d %s %s", st.pid, st.comm, st.state))
		}
	}
	return out
}

// TestPreparationStopsWhileATurnRuns (Linux: it reads /proc): the
// preparation's checkout is stopped (state T) while a turn holds the turns
// lock and continued after, and nothing of it is left once it is done.
func TestPreparationStopsWhileATurnRuns(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads process states from /proc")
	}
	t.Parallel()
	_, repo, data, goOn, prepared := slowPreparation(t)
	// The checkout's processes: those working in the new worktree.
	checkout := func() []procStat {
		var out []procStat
		for _, st := range allStats() {
			cwd, err := os.Readlink("/proc/" + strconv.Itoa(st.pid) + "/cwd")
			if err == nil && strings.HasPrefix(cwd, data+string(filepath.Separator)) {
				out = append(out, st)
			}
		}
		return out
	}
	until := func(what string, ok func([]procStat) bool) []procStat {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			if ps := checkout(); ok(ps) {
				return ps
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v", what, checkout())
			}
		}
	}
	hasGit := func(ps []procStat) bool {
		for _, p := range ps {
			if p.comm == "git" {
				return true
			}
		}
		return false
	}
	// Stopped: git in state T, the filter's shells in T or, a shell whose
	// vfork child was stopped before it ran, D (waiting for that child).
	allIn := func(state string) func([]procStat) bool {
		return func(ps []procStat) bool {
			if !hasGit(ps) {
				return false
			}
			for _, p := range ps {
				stopped := p.state == "T" || (p.state == "D" && p.comm != "git")
				if state == "T" && !stopped || state != "T" && p.state == "T" {
					return false
				}
			}
			return true
		}
	}
	running := until("the checkout did not start", allIn("running"))
	release, err := HoldTurn(context.Background(), repo.CommonDir)
	if err != nil {
		t.Fatal(err)
	}
	stopped := until("the checkout was not stopped while a turn ran", allIn("T"))
	if stopped[0].pgrp == running[0].pgrp && stopped[0].pgrp == os.Getpid() {
		t.Fatal("the checkout runs in the test's own process group")
	}
	release()
	until("the checkout was not continued after the turn", allIn("running"))
	goOn()
	if err := <-prepared; err != nil {
		t.Fatalf("the preparation failed: %v", err)
	}
	if ps := checkout(); len(ps) != 0 {
		t.Fatalf("processes of the preparation are left: %v", ps)
	}
	for _, st := range allStats() {
		if st.pgrp == stopped[0].pgrp {
			t.Fatalf("the preparation's process group is left: %+v", st)
		}
	}
}

// sentinelEnv makes the test binary a preparing process that starts a
// sentinel, prints its pid and continues its group again and again, so
// that the sentinel is often running when the process is killed.
const sentinelEnv = "YOLOP_TEST_SENTINEL_PARENT"

func runSentinelParent() {
	cmd, err := startSentinel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(cmd.Process.Pid)
	for {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
	}
}

// TestSentinelEndsWithItsPreparer: a sentinel caught running, not
// stopped, when its preparing process is killed (so the kernel hangs up
// nobody), or not yet started, ends by itself instead of stopping or
// spinning for good in its orphaned group.
func TestSentinelEndsWithItsPreparer(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	for i := 0; i < 20; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), sentinelEnv+"=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var pid int
		if _, err := fmt.Fscan(out, &pid); err != nil {
			t.Fatal(err)
		}
		// Half the rounds kill it at once: often before the sentinel's
		// shell has started (its parent then already gone).
		if i%2 == 1 {
			time.Sleep(5 * time.Millisecond)
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil {
				break // gone, and reaped by init
			}
			s := string(b)
			if f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(f) > 0 && f[0] == "Z" {
				break
			}
			if time.Now().After(deadline) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("round %d: the sentinel %d outlived its preparer: %s", i, pid, s)
			}
		}
	}
}
