// Command searchbench times `yolop sessions search` against `grep -rFi`
// over the same generated session files, side by side in one run, and
// prints a Markdown table: every hit as JSON (--limit 0), and the default
// a user gets (text, newest 200).
//
//	go build -o /tmp/yolop ./cmd/yolop
//	go run ./test/bench/cmd/searchbench -yolop /tmp/yolop [-sessions 500] [-events 200000] [-runs 7]
//
// The generated data dir has the on-disk format yolop writes (events.jsonl,
// timeline.jsonl, workspace.json per session): prompts, assistant replies
// with tool calls whose arguments are JSON inside JSON, tool results, and
// a rewind in every fifth session so abandoned branches exist.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/timeline"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "searchbench:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("searchbench", flag.ContinueOnError)
	bin := fs.String("yolop", "", "path of a built yolop binary (required)")
	nSessions := fs.Int("sessions", 500, "sessions to generate")
	nEvents := fs.Int("events", 200000, "events to generate in all")
	runs := fs.Int("runs", 7, "timed runs per measurement (the median is reported)")
	work := fs.String("dir", "", "data directory to generate into (default: a temporary one, removed afterwards)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *bin == "" {
		return fmt.Errorf("-yolop is required: go build -o /tmp/yolop ./cmd/yolop")
	}
	dataDir := *work
	if dataDir == "" {
		d, err := os.MkdirTemp("", "searchbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dataDir = d
	}
	size, err := generate(dataDir, *nSessions, *nEvents)
	if err != nil {
		return err
	}
	sessions := session.SessionsDir(dataDir)
	fmt.Fprintf(stdout, "%d sessions, %d events, %.1f MB of events.jsonl; median of %d runs\n\n", *nSessions, *nEvents, float64(size)/1e6, *runs)
	fmt.Fprintln(stdout, "| query | hits (yolop) | lines (grep) | grep wall | yolop wall | wall ratio | grep CPU | yolop CPU | CPU ratio | default CPU | default ratio |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, q := range []string{"quixotic", "parser", "Makefile", "checkpoint rewind", `"quoted"`, "the"} {
		grepArgs := []string{"-rFi", q, sessions}
		if strings.ContainsAny(q, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
			grepArgs[0] = "-rF" // smart case: a capital makes yolop case-sensitive too
		}
		grepT, grepCPU, grepOut, err := timeRun(*runs, "grep", grepArgs...)
		if err != nil {
			return err
		}
		yT, yCPU, yOut, err := timeRun(*runs, *bin, "--data-dir", dataDir, "sessions", "search", "--all", "--limit", "0", "--output-format", "json", q)
		if err != nil {
			return err
		}
		// What a user types: text output, the default limit (200).
		_, dCPU, _, err := timeRun(*runs, *bin, "--data-dir", dataDir, "sessions", "search", "--all", q)
		if err != nil {
			return err
		}
		var res struct {
			Hits []json.RawMessage `json:"hits"`
		}
		if err := json.Unmarshal(yOut, &res); err != nil {
			return fmt.Errorf("yolop output: %w", err)
		}
		fmt.Fprintf(stdout, "| `%s` (grep `%s`) | %d | %d | %s | %s | %.2fx | %s | %s | %.2fx | %s | %.2fx |\n", q, grepArgs[0], len(res.Hits), bytes.Count(grepOut, []byte("\n")), ms(grepT), ms(yT), float64(yT)/float64(grepT), ms(grepCPU), ms(yCPU), float64(yCPU)/float64(grepCPU), ms(dCPU), float64(dCPU)/float64(grepCPU))
	}
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// timeRun runs a command runs times (after one warm-up) and returns the
// median wall time, the median CPU time (user+system, less sensitive to
// the load of a shared machine) and the output of the last run. grep exits 1 when
// nothing matches; that is not an error here.
func timeRun(runs int, name string, args ...string) (time.Duration, time.Duration, []byte, error) {
	var times, cpus []time.Duration
	var out []byte
	for i := 0; i <= runs; i++ {
		cmd := exec.Command(name, args...)
		var b bytes.Buffer
		cmd.Stdout = &b
		start := time.Now()
		err := cmd.Run()
		d := time.Since(start)
		if ee, ok := err.(*exec.ExitError); err != nil && !(ok && name == "grep" && ee.ExitCode() == 1) {
			return 0, 0, nil, fmt.Errorf("%s %v: %w", name, args, err)
		}
		out = b.Bytes()
		if i > 0 {
			times = append(times, d)
			cpus = append(cpus, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
		}
	}
	slices.Sort(times)
	slices.Sort(cpus)
	return times[len(times)/2], cpus[len(cpus)/2], out, nil
}

// common are words a coding session uses; they are spread over the ranks
// of a Zipf vocabulary of synthetic words, so word frequencies look like
// text (a few words are everywhere, most are rare) instead of every line
// holding every word.
var common = strings.Fields(`the a parser lexer token stream buffer index file path test build run
fix bug error value type struct func method return config option flag command session branch
checkpoint rewind commit tree blob read write edit delete list grep bash shell output input
Makefile README main go module package import vendor cache retry timeout context cancel`)

const vocabulary = 30000

var words = func() []string {
	w := make([]string, vocabulary)
	for i := range w {
		w[i] = "w" + strconv.FormatInt(int64(i)*7919%1000003, 36)
	}
	// "the" and "a" are the most frequent; the rest are common terms,
	// about rank 50 to 2,500.
	w[0], w[1] = "the", "a"
	for i, c := range common[2:] {
		w[50+i*40] = c
	}
	return w
}()

func sentence(r *rand.Rand, z *rand.Zipf, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[z.Uint64()])
	}
	return b.String()
}

