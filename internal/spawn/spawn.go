package spawn

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// HelperArg as the first argument makes Main run the helper.
const HelperArg = "__yolop-spawn-helper"

// SessionEnv names the session in the environment of every process started
// for it; Reap finds descendants by it.
const SessionEnv = "YOLOP_SESSION_ID"

// LedgerFile is the session directory's record of started processes.
const LedgerFile = "processes.jsonl"

// helperEnv marks the helper's own environment. A binary that was started
// as a helper but did not run Main (a test binary without it in TestMain)
// would otherwise go on to run tools, and helpers, itself.
const helperEnv = "YOLOP_SPAWN_HELPER"

// ErrNotHelper means the running binary did not enter helper mode.
var ErrNotHelper = errors.New("spawn: the binary does not run as a spawn helper (its main or TestMain must call spawn.Main first)")

// Main runs the helper and exits when the process was started as one, and
// returns at once otherwise. The binary's main function and the TestMain
// of every test binary that runs tools call it before anything else. The
// package's init calls it too, so that a binary that links this package
// but forgot the call (a test binary) still never runs its own program, or
// its tests, in place of the helper.
func Main() {
	if len(os.Args) > 1 && os.Args[1] == HelperArg {
		os.Exit(helperMain())
	}
	if len(os.Args) > 1 && os.Args[1] == ExecArg {
		os.Exit(execMain())
	}
	if len(os.Args) > 1 && os.Args[1] == ProbeArg && os.Getenv(helperEnv) != "" {
		os.Exit(probeMain())
	}
}

func init() { Main() }

// Spec is a command to run through the helper.
type Spec struct {
	Args []string `json:"args"` // argv; Args[0] is looked up in PATH
	Dir  string   `json:"dir"`
	// Env is the command's whole environment, and the helper's: it must
	// already be filtered (no keys), since the helper runs in it too.
	Env     []string `json:"env"`
	Ledger  string   `json:"ledger,omitempty"` // the session's LedgerFile, "" for none
	Task    string   `json:"task,omitempty"`   // recorded in the ledger
	Command string   `json:"command,omitempty"`
	Owner   int      `json:"owner,omitempty"`
	// Sandbox, when set, confines the command (see Policy).
	Sandbox *Policy `json:"sandbox,omitempty"`
	// Seal runs the command without CAP_SYS_ADMIN, CAP_PERFMON and
	// CAP_SYS_PTRACE (in every capability set, the bounding set included),
	// so that even as root it cannot read the environment or memory of
	// yolop. A Sandbox implies it.
	Seal bool `json:"seal,omitempty"`
	// Stdin: the command reads the helper's stdin (set by StartIO); else
	// /dev/null.
	Stdin bool `json:"stdin,omitempty"`
}

// Status is how a command ended.
type Status struct {
	ExitCode int // -1 when killed by a signal
	Signal   syscall.Signal
	// Killed: the command was ended by Kill (or its helper by a signal).
	Killed bool
	// Leftovers: the command exited leaving processes that were killed.
	Leftovers bool
	// Err: the helper failed after the start (or died itself).
	Err string
}

// message is one JSON line from the helper on its status pipe.
type message struct {
	PID       int    `json:"pid,omitempty"`
	Error     string `json:"error,omitempty"`
	Done      bool   `json:"done,omitempty"`
	Exit      int    `json:"exit,omitempty"`
	Signal    int    `json:"signal,omitempty"`
	Killed    bool   `json:"killed,omitempty"`
	Leftovers bool   `json:"leftovers,omitempty"`
}

// Proc is a command running under its helper.
type Proc struct {
	PID       int // the command
	HelperPID int

	ctl      *os.File // write end of the helper's control pipe
	killOnce sync.Once
	done     chan struct{}
	status   Status // set before done is closed
}

