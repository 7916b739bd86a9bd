// Command startbench times session start end to end: the first `yolop -p`
// turn of a new session on a big generated tree minus the same on a tiny
// tree, side by side with `git status --porcelain --untracked-files=all` and
// `git worktree add` on the big tree, for a start without a spare, with a
// spare at the user's commit, and with a spare 1 and 100 commits behind.
// It prints a Markdown table.
//
//	go run ./test/bench/cmd/startbench -yolop BIN -mksynth mksynth.py [-runs 5] [-dir DIR] N...
package main

import (
	"bytes"
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
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "startbench:", err)
		os.Exit(1)
	}
}

// commitsAhead is how many commits the user's HEAD has over the oldest spare.
const commitsAhead = 100

type scenario struct {
	name   string
	spares string // YOLOP_WORKTREE_SPARES for the timed turn
	behind int    // commits the spare is behind HEAD; -1: no spare
}

var scenarios = []scenario{
	{"no spare (fresh checkout)", "0", -1},
	{"spare at the same commit", "1", 0},
	{"spare 1 commit behind", "1", 1},
	{"spare 100 commits behind", "1", 100},
}

type bench struct {
	yolop string
	env   []string
	log   io.Writer
	runs  int
	seq   int
	work  string
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("startbench", flag.ContinueOnError)
	runs := fs.Int("runs", 5, "timed runs per measurement (the median is reported)")
	work := fs.String("dir", "", "directory for generated trees (default: a new temporary directory, removed afterwards)")
	yolop := fs.String("yolop", "", "the yolop binary to time (required)")
	mksynth := fs.String("mksynth", os.Getenv("MKSYNTH"), "path of mksynth.py, the shared tree generator (default $MKSYNTH)")
	only := fs.String("only", "", "measure only these scenarios, comma-separated: none, same, 1, 100 (default: all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *only != "" {
		keys := map[string]int{"none": -1, "same": 0, "1": 1, "100": 100}
		var picked []scenario
		for _, k := range strings.Split(*only, ",") {
			behind, ok := keys[strings.TrimSpace(k)]
			if !ok {
				return fmt.Errorf("-only %q: want none, same, 1 or 100", k)
			}
			for _, sc := range scenarios {
				if sc.behind == behind {
					picked = append(picked, sc)
				}
			}
		}
		scenarios = picked
	}
	if *yolop == "" || *mksynth == "" {
		return fmt.Errorf("-yolop and -mksynth are required")
	}
	sizes := []int{10000, 100000}
	if fs.NArg() > 0 {
		sizes = nil
		for _, a := range fs.Args() {
			n, err := strconv.Atoi(a)
			if err != nil || n < 1000 {
				return fmt.Errorf("size %q: want a number of files >= 1000", a)
			}
			sizes = append(sizes, n)
		}
	}
	base := *work
	if base == "" {
		d, err := os.MkdirTemp("", "startbench-")
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
	b := &bench{yolop: *yolop, log: stderr, runs: *runs, work: base}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasSuffix(k, "_API_KEY") || strings.HasPrefix(k, "YOLOP_") || strings.HasPrefix(k, "GIT_") || k == "XDG_CONFIG_HOME" {
			continue
		}
		b.env = append(b.env, kv)
	}
	b.env = append(b.env, "XDG_CONFIG_HOME="+cfg)
	fmt.Fprintf(stdout, "load average at start: %s\n\n", loadavg())
	for _, n := range sizes {
		big := filepath.Join(base, fmt.Sprintf("big-%d", n))
		tiny := filepath.Join(base, "tiny")
		for _, t := range []struct {
			dir string
			n   int
		}{{big, n}, {tiny, 100}} {
			if _, err := os.Stat(t.dir); err == nil {
				continue
			}
			fmt.Fprintf(stderr, "generating %d files in %s\n", t.n, t.dir)
			if err := b.cmd("", nil, "python3", *mksynth, strconv.Itoa(t.n), t.dir); err != nil {
				return err
			}
			if err := b.addCommits(t.dir); err != nil {
				return err
			}
		}
		if err := b.table(stdout, n, big, tiny); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "load average at end: %s\n", loadavg())
	return nil
}

// addCommits makes commitsAhead commits on top of the generated tree, each
// changing one tracked file, so that spares can be parked behind HEAD.
func (b *bench) addCommits(dir string) error {
	out, err := b.output(dir, nil, "git", "ls-files")
	if err != nil {
		return err
	}
	files := strings.Split(strings.TrimSpace(out), "\n")
	for i, k := 0, 0; i < commitsAhead; k++ {
		f := files[(k*7919)%len(files)]
		fh, err := os.OpenFile(filepath.Join(dir, f), os.O_APPEND|os.O_WRONLY, 0)
		if os.IsNotExist(err) {
			continue // one of the files the generator deleted
		}
		if err != nil {
			return err
		}
		i++
		fmt.Fprintf(fh, "commit %d\n", k)
		fh.Close()
		if err := b.cmd(dir, nil, "git", "commit", "-q", "--no-verify", "-m", fmt.Sprintf("change %d", k), "--", f); err != nil {
			return err
		}
	}
	return nil
}

