package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/session"
)

// Turns and background preparations of one repository.
//
// A turn holds the repository's turns lock shared while it runs
// (<common>/yolop/turns.lock, beside the worktrees lock, so that sessions
// of every data directory see it; never deleted). A spare preparation
// polls it: while any turn holds it, the preparation stops its git
// processes (SIGSTOP to their process group) and continues them
// (SIGCONT) once none does, so that a checkout for the next session never
// competes with the turn being waited for. The poll takes the lock
// exclusively without waiting and drops it at once; a turn therefore
// takes its share with a short wait (HoldTurn).
//
// A new session's start that finds no ready spare but a preparation in
// flight waits for it and claims what it makes instead of checking out a
// second tree beside it: it reserves the preparation (an exclusive flock
// on .tmp-<hex>.wait, so that one waiter waits for one preparation and a
// second start checks out its own), and the preparation never pauses while
// it is reserved. The preparation is alive while its .tmp-<hex>.lock is
// locked (the kernel drops a flock with its process) and shows progress by
// the lock file's mtime, which it touches while its git processes use the
// processor (Linux: their CPU time from /proc; elsewhere while they run
// and are not stopped). The waiter falls back to checking out its own
// worktree when the lock is free and no spare appeared (the preparation
// died or failed; the next sweep removes what it left), when the mtime is
// older than the stall limit, or after the wait limit.
//
// A preparation's git processes never stay stopped without it: they run
// in a process group led by a sentinel, a shell that stops itself again
// each time it is continued. When the preparing process dies, however it
// dies, its children's process group is orphaned while one of its members
// is stopped, and the kernel then sends the whole group SIGHUP and SIGCONT
// (POSIX job control, Linux and BSD alike): the checkout and the sentinel
// end, releasing git's index.lock of the half-made worktree, which the
// next sweep removes. The preparation leads its own session (it is started
// with setsid), which this rule needs: the group must be in the session of
// the process that dies. The sentinel stops itself with SIGTSTP, which the
// kernel discards in an orphaned group: one caught running when the group
// was orphaned (just continued by the poll) finds its parent gone at its
// next turn of the loop and ends, instead of stopping for good. No git
// joins the group before the sentinel has first stopped. The hangup is
// delivered, not waited for: a start that waited for a preparer that died
// gives its session up to orphansGrace to empty (Linux) before it sweeps
// the half-made worktree those processes may still be writing.
const turnsLockName = "turns.lock"

// Timing of the coordination; the tests shorten them through Manager.
const (
	pollEvery     = 100 * time.Millisecond // the preparation's look at the turns lock
	beatEvery     = 500 * time.Millisecond // its progress mark at most this often
	stallLimit    = 15 * time.Second       // a waiter gives up after this long without progress
	waitLimit     = 10 * time.Minute       // and after this long in all
	maxPause      = 30 * time.Minute       // a preparation pauses for turns at most this long in all
	reserveWithin = 150 * time.Millisecond // a waiter's tries at a reservation a poll holds
)

// prepareTag starts the record a preparation writes in its .tmp- lock
// file: "prepare <pid> <commit>\n".
const prepareTag = "prepare "

// waitSuffix names a preparation's reservation, beside its lock.
const waitSuffix = ".wait"

// turnsLockPath is the turns lock of the repository whose common git
// directory is commonDir.
func turnsLockPath(commonDir string) string {
	return filepath.Join(commonDir, "yolop", turnsLockName)
}

// HoldSessionTurn is HoldTurn for a turn of the session whose workspace is
// ws: nothing to hold (a release that does nothing) for a folder outside
// git or a session in no repository.
func HoldSessionTurn(ctx context.Context, ws session.Workspace) (release func(), err error) {
	if ws.CommonDir == "" || ws.Folder {
		return func() {}, nil
	}
	return HoldTurn(ctx, ws.CommonDir)
}

// HoldTurn takes the repository's turns lock shared for a turn; release
// drops it. The only exclusive holds are the preparations' instant polls,
// so the wait is short; an error means some other process holds the lock
// exclusively (or it cannot be opened), and the turn should run anyway.
func HoldTurn(ctx context.Context, commonDir string) (release func(), err error) {
	path := turnsLockPath(commonDir)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("worktree: turns lock: %w", err)
	}
	return waitLock(ctx, path, unix.LOCK_SH, 2*time.Second,
		"only a spare preparation's poll holds it so, and only for an instant; a background preparation may run beside this turn")
}

