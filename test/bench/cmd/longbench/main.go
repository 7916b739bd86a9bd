// Command longbench grows one session to thousands of turns and times, side
// by side, what a user of a long session waits for: a print-mode turn, the
// `-p /rewind` listing and `yolop sessions`, each as a separate yolop
// process, against the floor of parsing the session's event log in a
// process of its own. It prints a Markdown table.
//
// Each row's print-mode turn is compared with a turn of a new 10-turn
// session timed in the same loop (the two alternate), so the ratio holds
// on a machine whose load changes between rows.
//
// The session is grown in this process with the product's own constructor
// (app.Open, Session.Prompt), which is what a print-mode turn runs after
// start-up; only the timed turns start yolop. "open + transcript" is what
// the TUI did before its first screen (app.Open, Session.Transcript, the
// whole active branch) in a process of its own, without drawing. "TUI
// last screen" is the real thing: `yolop --session ID` started in a tmux
// window (120×40, TERM=xterm-256color) of a server started beforehand,
// timed from the start of `tmux new-window` until `tmux capture-pane`
// shows the reply of the session's last turn (polled every 2 ms; skipped
// with -tui=false or without tmux). Starting a window and seeing a line
// printed at once costs this harness 20–30 ms.
//
//	go run ./test/bench/cmd/longbench -yolop PATH [-runs 5] [-sessions 500] 1000 5000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/yolop-dev/yolop/internal/app"
	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/provider"
	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/session/jsonl"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "-parse" {
		// The floor: read and parse one event log, nothing else.
		if err := parseOnly(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "longbench:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) == 4 && os.Args[1] == "-load" {
		// What the TUI does before it draws its first screen: open the
		// session and build its transcript.
		if err := load(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "longbench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "longbench:", err)
		os.Exit(1)
	}
}

func load(dataDir, sid string) error {
	s, err := app.Open(context.Background(), app.Env{DataDir: dataDir, Provider: provider.Config{Provider: provider.NameSim}}, app.Resume{ID: sid})
	if err != nil {
		return err
	}
	if len(s.Transcript()) == 0 {
		s.Close()
		return errors.New("empty transcript")
	}
	return s.Close()
}

func parseOnly(path string) error {
	data, err := jsonl.ReadFile(path)
	if err != nil {
		return err
	}
	scan := session.ParseEvents(session.EventsFile, data)
	if scan.Corrupt != nil {
		return scan.Corrupt
	}
	if len(scan.Events) == 0 {
		return errors.New("no events")
	}
	return nil
}