func (b *bench) table(w io.Writer, n int, big, tiny string) error {
	fmt.Fprintf(w, "#### %d files (median of %d runs)\n\n", n, b.runs)
	fmt.Fprintln(w, "| start | first turn, big tree | first turn, tiny tree | session start (big − tiny) | `git status -uall` | start / status | `git worktree add` |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, sc := range scenarios {
		var turnBig, turnTiny, status, add []time.Duration
		for r := 0; r < b.runs+1; r++ {
			tb, st, err := b.firstTurn(big, sc, true)
			if err != nil {
				return fmt.Errorf("%s, %d files: %w", sc.name, n, err)
			}
			tt, _, err := b.firstTurn(tiny, sc, false)
			if err != nil {
				return fmt.Errorf("%s, tiny tree: %w", sc.name, err)
			}
			wa, err := b.worktreeAdd(big)
			if err != nil {
				return err
			}
			if r == 0 {
				continue // warm-up
			}
			turnBig, turnTiny, status, add = append(turnBig, tb), append(turnTiny, tt), append(status, st), append(add, wa)
		}
		mb, mt, ms, ma := median(turnBig), median(turnTiny), median(status), median(add)
		start := mb - mt
		fmt.Fprintf(w, "| %s | %s | %s | **%s** | %s | **%.1f×** | %s |\n", sc.name, ms2(mb), ms2(mt), ms2(start), ms2(ms), float64(start)/float64(ms), ms2(ma))
		fmt.Fprintf(b.log, "%d files, %s: start %s, status %s (load %s)\n", n, sc.name, ms2(start), ms2(ms), loadavg())
	}
	fmt.Fprintln(w)
	return nil
}

// firstTurn prepares the scenario in a fresh data directory (untimed),
// times `git status` on the tree when withStatus, then times the first
// `yolop -p` turn of a new session, and cleans up (untimed).
func (b *bench) firstTurn(repo string, sc scenario, withStatus bool) (turn, status time.Duration, err error) {
	b.seq++
	data := filepath.Join(b.work, fmt.Sprintf("data-%d", b.seq))
	defer b.cleanup(repo, data)
	env := []string{"YOLOP_DATA_DIR=" + data, "YOLOP_WORKTREE_SPARES=" + sc.spares}
	if sc.behind >= 0 {
		at := "HEAD~" + strconv.Itoa(sc.behind)
		if err := b.cmd(repo, env, b.yolop, "worktree", "prepare-spare", "--at", at); err != nil {
			return 0, 0, err
		}
	}
	if withStatus {
		t0 := time.Now()
		if err := b.cmd(repo, nil, "git", "status", "--porcelain", "--untracked-files=all"); err != nil {
			return 0, 0, err
		}
		status = time.Since(t0)
	}
	t0 := time.Now()
	out, err := b.output(repo, env, b.yolop, "--output-format", "json", "-p", "hello")
	turn = time.Since(t0)
	if err != nil {
		return 0, 0, err
	}
	var res struct {
		Status   string `json:"status"`
		Recycled bool   `json:"recycled"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Status != "completed" {
		return 0, 0, fmt.Errorf("turn did not complete: %s", out)
	}
	if res.Recycled != (sc.behind >= 0) {
		return 0, 0, fmt.Errorf("recycled = %v, want %v", res.Recycled, sc.behind >= 0)
	}
	return turn, status, nil
}

// cleanup waits for the background preparation the turn started, then
// removes every worktree of the data directory and the data directory.
func (b *bench) cleanup(repo, data string) {
	// The preparer is a detached process: end it (SIGTERM: it removes
	// its half-made spare) and wait until none for this data directory is
	// alive, so it never runs during the next measurement. Letting it
	// finish would cost a whole checkout per run for nothing.
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
	dirs, _ := filepath.Glob(filepath.Join(data, "worktrees", "*", "*"))
	for _, d := range dirs {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			_ = b.cmd(repo, nil, "git", "worktree", "remove", "--force", "--force", d)
		}
	}
	_ = os.RemoveAll(data)
	_ = b.cmd(repo, nil, "git", "worktree", "prune")
	// Session branches would pile up; they hold no work here.
	if out, err := b.output(repo, nil, "git", "for-each-ref", "--format=%(refname)", "refs/heads/yolop/"); err == nil {
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
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if bytes.Contains(b, []byte("prepare-spare")) && bytes.Contains(b, []byte(dataDir+"\x00")) {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// worktreeAdd times a plain `git worktree add --detach` of HEAD.
func (b *bench) worktreeAdd(repo string) (time.Duration, error) {
	p := filepath.Join(b.work, "plain-worktree")
	// A leftover of an interrupted run would make the add fail.
	_ = os.RemoveAll(p)
	_ = b.cmd(repo, nil, "git", "worktree", "prune")
	t0 := time.Now()
	if err := b.cmd(repo, nil, "git", "worktree", "add", "-q", "--detach", p, "HEAD"); err != nil {
		return 0, err
	}
	d := time.Since(t0)
	return d, b.cmd(repo, nil, "git", "worktree", "remove", "--force", p)
}

func (b *bench) cmd(dir string, env []string, name string, args ...string) error {
	_, err := b.run(dir, env, name, args...)
	return err
}

func (b *bench) output(dir string, env []string, name string, args ...string) (string, error) {
	return b.run(dir, env, name, args...)
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

func ms2(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