// pauser is a preparation's side of the coordination: the sentinel that
// leads its git processes' group, the poll of the turns lock and the
// reservation, and the progress mark.
type pauser struct {
	pgid     int       // the group of the preparation's git processes (0: none)
	sentinel *exec.Cmd // its leader
	turns    *os.File  // the turns lock, polled (nil when it cannot be opened)
	wait     string    // the reservation's path
	beat     string    // the lock file whose mtime marks progress
	every    time.Duration
	quit     chan struct{}
	done     chan struct{}

	mu       sync.Mutex
	armed    bool          // a git that may be stopped runs (the checkout, the settle)
	stopped  bool          // the group is stopped now
	since    time.Time     // when it was stopped
	paused   time.Duration // stopped so far, in all
	lastCPU  uint64
	lastBeat time.Time
	// noLift: lifting the group's I/O class failed (liftGroupIO); the
	// preparation keeps the idle class.
	noLift bool
	// session is this process's pid when it leads its session (a
	// detached preparation does), whose autogroup a waiting start has
	// lifted (liftAutogroup); 0 once lifted, failed, or when it does not.
	session int
}

// startPauser starts the sentinel and the poll for the preparation whose
// lock file is lock; with no sentinel (no /bin/sh) the preparation runs
// unpaused and only marks its progress.
func startPauser(commonDir, lock string, every time.Duration) *pauser {
	p := &pauser{wait: strings.TrimSuffix(lock, lockSuffix) + waitSuffix, beat: lock, every: every, quit: make(chan struct{}), done: make(chan struct{}), session: ownSession()}
	if p.every <= 0 {
		p.every = pollEvery
	}
	if cmd, err := startSentinel(); err == nil {
		p.sentinel, p.pgid = cmd, cmd.Process.Pid
		// No git joins the group before the sentinel has stopped: a
		// preparer killed while it still ran would orphan the group
		// with no stopped member, and the kernel would leave the
		// checkout running into the half-made worktree a start's sweep
		// is removing.
		awaitStop(cmd.Process.Pid, time.Second)
	}
	path := turnsLockPath(commonDir)
	if os.MkdirAll(filepath.Dir(path), 0o700) == nil {
		if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600); err == nil {
			p.turns = f
		}
	}
	go p.loop()
	return p
}

// startSentinel starts the sentinel that leads the preparation's process
// group (see the comment on turnsLockName).
func startSentinel() (*exec.Cmd, error) {
	// The preparer's pid is given, not read from $PPID: a preparer that
	// dies before the shell starts leaves it a $PPID of 1, which never
	// goes away, and in a group orphaned by that death SIGTSTP is
	// discarded: the loop would spin for good.
	cmd := exec.Command("/bin/sh", "-c", `p=$1; while kill -TSTP $$; do kill -0 "$p" 2>/dev/null || exit 0; done`, "sentinel", strconv.Itoa(os.Getpid()))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd, cmd.Start()
}

// awaitStop waits until the child pid is stopped (it stops itself at
// once), or for limit: past it the preparation goes on, as without a
// sentinel. The stop is reported, not reaped: Wait still reaps the child.
func awaitStop(pid int, limit time.Duration) {
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		var ws unix.WaitStatus
		for {
			_, err := unix.Wait4(pid, &ws, unix.WUNTRACED, nil)
			if err != unix.EINTR {
				return
			}
		}
	}()
	select {
	case <-stopped:
	case <-time.After(limit):
	}
}

func (p *pauser) loop() {
	defer close(p.done)
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-p.quit:
			return
		case <-t.C:
			p.step()
		}
	}
}