// Start runs spec under a helper with stdin from /dev/null and the given
// stdout and stderr, and returns once the command runs (or failed to
// start: then the error says why, e.g. the sandbox could not be applied).
func Start(spec Spec, stdout, stderr *os.File) (*Proc, error) {
	return StartIO(spec, nil, stdout, stderr)
}

// StartIO is Start with the command's stdin read from stdin (nil:
// /dev/null): a server that talks over its standard streams (an MCP
// server) runs under a helper like any command.
func StartIO(spec Spec, stdin, stdout, stderr *os.File) (*Proc, error) {
	spec.Stdin = stdin != nil
	if os.Getenv(helperEnv) != "" {
		return nil, ErrNotHelper
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("spawn: find own executable: %w", err)
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("spawn: pipe: %w", err)
	}
	stR, stW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return nil, fmt.Errorf("spawn: pipe: %w", err)
	}
	cmd := exec.Command(exe, HelperArg)
	// The command's environment, not yolop's: the helper is a process a
	// command could read, and yolop's environment holds its keys.
	cmd.Env = append(append(make([]string, 0, len(spec.Env)+1), spec.Env...), helperEnv+"=1")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if stdin != nil {
		cmd.Stdin = stdin
	}
	cmd.ExtraFiles = []*os.File{ctlR, stW}
	// Its own process group: a terminal's Ctrl+C reaches yolop, which
	// decides what to stop, not the helper.
	cmd.SysProcAttr = helperAttr()
	err = cmd.Start()
	ctlR.Close()
	stW.Close()
	if err != nil {
		ctlW.Close()
		stR.Close()
		return nil, fmt.Errorf("spawn: start helper: %w", err)
	}
	p := &Proc{HelperPID: cmd.Process.Pid, ctl: ctlW, done: make(chan struct{})}
	fail := func(err error) (*Proc, error) {
		ctlW.Close()
		stR.Close()
		_ = cmd.Wait()
		return nil, err
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return fail(fmt.Errorf("spawn: encode spec: %w", err))
	}
	if _, err := ctlW.Write(append(b, '\n')); err != nil {
		return fail(fmt.Errorf("spawn: send spec to helper: %w", err))
	}
	rd := bufio.NewReader(stR)
	first, err := readMessage(rd)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = ErrNotHelper
		}
		return fail(err)
	}
	if first.Error != "" {
		return fail(errors.New(first.Error))
	}
	p.PID = first.PID
	go func() {
		defer close(p.done)
		defer stR.Close()
		var last *message
		for {
			m, err := readMessage(rd)
			if err != nil {
				break
			}
			if m.Done {
				last = &m
			}
		}
		werr := cmd.Wait()
		p.killOnce.Do(func() { ctlW.Close() })
		switch {
		case last == nil && werr != nil:
			p.status = Status{ExitCode: -1, Err: "the process supervisor ended unexpectedly: " + werr.Error()}
		case last == nil:
			p.status = Status{ExitCode: -1, Err: "the process supervisor ended without reporting"}
		default:
			p.status = Status{ExitCode: last.Exit, Signal: syscall.Signal(last.Signal), Killed: last.Killed, Leftovers: last.Leftovers}
			if last.Signal != 0 {
				p.status.ExitCode = -1
			}
			if last.Error != "" {
				p.status.Err = last.Error
			}
		}
	}()
	return p, nil
}

func readMessage(rd *bufio.Reader) (message, error) {
	line, err := rd.ReadBytes('\n')
	if err != nil {
		return message{}, err
	}
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		return message{}, fmt.Errorf("spawn: helper message %q: %w", line, err)
	}
	return m, nil
}

// Kill asks the helper to kill the command and every process it started;
// Done is closed once they are gone.
func (p *Proc) Kill() { p.killOnce.Do(func() { p.ctl.Close() }) }

// Done is closed when the command and all its descendants are gone.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Status is valid once Done is closed.
func (p *Proc) Status() Status {
	<-p.done
	return p.status
}
