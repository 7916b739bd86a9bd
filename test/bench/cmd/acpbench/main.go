// Command acpbench times what checkpointing adds to a turn through the real
// hosts, beside `git status --porcelain --untracked-files=all` in the same
// run, on a generated tree (test/bench/synth): ACP (`yolop --acp` over
// stdio, its file watcher on) in a worktree session and in place, and
// print mode in place.
//
// Each turn is one prompt whose bash command appends a line to one file
// (the sim provider: "$ printf … >> FILE"), so a turn holds both captures
// (before it, nothing changed since the last turn's end; after it, one
// file changed). What checkpointing adds is the turn's time less the time
// of the same turn in a conversation-only session (`--workspace none`, no
// capture) on a copy of the same tree, the two timed one after the other in
// every round (the median of the per-round differences is reported). A
// round times, in turn: git status, the ACP worktree turn, the ACP
// in-place turn, the ACP conversation-only turn, git status again, the
// print-mode in-place turn and the print-mode conversation-only turn. Each
// ACP turn is followed by an idle pause (-idle, a user reading the reply),
// in which the private index catches up, as it does between real turns.
// The safety-net walk is timed on its own (Engine.Resync, what the hosts
// run in the background, on the in-place checkout with a state dir of its
// own), alternately with git status.
//
// -print-only times git status and the print-mode turns alone (no ACP
// agent, no worktree checkout, no safety-net walk). -baseline BIN also
// runs, in every print-mode round right after this binary's, a turn of
// the same in-place session with another build (the same session: its
// state is what both read), so two builds are compared at one load.
//
//	go build -o /tmp/yolop ./cmd/yolop
//	go run ./test/bench/cmd/acpbench -yolop /tmp/yolop [-runs 15] [-print-runs 7] [-print-only] [-baseline BIN] [-dir DIR] [N]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/snapshot"
	"github.com/yolop-dev/yolop/test/bench/synth"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "acpbench:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("acpbench", flag.ContinueOnError)
	bin := fs.String("yolop", "", "the yolop binary (an absolute path; go build -o /tmp/yolop ./cmd/yolop)")
	runs := fs.Int("runs", 15, "ACP rounds (medians reported)")
	printRuns := fs.Int("print-runs", 7, "rounds that also time print-mode turns (the first ones)")
	idle := fs.Duration("idle", 500*time.Millisecond, "pause after each ACP turn")
	printOnly := fs.Bool("print-only", false, "time git status and the print-mode turns only")
	firstOnly := fs.Bool("first-only", false, "time the first turns of new ACP sessions (in place, and conversation only) beside git status, -runs rounds")
	baseline := fs.String("baseline", "", "another yolop binary whose print-mode turns are timed alternately with this one's")
	work := fs.String("dir", "", "directory for the generated trees and data (default: a new temporary directory, removed afterwards)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !filepath.IsAbs(*bin) {
		return fmt.Errorf("-yolop %q: want the absolute path of a built yolop", *bin)
	}
	if *baseline != "" && !filepath.IsAbs(*baseline) {
		return fmt.Errorf("-baseline %q: want the absolute path of a built yolop", *baseline)
	}
	if *printOnly {
		*runs = *printRuns
	}
	n := 100000
	if fs.NArg() > 0 {
		v, err := strconv.Atoi(fs.Arg(0))
		if err != nil || v < 100 {
			return fmt.Errorf("size %q: want a number of files >= 100", fs.Arg(0))
		}
		n = v
	}
	dir := *work
	if dir == "" {
		d, err := os.MkdirTemp("", "acpbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ctx := context.Background()
	repo, plain := filepath.Join(dir, "repo"), filepath.Join(dir, "plain")
	fmt.Fprintf(os.Stderr, "generating %d files (load %s)\n", n, loadavg())
	if _, err := synth.Generate(ctx, repo, n, 1); err != nil {
		return err
	}
	// The conversation-only sessions work in a copy with the same state.
	if out, err := exec.Command("cp", "-a", repo, plain).CombinedOutput(); err != nil {
		return fmt.Errorf("copy the tree: %v\n%s", err, out)
	}
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	gitconfig := filepath.Join(dir, "gitconfig")
	if err := os.WriteFile(gitconfig, []byte("[user]\n\tname = bench\n\temail = bench@example.invalid\n"), 0o600); err != nil {
		return err
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + os.TempDir(), "LANG=C.UTF-8",
		"GIT_CONFIG_GLOBAL=" + gitconfig, "GIT_CONFIG_NOSYSTEM=1", "YOLOP_WORKTREE_SPARES=0",
		"YOLOP_DATA_DIR=" + filepath.Join(dir, "data")}

	loadStart := loadavg()
	if *firstOnly {
		return firstTurns(ctx, *bin, repo, plain, env, *runs, *idle, n, loadStart)
	}
	var agents []*agent
	if !*printOnly {
		fmt.Fprintf(os.Stderr, "starting the ACP agents (load %s)\n", loadStart)
		for _, a := range []struct {
			dir  string
			args []string
		}{{repo, nil}, {repo, []string{"--in-place"}}, {plain, []string{"--workspace", "none"}}} {
			ag, err := startAgent(*bin, a.dir, env, a.args...)
			if err != nil {
				return err
			}
			defer ag.close()
			if err := ag.newSession(a.dir); err != nil {
				return err
			}
			agents = append(agents, ag)
		}
	}

	// The first turns make the sessions (a worktree session checks out
	// its worktree), seed and settle the private indexes and arm the
	// watchers; they are not timed.
	file := synth.Path(n / 2)
	i := 0
	prompt := func() string {
		i++
		return fmt.Sprintf("$ printf 'turn %d\\n' >> %s", i, file)
	}
	for range 3 {
		if *printOnly {
			break
		}
		for _, a := range agents {
			if _, err := a.turn(prompt()); err != nil {
				return err
			}
		}
		time.Sleep(1200 * time.Millisecond)
	}
	printIn, err := printSession(*bin, plain, env, "--in-place")
	if err != nil {
		return err
	}
	printNone, err := printSession(*bin, plain, env, "--workspace", "none")
	if err != nil {
		return err
	}
	var printBase *printer
	if *baseline != "" {
		b := *printIn
		b.bin = *baseline
		printBase = &b
	}
	for range 2 {
		if _, err := printIn.turn(prompt()); err != nil {
			return err
		}
		if printBase != nil {
			if _, err := printBase.turn(prompt()); err != nil {
				return err
			}
		}
	}
	status := func(d string) (time.Duration, error) {
		start := time.Now()
		_, err := git.New(d).Run(ctx, "status", "--porcelain", "--untracked-files=all")
		return time.Since(start), err
	}
	var st, wtT, ipT, noT, wtD, ipD, prT, pnT, prD, pbT, pbD []time.Duration
	for r := range *runs {
		var turn [3]time.Duration
		if !*printOnly {
			d, err := status(repo)
			if err != nil {
				return err
			}
			st = append(st, d)
			for k, a := range agents {
				if turn[k], err = a.turn(prompt()); err != nil {
					return err
				}
				time.Sleep(*idle)
			}
			wtT, ipT, noT = append(wtT, turn[0]), append(ipT, turn[1]), append(noT, turn[2])
			wtD, ipD = append(wtD, turn[0]-turn[2]), append(ipD, turn[1]-turn[2])
		}
		if r >= *printRuns {
			continue
		}
		d, err := status(repo)
		if err != nil {
			return err
		}
		st = append(st, d)
		pi, err := printIn.turn(prompt())
		if err != nil {
			return err
		}
		pn, err := printNone.turn(prompt())
		if err != nil {
			return err
		}
		prT, pnT, prD = append(prT, pi), append(pnT, pn), append(prD, pi-pn)
		var pb time.Duration
		if printBase != nil {
			if pb, err = printBase.turn(prompt()); err != nil {
				return err
			}
			pbT, pbD = append(pbT, pb), append(pbD, pb-pn)
		}
		fmt.Fprintf(os.Stderr, "round %d (load %s): status %v, acp worktree %v, in place %v, none %v; print in place %v, none %v, baseline %v\n", r, loadavg(), d, turn[0], turn[1], turn[2], pi, pn, pb)
	}
	if *printOnly {
		loadEnd := loadavg()
		s := median(st)
		fmt.Printf("\n%d files; load average %s at the start, %s at the end (2 cores, shared)\n\n", n, loadStart, loadEnd)
		fmt.Println("| measurement | median | ÷ status alongside |")
		fmt.Println("|---|---|---|")
		row := func(name string, d time.Duration) {
			fmt.Printf("| %s | %s | %.2f× |\n", name, fmtDur(d), float64(d)/float64(s))
		}
		row("`git status --porcelain --untracked-files=all` (floor)", s)
		row(fmt.Sprintf("print-mode turn, in place (%d rounds)", len(prT)), median(prT))
		row("print-mode turn, conversation only", median(pnT))
		row("**print-mode per-turn checkpoint overhead (both captures)**", median(prD))
		if printBase != nil {
			row("print-mode turn, in place, baseline build", median(pbT))
			row("print-mode per-turn checkpoint overhead, baseline build", median(pbD))
		}
		return nil
	}
	// The safety-net walk, as the hosts run it in the background.
	eng, err := snapshot.Open(ctx, snapshot.Options{Worktree: repo, SessionID: "s_bench", StateDir: filepath.Join(dir, "resync-state")})
	if err != nil {
		return err
	}
	if _, err := eng.Capture(ctx, ""); err != nil {
		return err
	}
	time.Sleep(1200 * time.Millisecond)
	var rs, rst []time.Duration
	for range 5 {
		d, err := status(repo)
		if err != nil {
			return err
		}
		rst = append(rst, d)
		start := time.Now()
		if err := eng.Resync(ctx); err != nil {
			return err
		}
		rs = append(rs, time.Since(start))
	}
	eng.Wait()
	loadEnd := loadavg()

	s := median(st)
	fmt.Printf("\n%d files; load average %s at the start, %s at the end (2 cores, shared)\n\n", n, loadStart, loadEnd)
	fmt.Println("| measurement | median | ÷ status alongside |")
	fmt.Println("|---|---|---|")
	row := func(name string, d, floor time.Duration) {
		fmt.Printf("| %s | %s | %.2f× |\n", name, fmtDur(d), float64(d)/float64(floor))
	}
	row("`git status --porcelain --untracked-files=all` (floor)", s, s)
	row(fmt.Sprintf("ACP turn, worktree session (%d rounds)", len(wtT)), median(wtT), s)
	row("ACP turn, in place", median(ipT), s)
	row("ACP turn, conversation only (no capture)", median(noT), s)
	row("**ACP per-turn checkpoint overhead (both captures), worktree**", median(wtD), s)
	row("**ACP per-turn checkpoint overhead (both captures), in place**", median(ipD), s)
	row(fmt.Sprintf("print-mode turn, in place (%d rounds)", len(prT)), median(prT), s)
	row("print-mode turn, conversation only", median(pnT), s)
	row("**print-mode per-turn checkpoint overhead (both captures)**", median(prD), s)
	if printBase != nil {
		row("print-mode turn, in place, baseline build", median(pbT), s)
		row("print-mode per-turn checkpoint overhead, baseline build", median(pbD), s)
	}
	row("safety-net walk (`Engine.Resync`, off the turn's path), 5 runs", median(rs), median(rst))
	return nil
}

// firstTurns times, in each of runs rounds, git status on repo and the
// first turns of two new ACP sessions, an in-place one on repo and a
// conversation-only one on plain, each in a new agent process: from
// session/new to the first prompt's response (what a user waits for once
// the editor has started the agent), then two more turns of each session.
func firstTurns(ctx context.Context, bin, repo, plain string, env []string, runs int, idle time.Duration, n int, loadStart string) error {
	var st, ipF, noF, ipL, noL, firstD, startO []time.Duration
	i := 0
	prompt := func() string {
		i++
		return fmt.Sprintf("$ printf 'turn %d\\n' >> %s", i, synth.Path(n/2))
	}
	session := func(dir string, args ...string) (first time.Duration, later []time.Duration, err error) {
		a, err := startAgent(bin, dir, env, args...)
		if err != nil {
			return 0, nil, err
		}
		defer a.close()
		start := time.Now()
		if err := a.newSession(dir); err != nil {
			return 0, nil, err
		}
		if _, err := a.turn(prompt()); err != nil {
			return 0, nil, err
		}
		first = time.Since(start)
		for range 2 {
			time.Sleep(idle)
			d, err := a.turn(prompt())
			if err != nil {
				return 0, nil, err
			}
			later = append(later, d)
		}
		return first, later, nil
	}
	for r := range runs {
		start := time.Now()
		if _, err := git.New(repo).Run(ctx, "status", "--porcelain", "--untracked-files=all"); err != nil {
			return err
		}
		s := time.Since(start)
		fi, li, err := session(repo, "--in-place")
		if err != nil {
			return err
		}
		time.Sleep(idle)
		fn, ln, err := session(plain, "--workspace", "none")
		if err != nil {
			return err
		}
		time.Sleep(idle)
		st, ipF, noF = append(st, s), append(ipF, fi), append(noF, fn)
		ipL, noL = append(ipL, li...), append(noL, ln...)
		firstD, startO = append(firstD, fi-fn), append(startO, fi-median(li))
		fmt.Fprintf(os.Stderr, "round %d (load %s): status %v; first turn in place %v (later %v), conversation only %v (later %v)\n", r, loadavg(), s, fi, li, fn, ln)
	}
	s := median(st)
	fmt.Printf("\n%d files; load average %s at the start, %s at the end (2 cores, shared)\n\n", n, loadStart, loadavg())
	fmt.Println("| measurement | median | ÷ status alongside |")
	fmt.Println("|---|---|---|")
	row := func(name string, d time.Duration) {
		fmt.Printf("| %s | %s | %.2f× |\n", name, fmtDur(d), float64(d)/float64(s))
	}
	row("`git status --porcelain --untracked-files=all` (floor)", s)
	row(fmt.Sprintf("**ACP first turn, in place** (session/new and the first prompt; %d rounds)", len(ipF)), median(ipF))
	row("ACP first turn, conversation only", median(noF))
	row("ACP first turn's checkpointing (in place less conversation only, per round)", median(firstD))
	row("ACP turns 2-3, in place", median(ipL))
	row("ACP turns 2-3, conversation only", median(noL))
	row("**ACP start overhead in place** (first turn less its session's turns 2-3)", median(startO))
	return nil
}

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

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func fmtDur(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000)
}