// step stops or continues the group as the turns lock and the reservation
// say, and marks progress.
func (p *pauser) step() {
	turn := p.turnRunning()
	waited := reserved(p.wait)
	p.mu.Lock()
	if waited && p.pgid > 0 && !p.noLift {
		// A start waits: the git processes are on its path and get the
		// user's I/O class, those that joined the group since the last
		// poll too.
		p.noLift = liftGroupIO(p.pgid) != nil
	}
	if waited && p.session > 0 {
		// And the session's processor weight, where the kernel shares
		// the processor between sessions first (autogroups): once.
		if err := liftAutogroup(p.session); !errors.Is(err, unix.EAGAIN) {
			p.session = 0
		}
	}
	now := time.Now()
	want := p.armed && turn && !waited && p.pgid > 0 && p.paused < maxPause
	switch {
	case want && !p.stopped:
		if unix.Kill(-p.pgid, unix.SIGSTOP) == nil {
			p.stopped, p.since = true, now
		}
	case !want && p.stopped:
		p.resumeLocked(now)
	}
	if p.stopped && p.paused+now.Sub(p.since) >= maxPause {
		p.resumeLocked(now)
	}
	beat := !p.stopped && now.Sub(p.lastBeat) >= beatEvery
	armed := p.armed
	p.mu.Unlock()
	if !beat {
		return
	}
	if armed && p.pgid > 0 {
		// Progress is the git processes' processor time, where it can be
		// read; a checkout hung on a filter or a full disk makes none.
		if cpu, ok := groupCPU(p.pgid); ok {
			p.mu.Lock()
			moved := cpu != p.lastCPU
			p.lastCPU = cpu
			p.mu.Unlock()
			if !moved {
				return
			}
		}
	}
	p.mu.Lock()
	p.lastBeat = now
	p.mu.Unlock()
	_ = os.Chtimes(p.beat, now, now)
}

// resumeLocked continues the stopped group (p.mu held).
func (p *pauser) resumeLocked(now time.Time) {
	if !p.stopped {
		return
	}
	_ = unix.Kill(-p.pgid, unix.SIGCONT)
	p.stopped = false
	p.paused += now.Sub(p.since)
}