type bench struct {
	yolop, self string
	runs        int
	env         []string
	data, repo  string
	stderr      io.Writer
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("longbench", flag.ContinueOnError)
	yolop := fs.String("yolop", "", "the yolop binary to time (required)")
	runs := fs.Int("runs", 5, "timed runs per measurement (the median is reported)")
	nsess := fs.Int("sessions", 500, "sessions for the `yolop sessions` row (0 skips it)")
	sessTurns := fs.Int("session-turns", 10, "turns of each of those sessions")
	work := fs.String("dir", "", "work directory (default: a new temporary directory, removed afterwards)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of growing the session to this file")
	withTUI := fs.Bool("tui", true, "time the TUI's first screen in tmux (needs tmux)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *yolop == "" {
		return errors.New("-yolop PATH is required (go build -o PATH ./cmd/yolop)")
	}
	marks := []int{1000, 5000}
	if fs.NArg() > 0 {
		marks = nil
		for _, a := range fs.Args() {
			n, err := strconv.Atoi(a)
			if err != nil || n <= 10 {
				return fmt.Errorf("turn count %q: want a number above 10", a)
			}
			marks = append(marks, n)
		}
		slices.Sort(marks)
	}
	marks = append([]int{10}, marks...)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	yp, err := filepath.Abs(*yolop)
	if err != nil {
		return err
	}
	base := *work
	if base == "" {
		d, err := os.MkdirTemp("", "longbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		base = d
	}
	b := &bench{yolop: yp, self: self, runs: *runs, data: filepath.Join(base, "data"), repo: filepath.Join(base, "repo"), stderr: stderr}
	if err := b.isolate(base); err != nil {
		return err
	}
	ctx := context.Background()
	if err := b.makeRepo(ctx); err != nil {
		return err
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	if *withTUI {
		if _, err := exec.LookPath("tmux"); err != nil {
			fmt.Fprintln(stderr, "no tmux: the TUI row is skipped")
			*withTUI = false
		} else {
			stop, err := b.startTmux()
			if err != nil {
				return err
			}
			defer stop()
		}
	}
	type row struct {
		turns                                int
		turn, list, load, tui, parse, inproc time.Duration
		ref                                  time.Duration // a turn of a 10-turn session, timed in the same loop
		events, eventBytes, tlBytes          int64
	}
	var rows []row
	sid := ""
	grown := 0
	for _, m := range marks {
		start := time.Now()
		var inproc time.Duration
		var err error
		sid, inproc, err = b.grow(ctx, sid, grown, m)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "grew the session to %d turns in %s\n", m, time.Since(start).Round(time.Second))
		grown = m
		r := row{turns: m, inproc: inproc}
		dir := filepath.Join(session.SessionsDir(b.data), sid)
		events := filepath.Join(dir, session.EventsFile)
		// The reference: a new session of 10 turns, whose turns are timed
		// in the same loop, so the ratio does not compare two moments of a
		// shared machine's load.
		ref, _, err := b.grow(ctx, "", 0, 10)
		if err != nil {
			return err
		}
		// Interleave the measurements so they see the same load.
		var turns, refs, lists, loads, tuis, parses []time.Duration
		for i := range b.runs {
			if *withTUI {
				// The last turn is grown+i (the timed turns add one each).
				d, err := b.tuiFirstScreen(sid, fmt.Sprintf("turn %d rewrites one file", grown+i))
				if err != nil {
					return err
				}
				tuis = append(tuis, d)
			}
			// The two turns change places every run, so neither always
			// comes first after the TUI row.
			for k := range 2 {
				if (i+k)%2 == 0 {
					d, err := b.time(b.yolop, "--session", sid, "--provider", "sim", "-p", prompt(grown+i+1))
					if err != nil {
						return err
					}
					turns = append(turns, d)
				} else {
					d, err := b.time(b.yolop, "--session", ref, "--provider", "sim", "-p", prompt(11+i))
					if err != nil {
						return err
					}
					refs = append(refs, d)
				}
			}
			d, err := b.time(b.yolop, "--session", sid, "-p", "/rewind")
			if err != nil {
				return err
			}
			lists = append(lists, d)
			if d, err = b.time(b.self, "-load", b.data, sid); err != nil {
				return err
			}
			loads = append(loads, d)
			if d, err = b.time(b.self, "-parse", events); err != nil {
				return err
			}
			parses = append(parses, d)
		}
		grown += b.runs
		r.turn, r.ref, r.list, r.load, r.parse = median(turns), median(refs), median(lists), median(loads), median(parses)
		if len(tuis) > 0 {
			r.tui = median(tuis)
		}
		if fi, err := os.Stat(events); err == nil {
			r.eventBytes = fi.Size()
		}
		if fi, err := os.Stat(filepath.Join(dir, session.TimelineFile)); err == nil {
			r.tlBytes = fi.Size()
		}
		if s, err := session.OpenReadOnly(b.data, sid); err == nil {
			r.events = int64(len(s.Events()))
			s.Close()
		}
		rows = append(rows, r)
	}

	fmt.Fprintf(stdout, "| turns in the session | events (log size) | print-mode turn | turn of a 10-turn session, same loop | × it | `-p /rewind` | TUI last screen | open + whole transcript | parse floor | `/rewind` ÷ floor | TUI ÷ floor | open ÷ floor | in-process turn (growing) |\n")
	fmt.Fprintf(stdout, "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(stdout, "| %d | %d (%s) | %s | %s | %.2f× | %s | %s | %s | %s | %.2f× | %.2f× | %.2f× | %s |\n", r.turns, r.events, size(r.eventBytes), ms(r.turn), ms(r.ref), float64(r.turn)/float64(r.ref), ms(r.list), ms(r.tui), ms(r.load), ms(r.parse), float64(r.list)/float64(r.parse), float64(r.tui)/float64(r.parse), float64(r.load)/float64(r.parse), ms(r.inproc))
	}
	if l, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Fprintf(stdout, "\nload average at the end: %s", l)
	}
	if *nsess > 0 {
		d, floor, err := b.sessions(ctx, *nsess, *sessTurns)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\n| `yolop sessions` with %d sessions of %d turns | parse floor: one process parsing one of their logs |\n|---|---|\n| %s | %s |\n", *nsess, *sessTurns, ms(d), ms(floor))
	}
	return nil
}

