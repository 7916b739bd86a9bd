package tools

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/yolop-dev/yolop/internal/secret"
)

// WriterSetup is the worktree's setup command ([worktree] setup) while it
// runs.
const WriterSetup = "setup"

// setupTail bounds how much of the setup's output a SetupResult keeps.
const setupTail = 8 << 10

// SetupResult is how a setup command ended.
type SetupResult struct {
	// ExitCode is the command's exit code (-1 when it did not exit by
	// itself).
	ExitCode int
	// Failure says why the command did not succeed ("" when it exited 0):
	// its exit code, the signal or stop that ended it, a sandbox refusal
	// or a start failure.
	Failure string
	// Output is the end of its combined output (redacted), at most
	// setupTail bytes; Truncated says more came before it.
	Output    string
	Truncated bool
	Elapsed   time.Duration
}

// RunSetup runs command in dir like a foreground bash command (the
// session's environment and sandbox, registered as a writer while it
// runs, its leftovers killed when it ends) and hands its combined output,
// redacted, to onOutput as it arrives, a line at a time or more. It
// returns when the command and everything it started are gone; a
// cancelled ctx kills them and returns ctx's error with the result.
func (t *Tasks) RunSetup(ctx context.Context, command, dir string, onOutput func(string)) (SetupResult, error) {
	start := time.Now()
	if r := t.opts.Sandbox.Refused; r != "" {
		return SetupResult{ExitCode: -1, Failure: "it did not run: " + r}, nil
	}
	rd, wr, err := os.Pipe()
	if err != nil {
		return SetupResult{ExitCode: -1, Failure: fmt.Sprintf("it could not be started: %v", err)}, nil
	}
	defer rd.Close()
	p, err := t.start(WriterSetup, command, dir, wr, wr, "")
	wr.Close()
	if err != nil {
		return SetupResult{ExitCode: -1, Failure: fmt.Sprintf("it could not be started: %v", err)}, nil
	}
	out := &setupOutput{emit: onOutput}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(out, rd)
	}()
	var cerr error
	select {
	case <-p.tk.done:
	case <-ctx.Done():
		cerr = ctx.Err()
		t.mu.Lock()
		sp := p.tk.proc
		t.mu.Unlock()
		sp.Kill()
		select {
		case <-p.tk.done:
		case <-time.After(stopWait):
			return SetupResult{ExitCode: -1, Failure: fmt.Sprintf("it did not exit within %s of SIGKILL", stopWait)}, cerr
		}
	}
	select {
	case <-copied:
	case <-time.After(pipeGrace):
		// A process that left the group holds the pipe: stop reading.
		_ = rd.SetReadDeadline(time.Now())
		<-copied
	}
	out.flush()
	tk := p.tk
	res := SetupResult{ExitCode: tk.exitCode, Elapsed: time.Since(start)}
	res.Output, res.Truncated = out.tail()
	switch {
	case cerr != nil:
		res.ExitCode, res.Failure = -1, "it was cancelled and killed with its processes"
	case tk.exitNote == "stopped":
		res.ExitCode, res.Failure = -1, "it was stopped by request"
	case tk.exitNote != "":
		res.ExitCode, res.Failure = -1, "it ended: "+tk.exitNote
	case tk.exitCode != 0:
		res.Failure = fmt.Sprintf("exit code %d", tk.exitCode)
	}
	if res.Failure != "" {
		if note := strings.TrimSpace(sandboxNote(res.Output, t.opts.Sandbox, dir)); note != "" {
			res.Failure += "; " + strings.TrimPrefix(note, "note: ")
		}
	}
	return res, cerr
}

// setupOutput passes output on a line at a time (so that a secret is
// redacted whole unless it spans lines) and keeps its tail.
type setupOutput struct {
	emit func(string)

	mu      sync.Mutex
	partial []byte // guarded by mu: the unfinished last line
	kept    []byte // guarded by mu: the tail
	dropped bool   // guarded by mu: the tail lost its beginning
}

func (o *setupOutput) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.partial = append(o.partial, b...)
	i := strings.LastIndexByte(string(o.partial), '\n')
	if i < 0 && len(o.partial) < 4<<10 {
		return len(b), nil
	}
	if i < 0 {
		i = len(o.partial) - 1
	}
	o.pass(o.partial[:i+1])
	o.partial = append(o.partial[:0], o.partial[i+1:]...)
	return len(b), nil
}

func (o *setupOutput) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.partial) > 0 {
		o.pass(o.partial)
		o.partial = nil
	}
}

// pass hands on chunk; o.mu is held.
func (o *setupOutput) pass(chunk []byte) {
	o.kept = append(o.kept, chunk...)
	if n := len(o.kept); n > 2*setupTail {
		o.kept = append([]byte(nil), o.kept[n-setupTail:]...)
		o.dropped = true
	}
	if o.emit != nil {
		o.emit(secret.Redact(string(chunk)))
	}
}

func (o *setupOutput) tail() (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	k, dropped := o.kept, o.dropped
	if len(k) > setupTail {
		k, dropped = k[len(k)-setupTail:], true
		if i := strings.IndexByte(string(k), '\n'); i >= 0 && i < len(k)-1 {
			k = k[i+1:]
		}
	}
	return secret.Redact(string(k)), dropped
}