// turnRunning reports whether a turn holds the turns lock.
func (p *pauser) turnRunning() bool {
	if p.turns == nil {
		return false
	}
	err := unix.Flock(int(p.turns.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		_ = unix.Flock(int(p.turns.Fd()), unix.LOCK_UN)
		return false
	}
	return errors.Is(err, unix.EWOULDBLOCK)
}

// reserved reports whether a start waits for the preparation (holds its
// reservation).
func reserved(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		return errors.Is(err, unix.EWOULDBLOCK)
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
}

// context returns ctx whose git processes start in the preparation's
// group.
func (p *pauser) context(ctx context.Context) context.Context {
	return git.InProcessGroup(ctx, p.pgid)
}

// arm lets the poll stop the git processes started from here on; disarm
// ends that and continues them if they are stopped.
func (p *pauser) arm() {
	p.mu.Lock()
	p.armed = true
	p.mu.Unlock()
}

func (p *pauser) disarm() {
	p.mu.Lock()
	p.armed = false
	p.resumeLocked(time.Now())
	p.mu.Unlock()
}

// close ends the poll, continues the group and ends the sentinel.
func (p *pauser) close() {
	close(p.quit)
	<-p.done
	p.disarm()
	if p.sentinel != nil {
		_ = p.sentinel.Process.Kill()
		_ = p.sentinel.Wait()
	}
	if p.turns != nil {
		_ = p.turns.Close()
	}
}

// prepareRecord is what a live preparation's lock file says of it.
type prepareRecord struct {
	PID    int
	Commit string
}

// describe writes the preparation's record into its lock file (which only
// its holder writes).
func (t *tmpWorktree) describe(commit string) error {
	b := []byte(prepareTag + strconv.Itoa(os.Getpid()) + " " + commit + "\n")
	if _, err := t.lock.WriteAt(b, 0); err != nil {
		return fmt.Errorf("worktree: describe the preparation in %s: %w", t.lock.Name(), err)
	}
	return nil
}

// readPrepareRecord reads a .tmp- lock file's record; ok is false for a
// worktree being parked (whose lock holds none) or an unreadable one.
func readPrepareRecord(lock string) (prepareRecord, bool) {
	b, err := os.ReadFile(lock)
	if err != nil || !strings.HasPrefix(string(b), prepareTag) {
		return prepareRecord{}, false
	}
	f := strings.Fields(strings.TrimPrefix(string(b), prepareTag))
	if len(f) != 2 || !git.IsOID(f[1]) {
		return prepareRecord{}, false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return prepareRecord{}, false
	}
	return prepareRecord{PID: pid, Commit: f[1]}, true
}

// reservation is a waiter's hold of a preparation.
type reservation struct {
	f *os.File
}

// reserve takes the preparation's reservation, trying for a moment (a
// preparation's poll holds it shared for an instant); nil when another
// start holds it.
func reserve(path string) *reservation {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil
	}
	deadline := time.Now().Add(reserveWithin)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return &reservation{f: f}
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// release removes the reservation file (a preparation that is over has
// no use for it; one still running sees no waiter) and drops the lock.
func (r *reservation) release() {
	_ = os.Remove(r.f.Name())
	_ = unix.Flock(int(r.f.Fd()), unix.LOCK_UN)
	_ = r.f.Close()
}

// waitOutcome is how a wait for a preparation ended.
type waitOutcome int

const (
	waitEnded   waitOutcome = iota // the preparation's process is gone (done or died)
	waitStalled                    // no progress within the stall limit
	waitTooLong                    // the wait limit passed
)

// awaitPreparation waits for a live preparation in dir that no other start
// waits for, if there is one, telling m.Notify what it waits for. waited
// is false when there was none to wait for; note says why a wait was
// given up (empty when the preparation ended).
func (m *Manager) awaitPreparation(ctx context.Context, dir string) (waited bool, note string, err error) {
	waited, note, pid, err := m.awaitPreparer(ctx, dir)
	if waited && err == nil && pid != os.Getpid() && unix.Kill(pid, 0) == unix.ESRCH {
		// The preparer died. Its git processes, orphaned, end on the
		// kernel's hangup, but may still be writing into the half-made
		// worktree the caller's sweep is about to remove: they are
		// given a moment to go (the preparation leads its session).
		for deadline := time.Now().Add(orphansGrace); sessionLive(pid) && time.Now().Before(deadline); {
			select {
			case <-ctx.Done():
				return waited, note, ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return waited, note, err
}

// orphansGrace bounds the wait for a dead preparer's git processes.
const orphansGrace = 2 * time.Second

// awaitPreparer is awaitPreparation, with the pid of the preparer it
// waited for.
func (m *Manager) awaitPreparer(ctx context.Context, dir string) (waited bool, note string, pid int, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false, "", 0, nil
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, tmpPrefix) || !strings.HasSuffix(name, lockSuffix) {
			continue
		}
		lock := filepath.Join(dir, name)
		rec, ok := readPrepareRecord(lock)
		if !ok {
			continue
		}
		if f, free, err := lockFile(lock, false); err != nil || free {
			if f != nil {
				f.Close()
			}
			continue // dead: the sweep removes what it left
		}
		r := reserve(strings.TrimSuffix(lock, lockSuffix) + waitSuffix)
		if r == nil {
			continue // another start waits for this one
		}
		// Its session's processor weight is lifted now rather than at
		// its next poll (up to pollEvery away), while this start's own
		// first steps compete with it. Best effort: that poll lifts it
		// when this cannot (another autogroup changed in the last 100 ms,
		// or, without privilege, the sealed preparation's file belongs
		// to root).
		liftPreparer(rec.PID)
		m.notify(fmt.Sprintf("waiting for the spare worktree being prepared in the background (yolop process %d, at commit %s) instead of checking out a second one beside it…", rec.PID, git.ShortOID(rec.Commit)))
		start := time.Now()
		out, err := m.watch(ctx, lock)
		r.release()
		if err != nil {
			return true, "", rec.PID, err
		}
		switch out {
		case waitStalled:
			note = fmt.Sprintf("the background preparation of a spare worktree (yolop process %d) made no progress for %s, so this session checked out its own worktree", rec.PID, m.stall().Round(time.Second))
		case waitTooLong:
			note = fmt.Sprintf("the background preparation of a spare worktree (yolop process %d) was still running after %s, so this session checked out its own worktree", rec.PID, time.Since(start).Round(time.Second))
		}
		return true, note, rec.PID, nil
	}
	return false, "", 0, nil
}

// watch waits until the preparation whose lock file is lock is over,
// stalls, or takes too long.
func (m *Manager) watch(ctx context.Context, lock string) (waitOutcome, error) {
	start := time.Now()
	limit := waitLimit
	if m.WaitLimit > 0 {
		limit = m.WaitLimit
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		st, err := os.Lstat(lock)
		if errors.Is(err, fs.ErrNotExist) {
			return waitEnded, nil
		}
		if f, free, lerr := lockFile(lock, false); lerr == nil && free {
			f.Close()
			return waitEnded, nil
		}
		now := time.Now()
		if err == nil && now.Sub(st.ModTime()) > m.stall() && now.Sub(start) > m.stall() {
			return waitStalled, nil
		}
		if now.Sub(start) > limit {
			return waitTooLong, nil
		}
		select {
		case <-ctx.Done():
			return waitEnded, ctx.Err()
		case <-t.C:
		}
	}
}

func (m *Manager) stall() time.Duration {
	if m.StallLimit > 0 {
		return m.StallLimit
	}
	return stallLimit
}

func (m *Manager) notify(msg string) {
	if m.Notify != nil {
		m.Notify(msg)
	}
}
