package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// pipeGrace is how long output is still read after a command's process group
// is gone; only a process that left the group (setsid) can hold the pipe
// open longer, and its output is then abandoned.
const pipeGrace = 2 * time.Second

type bashTool struct{ s *Set }

func (*bashTool) Kind() string { return KindExecute }

func (t *bashTool) Spec() Spec {
	return Spec{
		Name: "bash",
		Description: "Run a shell command with bash in the project root, in the environment of the user's login shell; stdin is empty. " +
			fmt.Sprintf("A foreground command is killed, with every process it started, after timeout_ms (default %s, at most %s); ", t.s.env.BashTimeout, MaxBashTimeout) +
			"processes it leaves running in the background are killed when it exits. " +
			fmt.Sprintf("Each of stdout and stderr shows at most %d KiB (its start and end); the full output is saved to a file whose path is given. ", t.s.env.OutputCap>>10) +
			"For servers, watchers and other long-running processes set background to true: the command starts and the call returns a task id at once; " +
			"use the tasks tool to see its output or stop it. While a command or task runs, the user cannot restore a checkpoint.",
		Parameters: mustSchema(`{"type":"object","properties":{` +
			`"command":{"type":"string","description":"The bash command line to run."},` +
			`"timeout_ms":{"type":"integer","minimum":1,"description":"Wall-clock limit in milliseconds for a foreground command."},` +
			`"background":{"type":"boolean","description":"Start as a background task and return immediately. Default false."}` +
			`},"required":["command"],"additionalProperties":false}`),
	}
}

func (t *bashTool) Run(ctx context.Context, raw json.RawMessage) (Result, error) {
	var a struct {
		Command    string `json:"command"`
		TimeoutMs  *int64 `json:"timeout_ms"`
		Background bool   `json:"background"`
	}
	if r := decodeArgs("bash", raw, &a); r != nil {
		return *r, nil
	}
	if strings.TrimSpace(a.Command) == "" {
		return errResult("bash needs a non-empty command"), nil
	}
	timeout := t.s.env.BashTimeout
	if a.TimeoutMs != nil {
		if *a.TimeoutMs <= 0 {
			return errResult("timeout_ms must be positive, got %d", *a.TimeoutMs), nil
		}
		if a.Background {
			return errResult("timeout_ms does not apply to background tasks; they run until they exit or are stopped with the tasks tool"), nil
		}
		if time.Duration(*a.TimeoutMs) > MaxBashTimeout/time.Millisecond {
			return errResult("timeout_ms %d is above the maximum of %d (%s); run longer jobs with background: true", *a.TimeoutMs, MaxBashTimeout.Milliseconds(), MaxBashTimeout), nil
		}
		timeout = time.Duration(*a.TimeoutMs) * time.Millisecond
	}
	disp := &Display{Kind: KindExecute, Title: shorten(a.Command, 120)}
	if r := t.s.tasks.opts.Sandbox.Refused; r != "" {
		return Result{Content: "the command did not run: " + r + ". Tell the user; only they can change this setting.", IsError: true, Display: disp, Refused: "the command did not run: " + r}, nil
	}
	if a.Background {
		return t.background(a.Command, disp)
	}
	return t.foreground(ctx, a.Command, timeout, disp)
}

func (t *bashTool) background(command string, disp *Display) (Result, error) {
	log, err := spillFile(t.s.env.SpillDir, "task-*.log")
	if err != nil {
		return Result{}, err
	}
	p, err := t.s.tasks.start(WriterBackground, command, t.s.root, log, log, log.Name())
	log.Close() // the child has its own descriptor
	if err != nil {
		os.Remove(log.Name())
		return Result{}, err
	}
	t.s.tasks.mu.Lock()
	w := p.tk.w
	t.s.tasks.mu.Unlock()
	return Result{
		Content: fmt.Sprintf("started background task %s (pid %d); its output goes to %s.\n"+
			"See its state and latest output with tasks {\"action\":\"list\"}; stop it with tasks {\"action\":\"stop\",\"id\":%q}. "+
			"The user cannot restore checkpoints while it runs.\n", w.ID, w.PID, log.Name(), w.ID) + t.s.tasks.loginNote(),
		Display: disp,
	}, nil
}

