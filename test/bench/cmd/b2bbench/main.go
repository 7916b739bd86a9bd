// Command b2bbench times back-to-back session starts on a generated tree
// (test/bench/synth), side by side with `git status --porcelain
// --untracked-files=all` in the same rounds: the first `yolop -p` turn of
// a new session with no spare and no preparation (a fresh checkout), of a
// session started right after another one's first turn (whose background
// spare preparation is then in flight), of the same with spares off in
// both (a fresh checkout right after another), and of a session started
// when a spare is ready. A 100-file tree's first turn, without spares, is
// the fixed cost of a turn, taken off to give the start's own time.
// Before each timed scenario the disk is let settle (sync, then no
// writeback for a while: a 100,000-file checkout's metadata takes seconds
// to reach the disk, and a start timed during it is slowed by it; a
// second start meets the first one's, which is part of what it measures),
// and the three starts compared take turns at going first. It prints a
// Markdown table, and the second start's ratios round by round.
//
//	go run ./test/bench/cmd/b2bbench -yolop BIN [-runs 5] [-dir DIR] [N]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/yolop-dev/yolop/test/bench/synth"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "b2bbench:", err)
		os.Exit(1)
	}
}

type bench struct {
	yolop string
	env   []string
	log   io.Writer
	seq   int
	work  string
	// fallbacks counts the timed second starts that checked out their
	// own worktree instead of claiming the preparation's.
	fallbacks int
	// used are the data directories to remove when the run ends.
	used []string
	// settled is the time spent waiting for the disk to settle.
	settled time.Duration
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("b2bbench", flag.ContinueOnError)
	runs := fs.Int("runs", 5, "timed rounds (the median is reported), after one warm-up round")
	work := fs.String("dir", "", "directory for the generated trees (default: a new temporary directory, removed afterwards); kept trees are reused")
	yolop := fs.String("yolop", "", "the yolop binary to time (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *yolop == "" {
		return fmt.Errorf("-yolop is required")
	}
	n := 100000
	if fs.NArg() > 0 {
		v, err := strconv.Atoi(fs.Arg(0))
		if err != nil || v < 1000 {
			return fmt.Errorf("size %q: want a number of files >= 1000", fs.Arg(0))
		}
		n = v
	}
	base := *work
	if base == "" {
		d, err := os.MkdirTemp("", "b2bbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		base = d
	}
	cfg := filepath.Join(base, "config")
	if err := os.MkdirAll(cfg, 0o700); err != nil {
		return err
	}
	b := &bench{yolop: *yolop, log: stderr, work: base}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasSuffix(k, "_API_KEY") || strings.HasPrefix(k, "YOLOP_") || strings.HasPrefix(k, "GIT_") || k == "XDG_CONFIG_HOME" {
			continue
		}
		b.env = append(b.env, kv)
	}
	b.env = append(b.env, "XDG_CONFIG_HOME="+cfg)
	big, tiny := filepath.Join(base, fmt.Sprintf("big-%d", n)), filepath.Join(base, "tiny")
	for _, t := range []struct {
		dir string
		n   int
	}{{big, n}, {tiny, 100}} {
		if _, err := os.Stat(t.dir); err == nil {
			continue
		}
		t0 := time.Now()
		fmt.Fprintf(stderr, "generating %d files in %s (load %s)\n", t.n, t.dir, loadavg())
		if _, err := synth.Generate(context.Background(), t.dir, t.n, 1); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "generated in %s\n", time.Since(t0).Round(time.Second))
	}
	// The worktrees are removed when the run ends, not between
	// measurements: on ext4, files created within a minute or so of the
	// deletion of as many (a 100,000-file worktree) are slow to allocate
	// (the allocator skips recently freed inodes), and a start timed
	// after a removal took 77 s where the same start took 11 s before any.
	defer b.removeAll(big)
	fmt.Fprintf(stdout, "load average at start: %s\n\n", loadavg())
	var status, fresh, inflight, freshAfter, ready, tinyTurn []time.Duration
	var loads, perRound []string
	for r := 0; r <= *runs; r++ {
		loads = append(loads, loadavg())
		st, err := b.status(big)
		if err != nil {
			return err
		}
		// The starts compared take turns at going first, so that none
		// always follows another's file system work.
		var f, fl, ff time.Duration
		for i := range 3 {
			b.settle()
			switch (i + r) % 3 {
			case 0:
				f, err = b.fresh(big)
				if err != nil {
					return fmt.Errorf("fresh start: %w", err)
				}
			case 1:
				fl, err = b.inFlight(big)
				if err != nil {
					return fmt.Errorf("start during a preparation: %w", err)
				}
			case 2:
				ff, err = b.freshAfter(big)
				if err != nil {
					return fmt.Errorf("fresh start after another: %w", err)
				}
			}
		}
		b.settle()
		st2, err := b.status(big)
		if err != nil {
			return err
		}
		b.settle()
		rd, err := b.ready(big)
		if err != nil {
			return fmt.Errorf("start with a spare: %w", err)
		}
		tt, err := b.fresh(tiny)
		if err != nil {
			return fmt.Errorf("tiny tree: %w", err)
		}
		fmt.Fprintf(stderr, "round %d: status %s/%s, fresh %s, in flight %s, fresh after another %s, ready %s, tiny %s (load %s)\n", r, ms(st), ms(st2), ms(f), ms(fl), ms(ff), ms(rd), ms(tt), loadavg())
		if r == 0 {
			b.fallbacks = 0
			continue // warm-up
		}
		status = append(status, st, st2)
		fresh, inflight, freshAfter, ready, tinyTurn = append(fresh, f), append(inflight, fl), append(freshAfter, ff), append(ready, rd), append(tinyTurn, tt)
		order := []string{"fresh", "second", "fresh after another"}
		for range r % 3 {
			order = append(order[1:], order[0])
		}
		perRound = append(perRound, fmt.Sprintf("| %d | %s | %s | %s | %s | %.2f× | %.2f× |", r, strings.Join(order, ", "), ms(f), ms(ff), ms(fl), float64(fl-tt)/float64(f-tt), float64(fl-tt)/float64(ff-tt)))
	}
	loads = append(loads, loadavg())
	s, t := median(status), median(tinyTurn)
	fmt.Fprintf(stdout, "#### %d files (median of %d rounds; load average %s)\n\n", n, *runs, strings.Join(loads, " → "))
	fmt.Fprintln(stdout, "| measurement | first turn | start (− tiny-tree turn) | ÷ `git status -uall` | ÷ fresh start |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|")
	fmt.Fprintf(stdout, "| `git status --porcelain --untracked-files=all` | %s | | 1.00× | |\n", ms(s))
	fs0 := median(fresh) - t
	for _, row := range []struct {
		name string
		d    time.Duration
	}{
		{"fresh start (no spare, no preparation)", median(fresh)},
		{"fresh start right after another session's (spares off in both)", median(freshAfter)},
		{"second start, the first one's preparation in flight", median(inflight)},
		{"start with a spare ready", median(ready)},
	} {
		d := row.d - t
		fmt.Fprintf(stdout, "| %s | %s | **%s** | %.2f× | %.2f× |\n", row.name, ms(row.d), ms(d), float64(d)/float64(s), float64(d)/float64(fs0))
	}
	fmt.Fprintf(stdout, "| first turn on a 100-file tree (subtracted) | %s | | | |\n\n", ms(t))
	fmt.Fprintf(stdout, "Second starts that gave up waiting and checked out their own: %d of %d.\n\n", b.fallbacks, *runs)
	fmt.Fprintln(stdout, "| round | order | fresh start | fresh start after another | second start, preparation in flight | second ÷ fresh | second ÷ fresh after another |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|")
	for _, row := range perRound {
		fmt.Fprintln(stdout, row)
	}
	fmt.Fprintf(stdout, "\nDisk settling before the timed starts: %s in all.\n\n", b.settled.Round(time.Second))
	return nil
}