// isolate gives git and yolop a home, config and data dir of their own, and
// no API keys (the sim provider).
func (b *bench) isolate(base string) error {
	home := filepath.Join(base, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	gitconfig := filepath.Join(home, ".gitconfig")
	if err := os.WriteFile(gitconfig, []byte("[user]\n\tname = bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n[gc]\n\tauto = 0\n"), 0o600); err != nil {
		return err
	}
	set := map[string]string{
		"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"), "YOLOP_DATA_DIR": b.data,
		"GIT_CONFIG_GLOBAL": gitconfig, "GIT_CONFIG_NOSYSTEM": "1",
		// No spare worktrees: preparing one after a turn is work that
		// grows with the repository, not with the session.
		"YOLOP_WORKTREE_SPARES": "0",
	}
	for k, v := range set {
		if err := os.Setenv(k, v); err != nil {
			return err
		}
	}
	for _, k := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "YOLOP_TRACE_REQUESTS", "YOLOP_PROVIDER"} {
		os.Unsetenv(k)
	}
	b.env = os.Environ()
	return nil
}

// makeRepo commits a small repository of 20 files; each turn rewrites one.
func (b *bench) makeRepo(ctx context.Context) error {
	if err := os.MkdirAll(b.repo, 0o755); err != nil {
		return err
	}
	for i := range 20 {
		if err := os.WriteFile(filepath.Join(b.repo, fmt.Sprintf("f%02d.txt", i)), []byte("base\n"), 0o644); err != nil {
			return err
		}
	}
	g := git.New(b.repo)
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "base"}} {
		if _, err := g.Run(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

// prompt is turn n's prompt: it rewrites one of the 20 files.
func prompt(n int) string {
	return fmt.Sprintf("write f%02d.txt\nturn %d\nEOF\nturn %d rewrites one file", n%20, n, n)
}

// grow opens the session (creating it when sid is ""), runs turns from+1
// through to, and returns the mean in-process time of the last 10 turns.
func (b *bench) grow(ctx context.Context, sid string, from, to int) (string, time.Duration, error) {
	var req app.Request = app.Resume{ID: sid}
	if sid == "" {
		req = app.New{}
	}
	s, err := app.Open(ctx, app.Env{DataDir: b.data, Dir: b.repo, Provider: provider.Config{Provider: provider.NameSim}}, req)
	if err != nil {
		return "", 0, err
	}
	defer s.Close()
	var last time.Duration
	for n := from + 1; n <= to; n++ {
		t := time.Now()
		res, err := s.Prompt(ctx, prompt(n), nil)
		if err != nil {
			return "", 0, fmt.Errorf("turn %d: %w", n, err)
		}
		if res.Status != "completed" {
			return "", 0, fmt.Errorf("turn %d: %s: %s", n, res.Status, res.Error)
		}
		if to-n < 10 {
			last += time.Since(t)
		}
		if n%500 == 0 {
			fmt.Fprintf(b.stderr, "  turn %d\n", n)
		}
	}
	return s.ID(), last / time.Duration(min(10, to-from)), s.Close()
}

// tmuxSocket names the tmux server of the TUI row (its own, so the user's
// sessions are never touched).
const tmuxSocket = "yolop-longbench"

// startTmux starts the tmux server the TUI row opens windows in, with the
// benchmark's environment, and returns how to stop it.
func (b *bench) startTmux() (func(), error) {
	cmd := exec.Command("tmux", "-L", tmuxSocket, "-f", "/dev/null", "new-session", "-d", "-s", "bench", "-x", "120", "-y", "40", "sleep", "86400")
	cmd.Env = b.env
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("start tmux: %v: %s", err, out)
	}
	return func() { exec.Command("tmux", "-L", tmuxSocket, "kill-server").Run() }, nil
}

// tuiFirstScreen starts `yolop --session sid` in a new tmux window and
// returns the time until the window shows want (the reply of the last
// turn), then closes yolop and waits for it to exit (so the session's lock
// is free again).
func (b *bench) tuiFirstScreen(sid, want string) (time.Duration, error) {
	tmux := func(args ...string) ([]byte, error) {
		cmd := exec.Command("tmux", append([]string{"-L", tmuxSocket}, args...)...)
		cmd.Env = b.env
		return cmd.Output()
	}
	t := time.Now()
	// The pane is the terminal; yolop is told it runs in an xterm rather
	// than in tmux, so its colour detection does not ask tmux itself
	// (`tmux info`, two processes: a cost of this harness, not of a
	// terminal).
	out, err := tmux("new-window", "-P", "-F", "#{pane_id} #{pane_pid}", "-c", b.repo, "env", "-u", "TMUX", "TERM=xterm-256color", b.yolop, "--session", sid, "--provider", "sim")
	if err != nil {
		return 0, fmt.Errorf("tmux new-window: %w", err)
	}
	var pane string
	var pid int
	if _, err := fmt.Sscan(string(out), &pane, &pid); err != nil {
		return 0, fmt.Errorf("tmux new-window said %q", out)
	}
	var d time.Duration
	for {
		screen, err := tmux("capture-pane", "-p", "-t", pane)
		if err == nil && strings.Contains(string(screen), want) {
			d = time.Since(t)
			break
		}
		if time.Since(t) > time.Minute {
			return 0, fmt.Errorf("the TUI did not show %q within a minute; its screen:\n%s", want, screen)
		}
		time.Sleep(2 * time.Millisecond)
	}
	tmux("kill-pane", "-t", pane)
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("yolop (pid %d) did not exit after its tmux pane was closed", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return d, nil
}

// time runs a command once and returns its wall time.
func (b *bench) time(name string, args ...string) (time.Duration, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = b.env
	cmd.Dir = b.repo
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	t := time.Now()
	err := cmd.Run()
	d := time.Since(t)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, out.String())
	}
	return d, nil
}