func (t *bashTool) foreground(ctx context.Context, command string, timeout time.Duration, disp *Display) (Result, error) {
	half := max(t.s.env.OutputCap/2, 1)
	stdout := &capture{headCap: half, tailCap: t.s.env.OutputCap - half, dir: t.s.env.SpillDir, pattern: "bash-*.stdout"}
	stderr := &capture{headCap: half, tailCap: t.s.env.OutputCap - half, dir: t.s.env.SpillDir, pattern: "bash-*.stderr"}
	outR, outW, err := os.Pipe()
	if err != nil {
		return Result{}, fmt.Errorf("bash: pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return Result{}, fmt.Errorf("bash: pipe: %w", err)
	}
	defer outR.Close()
	defer errR.Close()
	p, err := t.s.tasks.start(WriterBash, command, t.s.root, outW, errW, "")
	// The child holds its own copies; closing ours lets the readers see EOF
	// once every process holding them is gone.
	outW.Close()
	errW.Close()
	if err != nil {
		return Result{}, err
	}
	var copiers sync.WaitGroup
	for _, c := range []struct {
		r *os.File
		w *capture
	}{{outR, stdout}, {errR, stderr}} {
		copiers.Add(1)
		go func() {
			defer copiers.Done()
			_, _ = io.Copy(c.w, c.r)
		}()
	}

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var timedOut, cancelled bool
	select {
	case <-p.tk.done:
	case <-timer.C:
		timedOut = true
	case <-ctx.Done():
		cancelled = true
	}
	if timedOut || cancelled {
		t.s.tasks.mu.Lock()
		pid, sp := p.tk.w.PID, p.tk.proc
		t.s.tasks.mu.Unlock()
		sp.Kill()
		select {
		case <-p.tk.done:
		case <-time.After(stopWait):
			return Result{}, fmt.Errorf("bash: command %d and its processes did not exit within %s of SIGKILL", pid, stopWait)
		}
	}
	// The group is gone (reap kills leftovers); wait briefly for the pipes to
	// drain, then stop reading from anything that escaped the group.
	drained := make(chan struct{})
	go func() { copiers.Wait(); close(drained) }()
	abandoned := false
	select {
	case <-drained:
	case <-time.After(pipeGrace):
		abandoned = true
		_ = outR.SetReadDeadline(time.Now())
		_ = errR.SetReadDeadline(time.Now())
		<-drained
	}
	stdout.close()
	stderr.close()

	tk := p.tk
	var b strings.Builder
	isErr := false
	switch {
	case cancelled:
		b.WriteString("command cancelled; it was killed with its whole process group\n")
	case timedOut:
		isErr = true
		fmt.Fprintf(&b, "command timed out after %s and was killed with its whole process group. "+
			"Use a larger timeout_ms (at most %s) or background: true for long-running processes.\n", timeout, MaxBashTimeout)
	case tk.exitNote == "stopped":
		isErr = true
		b.WriteString("command was stopped by request; it was killed with its whole process group\n")
	case tk.exitNote != "":
		isErr = true
		fmt.Fprintf(&b, "command ended: %s\n", tk.exitNote)
	default:
		fmt.Fprintf(&b, "exit code: %d\n", tk.exitCode)
	}
	if tk.leftovers && !timedOut && !cancelled && tk.exitNote == "" {
		b.WriteString("note: processes the command left running were killed when it exited; start long-running processes with background: true\n")
	}
	if abandoned {
		b.WriteString("note: a process that left the command's process group kept its output open; its further output was not read\n")
	}
	stdout.render(&b, "stdout")
	stderr.render(&b, "stderr")
	if stdout.total == 0 && stderr.total == 0 {
		b.WriteString("(no output)\n")
	}
	notes, refused := refusal(b.String(), t.s.tasks.opts.Sandbox, t.s.root)
	b.WriteString(notes)
	b.WriteString(t.s.tasks.loginNote())
	if cancelled {
		return Result{Content: b.String(), IsError: true, Display: disp, Refused: refused}, ctx.Err()
	}
	return Result{Content: b.String(), IsError: isErr, Display: disp, Refused: refused}, nil
}

// capture keeps the first headCap and last tailCap bytes of a stream in
// memory and, once the stream outgrows them, the complete stream in a spill
// file. Memory stays at headCap+tailCap however much is written.
type capture struct {
	headCap, tailCap int
	dir, pattern     string

	head, tail []byte
	total      int64
	spill      *os.File
	spillErr   error
}

func (c *capture) Write(p []byte) (int, error) {
	n := len(p)
	if c.spill == nil && c.spillErr == nil && c.total+int64(n) > int64(c.headCap+c.tailCap) {
		// First overflow: start the spill file with everything seen so far.
		c.spill, c.spillErr = spillFile(c.dir, c.pattern)
		if c.spillErr == nil {
			_, c.spillErr = c.spill.Write(c.head)
			if c.spillErr == nil {
				_, c.spillErr = c.spill.Write(c.tail)
			}
		}
	}
	if c.spill != nil && c.spillErr == nil {
		_, c.spillErr = c.spill.Write(p)
	}
	c.total += int64(n)
	if room := c.headCap - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 || c.tailCap == 0 {
		return n, nil
	}
	if c.tail == nil {
		c.tail = make([]byte, 0, c.tailCap)
	}
	if len(p) >= c.tailCap {
		c.tail = append(c.tail[:0], p[len(p)-c.tailCap:]...)
		return n, nil
	}
	if over := len(c.tail) + len(p) - c.tailCap; over > 0 {
		copy(c.tail, c.tail[over:])
		c.tail = c.tail[:len(c.tail)-over]
	}
	c.tail = append(c.tail, p...)
	return n, nil
}

func (c *capture) close() {
	if c.spill != nil {
		if err := c.spill.Close(); err != nil && c.spillErr == nil {
			c.spillErr = err
		}
	}
}

// render writes the stream's section of a bash result.
func (c *capture) render(b *strings.Builder, name string) {
	if c.total == 0 {
		return
	}
	fmt.Fprintf(b, "%s:\n", name)
	kept := int64(len(c.head) + len(c.tail))
	if kept == c.total {
		b.WriteString(string(c.head))
		b.WriteString(string(c.tail))
	} else {
		head := trimPartialRune(c.head, false)
		tail := trimPartialRune(c.tail, true)
		b.WriteString(head)
		if !strings.HasSuffix(head, "\n") {
			b.WriteByte('\n')
		}
		fmt.Fprintf(b, "[... %d bytes of %s omitted (%d in total); ", c.total-kept, name, c.total)
		if c.spillErr != nil {
			fmt.Fprintf(b, "the full output could not be saved: %v", c.spillErr)
		} else {
			fmt.Fprintf(b, "full output in %s, read it with bash (e.g. grep or tail)", c.spill.Name())
		}
		b.WriteString(" ...]\n")
		b.WriteString(tail)
	}
	if !strings.HasSuffix(b.String(), "\n") {
		b.WriteByte('\n')
	}
}

// trimPartialRune drops a UTF-8 sequence cut by the head/tail boundary.
func trimPartialRune(p []byte, atStart bool) string {
	if atStart {
		i := 0
		for i < len(p) && i < utf8.UTFMax && !utf8.RuneStart(p[i]) {
			i++
		}
		return string(p[i:])
	}
	for i := 1; i <= utf8.UTFMax && i <= len(p); i++ {
		if utf8.RuneStart(p[len(p)-i]) {
			if !utf8.FullRune(p[len(p)-i:]) {
				p = p[:len(p)-i]
			}
			break
		}
	}
	return string(p)
}

func shorten(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ---- tasks

type tasksTool struct{ s *Set }

func (*tasksTool) Kind() string { return KindExecute }

func (*tasksTool) Spec() Spec {
	return Spec{
		Name: "tasks",
		Description: "Manage background tasks started with bash {\"background\": true}. " +
			"action \"list\" shows every task with its state, exit code and latest output; " +
			"action \"stop\" kills a task (its whole process group) by id.",
		Parameters: mustSchema(`{"type":"object","properties":{` +
			`"action":{"type":"string","enum":["list","stop"],"description":"list or stop."},` +
			`"id":{"type":"string","description":"Task id (e.g. \"t3\"), required for stop."}` +
			`},"required":["action"],"additionalProperties":false}`),
	}
}

func (t *tasksTool) Run(_ context.Context, raw json.RawMessage) (Result, error) {
	var a struct {
		Action string `json:"action"`
		ID     string `json:"id"`
	}
	if r := decodeArgs("tasks", raw, &a); r != nil {
		return *r, nil
	}
	disp := &Display{Kind: KindExecute, Title: "tasks " + a.Action + " " + a.ID}
	switch a.Action {
	case "list":
		return Result{Content: t.s.tasks.list(), Display: disp}, nil
	case "stop":
		if a.ID == "" {
			return errResult("tasks stop needs an id; tasks {\"action\":\"list\"} shows them"), nil
		}
		if err := t.s.tasks.Stop(a.ID); err != nil {
			return errResult("%v", strings.TrimPrefix(err.Error(), "tools: ")), nil
		}
		out, _ := t.s.tasks.Output(a.ID)
		if out == "" {
			out = "stopped " + a.ID + "\n"
		}
		return Result{Content: out, Display: disp}, nil
	}
	return errResult("unknown action %q; use \"list\" or \"stop\"", a.Action), nil
}

// ---- checkpoint

type checkpointTool struct{ s *Set }

func (*checkpointTool) Kind() string { return KindOther }

func (*checkpointTool) Spec() Spec {
	return Spec{
		Name: "checkpoint",
		Description: "Session checkpoints: the state before each user turn (conversation and files). " +
			"action \"list\" shows them, newest first; \"branches\" lists the conversation's branches (the active one and those abandoned by rewinds, ids b1, b2, …). " +
			"\"rewind\" (with target, e.g. \"cp3\"), \"undo\" (the last turn), \"redo\" and \"branch\" (with target, e.g. \"b2\": switch to that branch as it was left) " +
			"only prepare a preview for the user: nothing changes now. After this turn ends the user sees the preview and decides whether to confirm it; " +
			"tell the user that a restore is waiting for their confirmation. " +
			"mode chooses what a restore changes: \"both\" (default when files were captured), \"conversation\" or \"workspace\".",
		Parameters: mustSchema(`{"type":"object","properties":{` +
			`"action":{"type":"string","enum":["list","branches","rewind","undo","redo","branch"],"description":"What to do."},` +
			`"target":{"type":"string","description":"Checkpoint id for rewind, e.g. \"cp3\"; branch id for branch, e.g. \"b2\"."},` +
			`"mode":{"type":"string","enum":["both","conversation","workspace"],"description":"What to restore. Default both when possible."}` +
			`},"required":["action"],"additionalProperties":false}`),
	}
}

func (t *checkpointTool) Run(ctx context.Context, raw json.RawMessage) (Result, error) {
	var a struct {
		Action string `json:"action"`
		Target string `json:"target"`
		Mode   string `json:"mode"`
	}
	if r := decodeArgs("checkpoint", raw, &a); r != nil {
		return *r, nil
	}
	disp := &Display{Kind: KindOther, Title: strings.TrimSpace("checkpoint " + a.Action + " " + a.Target)}
	switch a.Action {
	case "list", "branches", "rewind", "undo", "redo", "branch":
	default:
		return errResult("unknown action %q; use list, branches, rewind, undo, redo or branch", a.Action), nil
	}
	switch a.Mode {
	case "", "both", "conversation", "workspace":
	default:
		return errResult("unknown mode %q; use both, conversation or workspace", a.Mode), nil
	}
	if a.Action == "rewind" && a.Target == "" {
		return errResult("rewind needs a target checkpoint id such as \"cp3\"; action \"list\" shows them"), nil
	}
	if a.Action == "branch" && a.Target == "" {
		return errResult("branch needs a target branch id such as \"b2\"; action \"branches\" shows them"), nil
	}
	if a.Action != "rewind" && a.Action != "branch" && a.Target != "" {
		return errResult("target only applies to rewind and branch; %s always acts on the latest turn or restore", a.Action), nil
	}
	if (a.Action == "list" || a.Action == "branches") && a.Mode != "" {
		return errResult("mode only applies to rewind, undo, redo and branch"), nil
	}
	cp := t.s.env.Checkpoints
	if cp == nil {
		return Result{Content: "checkpoints are not available in this session, so nothing can be listed or restored", IsError: true, Display: disp}, nil
	}
	var out string
	var err error
	switch a.Action {
	case "list":
		out, err = cp.ListForModel(ctx)
	case "branches":
		out, err = cp.BranchesForModel(ctx)
	default:
		out, err = cp.QueuePreview(ctx, CheckpointRequest{Action: a.Action, Target: a.Target, Mode: a.Mode})
	}
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		// The controller's refusals (unknown checkpoint, nothing to undo,
		// read-only session) are answers the model can act on.
		return Result{Content: err.Error(), IsError: true, Display: disp}, nil
	}
	return Result{Content: out, Display: disp}, nil
}