// settle waits for the disk to be quiet: sync, then until the kernel
// holds under 8 MiB of dirty or writeback pages and less than 1 MiB was
// written to any disk in each of two 250 ms windows, at most a minute.
// Outside Linux it only syncs.
func (b *bench) settle() {
	t0 := time.Now()
	defer func() { b.settled += time.Since(t0) }()
	syscall.Sync()
	quiet := 0
	last, ok := sectorsWritten()
	for deadline := time.Now().Add(time.Minute); ok && quiet < 2 && time.Now().Before(deadline); {
		time.Sleep(250 * time.Millisecond)
		now, ok2 := sectorsWritten()
		if !ok2 {
			return
		}
		if now-last < 2048 && dirtyKiB() < 8192 {
			quiet++
		} else {
			quiet = 0
		}
		last = now
	}
}

// sectorsWritten is the sum of sectors (512 bytes) written or discarded
// on every disk since boot, from /proc/diskstats (a file system mounted
// with discard trims what a removal freed, after the removal returned).
func sectorsWritten() (uint64, bool) {
	raw, err := os.ReadFile("/proc/diskstats")
	if err != nil {
		return 0, false
	}
	var sum uint64
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		// major minor name reads merged sectors ms writes merged sectors ...
		if len(f) < 10 || strings.HasPrefix(f[2], "loop") || strings.HasPrefix(f[2], "ram") {
			continue
		}
		for _, i := range []int{9, 16} {
			if i < len(f) {
				if n, err := strconv.ParseUint(f[i], 10, 64); err == nil {
					sum += n
				}
			}
		}
	}
	return sum, true
}