// sessions makes n conversation-only sessions of turns turns each in a
// data dir of their own and times `yolop sessions` there, against one
// process parsing one of their event logs.
func (b *bench) sessions(ctx context.Context, n, turns int) (time.Duration, time.Duration, error) {
	data := filepath.Join(filepath.Dir(b.data), "data-sessions")
	plain := filepath.Join(filepath.Dir(b.data), "plain")
	if err := os.MkdirAll(plain, 0o755); err != nil {
		return 0, 0, err
	}
	start := time.Now()
	var last string
	for i := range n {
		s, err := app.Open(ctx, app.Env{DataDir: data, Dir: plain, Provider: provider.Config{Provider: provider.NameSim}}, app.New{})
		if err != nil {
			return 0, 0, err
		}
		for t := 1; t <= turns; t++ {
			if _, err := s.Prompt(ctx, fmt.Sprintf("session %d turn %d\nsome words of a prompt", i, t), nil); err != nil {
				s.Close()
				return 0, 0, err
			}
		}
		last = s.ID()
		if err := s.Close(); err != nil {
			return 0, 0, err
		}
	}
	fmt.Fprintf(b.stderr, "made %d sessions in %s\n", n, time.Since(start).Round(time.Second))
	events := filepath.Join(session.SessionsDir(data), last, session.EventsFile)
	var ds, floors []time.Duration
	for range b.runs {
		d, err := b.time(b.yolop, "--data-dir", data, "sessions")
		if err != nil {
			return 0, 0, err
		}
		ds = append(ds, d)
		if d, err = b.time(b.self, "-parse", events); err != nil {
			return 0, 0, err
		}
		floors = append(floors, d)
	}
	return median(ds), median(floors), nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func size(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KB", n>>10)
}