// agent is a `yolop --acp` process with one session.
type agent struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	msgs chan map[string]json.RawMessage
	id   int
	sid  string
	errb strings.Builder
}

func startAgent(bin, dir string, env []string, args ...string) (*agent, error) {
	cmd := exec.Command(bin, append([]string{"--acp", "--provider", "sim"}, args...)...)
	cmd.Dir, cmd.Env = dir, env
	a := &agent{cmd: cmd, msgs: make(chan map[string]json.RawMessage, 1024)}
	var err error
	if a.in, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = &a.errb
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		defer close(a.msgs)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				a.msgs <- m
			}
		}
	}()
	if _, err := a.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}); err != nil {
		return nil, err
	}
	return a, nil
}

// newSession makes a session in dir, the one later turns prompt.
func (a *agent) newSession(dir string) error {
	res, err := a.call("session/new", map[string]any{"cwd": dir, "mcpServers": []any{}})
	if err != nil {
		return err
	}
	var created struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(res, &created); err != nil || created.SessionID == "" {
		return fmt.Errorf("session/new: %s", res)
	}
	a.sid = created.SessionID
	return nil
}

func (a *agent) call(method string, params any) (json.RawMessage, error) {
	a.id++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": a.id, "method": method, "params": params})
	if _, err := a.in.Write(append(b, '\n')); err != nil {
		return nil, err
	}
	want := strconv.Itoa(a.id)
	timeout := time.After(10 * time.Minute)
	for {
		select {
		case m, ok := <-a.msgs:
			if !ok {
				return nil, fmt.Errorf("%s: the agent closed the connection: %s", method, a.errb.String())
			}
			if string(m["id"]) != want || m["method"] != nil {
				continue
			}
			if e := m["error"]; e != nil {
				return nil, fmt.Errorf("%s: %s", method, e)
			}
			return m["result"], nil
		case <-timeout:
			return nil, fmt.Errorf("%s: no response", method)
		}
	}
}