// dirtyKiB is the kernel's dirty and writeback pages, from /proc/meminfo.
func dirtyKiB() uint64 {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	var sum uint64
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[0] == "Dirty:" || f[0] == "Writeback:") {
			if n, err := strconv.ParseUint(f[1], 10, 64); err == nil {
				sum += n
			}
		}
	}
	return sum
}

// status times git status on the tree.
func (b *bench) status(repo string) (time.Duration, error) {
	t0 := time.Now()
	_, err := b.run(repo, nil, "git", "status", "--porcelain", "--untracked-files=all")
	return time.Since(t0), err
}

// fresh times the first turn of a new session with spares off (a fresh
// checkout, and no preparation after it).
func (b *bench) fresh(repo string) (time.Duration, error) {
	data := b.dataDir()
	defer b.cleanup(data)
	d, _, err := b.turn(repo, data, "0")
	return d, err
}

// freshAfter runs a first session's first turn with spares off
// (untimed) and times the first turn of a second session started at once,
// also with spares off: the second start with no spare machinery, its
// checkout beside the writeback of the first one's.
func (b *bench) freshAfter(repo string) (time.Duration, error) {
	data := b.dataDir()
	defer b.cleanup(data)
	if _, _, err := b.turn(repo, data, "0"); err != nil {
		return 0, err
	}
	d, _, err := b.turn(repo, data, "0")
	return d, err
}

// inFlight runs a first session's first turn (untimed; as it ends, it
// starts the background preparation of a spare) and times the first turn
// of a second session started at once.
func (b *bench) inFlight(repo string) (time.Duration, error) {
	data := b.dataDir()
	defer b.cleanup(data)
	if _, _, err := b.turn(repo, data, "1"); err != nil {
		return 0, err
	}
	if len(preparers(data)) == 0 {
		return 0, fmt.Errorf("no preparation is in flight after the first session's turn")
	}
	d, recycled, err := b.turn(repo, data, "1")
	if err == nil && !recycled {
		// The start gave up waiting (no progress for the stall limit:
		// the idle-priority preparation got no processor) and checked
		// out its own; timed all the same, and counted.
		b.fallbacks++
	}
	return d, err
}