type event struct {
	V    int       `json:"v"`
	Seq  int64     `json:"seq"`
	Type string    `json:"type"`
	Time time.Time `json:"ts"`
	Turn string    `json:"turn,omitempty"`
	Data any       `json:"data,omitempty"`
}

// generate writes sessions in yolop's on-disk format, with json.Marshal
// like the session package (so the same escaping). It returns the total
// size of the event logs.
func generate(dataDir string, nSessions, nEvents int) (int64, error) {
	r := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(r, 1.07, 1, vocabulary-1)
	perSession := nEvents / nSessions
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var total int64
	for i := 0; i < nSessions; i++ {
		id := fmt.Sprintf("s_bench%05d", i)
		dir := filepath.Join(session.SessionsDir(dataDir), id)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return 0, err
		}
		ws := session.Workspace{Version: 1, SessionID: id, Kind: session.KindConversation, ActiveRoot: "/src/project", Title: sentence(r, z, 5), Created: base, Updated: base}
		b, _ := json.Marshal(ws)
		if err := os.WriteFile(filepath.Join(dir, session.WorkspaceFile), b, 0o600); err != nil {
			return 0, err
		}
		var evs, tl bytes.Buffer
		var seq int64
		now := base.Add(time.Duration(i) * time.Hour)
		emit := func(typ, turn string, data any) {
			seq++
			now = now.Add(time.Second)
			line, _ := json.Marshal(event{V: 1, Seq: seq, Type: typ, Time: now, Turn: turn, Data: data})
			evs.Write(line)
			evs.WriteByte('\n')
		}
		rec := func(rc timeline.Record) {
			rc.V, rc.Time = 1, now
			line, _ := json.Marshal(rc)
			tl.Write(line)
			tl.WriteByte('\n')
		}
		head := ""
		for turn := 1; seq < int64(perSession); turn++ {
			cp := fmt.Sprintf("cp%d", turn)
			prompt := sentence(r, z, 12)
			if r.IntN(400) == 0 {
				prompt += " quixotic"
			}
			rec(timeline.Record{Type: timeline.TypeCheckpointCreated, Checkpoint: cp, Parent: head, SeqBefore: seq, Prompt: prompt})
			emit("user.message", cp, map[string]any{"text": prompt})
			for step := 0; step < 3 && seq < int64(perSession); step++ {
				path := fmt.Sprintf("pkg/%s/%s.go", words[z.Uint64()], words[z.Uint64()])
				content := sentence(r, z, 40) + "\n<tag> \"quoted\" & done\n"
				args, _ := json.Marshal(map[string]string{"path": path, "content": content})
				emit("assistant.message", cp, map[string]any{"provider": "sim", "model": "sim-1", "message": map[string]any{"role": "assistant", "text": sentence(r, z, 20), "tool_calls": []any{map[string]any{"id": fmt.Sprintf("call_%d", seq), "name": "write_file", "arguments": string(args)}}}})
				emit("tool.result", cp, map[string]any{"call_id": fmt.Sprintf("call_%d", seq-1), "name": "write_file", "content": "wrote " + path + "\n" + sentence(r, z, 30)})
			}
			emit("assistant.message", cp, map[string]any{"provider": "sim", "model": "sim-1", "message": map[string]any{"role": "assistant", "text": "done: " + sentence(r, z, 15)}})
			rec(timeline.Record{Type: timeline.TypeTurnCompleted, Checkpoint: cp, FinalSeq: seq, Status: "completed", Paths: []string{"pkg/gen/" + words[z.Uint64()] + ".go"}})
			if i%5 == 0 && turn == 3 {
				rec(timeline.Record{Type: timeline.TypeHeadMoved, Restore: "r1", Target: "cp2", Mode: "conversation", OldHead: cp, NewHead: "cp1", AbandonedHead: cp})
				head = "cp1"
				continue
			}
			head = cp
		}
		if err := os.WriteFile(filepath.Join(dir, session.EventsFile), evs.Bytes(), 0o600); err != nil {
			return 0, err
		}
		if err := os.WriteFile(filepath.Join(dir, session.TimelineFile), tl.Bytes(), 0o600); err != nil {
			return 0, err
		}
		total += int64(evs.Len())
	}
	return total, nil
}