// turn times one prompt, from the request to its response.
func (a *agent) turn(text string) (time.Duration, error) {
	start := time.Now()
	res, err := a.call("session/prompt", map[string]any{"sessionId": a.sid, "prompt": []any{map[string]any{"type": "text", "text": text}}})
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	var r struct {
		StopReason string `json:"stopReason"`
	}
	if json.Unmarshal(res, &r) != nil || r.StopReason != "end_turn" {
		return 0, fmt.Errorf("prompt %q: %s", text, res)
	}
	return d, nil
}

func (a *agent) close() {
	a.in.Close()
	done := make(chan error, 1)
	go func() { done <- a.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = a.cmd.Process.Kill()
		<-done
	}
}

// printer runs print-mode turns of one session.
type printer struct {
	bin, dir, sid string
	env           []string
}

func printSession(bin, dir string, env []string, args ...string) (*printer, error) {
	p := &printer{bin: bin, dir: dir, env: env}
	out, err := p.run(append(args, "-p", "hello")...)
	if err != nil {
		return nil, err
	}
	var m struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(out, &m); err != nil || m.SessionID == "" {
		return nil, fmt.Errorf("print mode: %s", out)
	}
	p.sid = m.SessionID
	return p, nil
}

func (p *printer) run(args ...string) ([]byte, error) {
	cmd := exec.Command(p.bin, append([]string{"--provider", "sim", "--output-format", "json"}, args...)...)
	cmd.Dir, cmd.Env = p.dir, p.env
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return nil, fmt.Errorf("yolop %q: %v\n%s%s", args, err, out, ee.Stderr)
	}
	return out, err
}

func (p *printer) turn(text string) (time.Duration, error) {
	start := time.Now()
	_, err := p.run("--session", p.sid, "-p", text)
	return time.Since(start), err
}