// ready prepares a spare (untimed) and times a new session's first turn.
func (b *bench) ready(repo string) (time.Duration, error) {
	data := b.dataDir()
	defer b.cleanup(data)
	if _, err := b.run(repo, []string{"YOLOP_DATA_DIR=" + data, "YOLOP_WORKTREE_SPARES=1"}, b.yolop, "worktree", "prepare-spare"); err != nil {
		return 0, err
	}
	d, recycled, err := b.turn(repo, data, "1")
	if err == nil && !recycled {
		return 0, fmt.Errorf("the start did not claim the ready spare")
	}
	return d, err
}

func (b *bench) dataDir() string {
	b.seq++
	return filepath.Join(b.work, fmt.Sprintf("data-%d", b.seq))
}

// turn times `yolop -p` starting a new session; recycled is whether its
// worktree was a claimed spare.
func (b *bench) turn(repo, data, spares string) (time.Duration, bool, error) {
	env := []string{"YOLOP_DATA_DIR=" + data, "YOLOP_WORKTREE_SPARES=" + spares}
	t0 := time.Now()
	out, err := b.run(repo, env, b.yolop, "--output-format", "json", "-p", "hello")
	d := time.Since(t0)
	if err != nil {
		return 0, false, err
	}
	var res struct {
		Status     string `json:"status"`
		ActiveRoot string `json:"active_root"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Status != "completed" {
		return 0, false, fmt.Errorf("turn did not complete: %s", out)
	}
	var ws struct {
		Recycled bool `json:"recycled"`
	}
	m, _ := filepath.Glob(filepath.Join(data, "sessions", "*", "workspace.json"))
	for _, p := range m {
		if raw, err := os.ReadFile(p); err == nil {
			var w struct {
				Recycled   bool   `json:"recycled"`
				ActiveRoot string `json:"active_root"`
			}
			if json.Unmarshal(raw, &w) == nil && w.ActiveRoot == res.ActiveRoot {
				ws.Recycled = w.Recycled
			}
		}
	}
	return d, ws.Recycled, nil
}

// cleanup ends the background preparations of the data directory; its
// worktrees stay until removeAll.
func (b *bench) cleanup(data string) {
	b.used = append(b.used, data)
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		pids := preparers(data)
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// removeAll removes the worktrees and data directories the run used, and
// the session branches.
func (b *bench) removeAll(repo string) {
	for _, data := range b.used {
		dirs, _ := filepath.Glob(filepath.Join(data, "worktrees", "*", "*"))
		for _, d := range dirs {
			if st, err := os.Stat(d); err == nil && st.IsDir() {
				_, _ = b.run(repo, nil, "git", "worktree", "remove", "--force", "--force", d)
			}
		}
		_ = os.RemoveAll(data)
	}
	_, _ = b.run(repo, nil, "git", "worktree", "prune")
	if out, err := b.run(repo, nil, "git", "for-each-ref", "--format=%(refname)", "refs/heads/yolop/"); err == nil {
		var in strings.Builder
		for _, r := range strings.Fields(out) {
			fmt.Fprintf(&in, "delete %s\n", r)
		}
		c := exec.Command("git", "update-ref", "--stdin")
		c.Dir, c.Stdin = repo, strings.NewReader(in.String())
		_ = c.Run()
	}
}

// preparers lists the live `yolop worktree prepare-spare` processes for
// dataDir (Linux: from /proc).
func preparers(dataDir string) []int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []int
	for _, p := range procs {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if bytes.Contains(raw, []byte("prepare-spare")) && bytes.Contains(raw, []byte(dataDir+"\x00")) {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

func (b *bench) run(dir string, env []string, name string, args ...string) (string, error) {
	c := exec.Command(name, args...)
	c.Dir = dir
	c.Env = append(append([]string(nil), b.env...), env...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s%s", name, strings.Join(args, " "), err, errb.String(), out.String())
	}
	return strings.TrimSpace(out.String()), nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

func loadavg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
