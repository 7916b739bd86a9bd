package spawn

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// adoptScan is how often the helper looks for orphans re-parented to it.
const adoptScan = 500 * time.Millisecond

type waitEvent struct {
	pid int
	ws  syscall.WaitStatus
}

// helperMain is the helper: see the package documentation. Its protocol:
// one JSON Spec line on fd 3, which it then holds until end of file; JSON
// message lines on fd 4 (the command's pid or a start error, then the end).
func helperMain() int {
	// The helper is not sealed (undumpable): it holds nothing but its
	// command's own environment, and the id maps of a command's user
	// namespace (read-only paths) are written by it into the child's /proc
	// files, which an undumpable parent's child has owned by root.
	ctl := os.NewFile(3, "control")
	out := os.NewFile(4, "status")
	if ctl == nil || out == nil {
		fmt.Fprintln(os.Stderr, "yolop spawn helper: started without its pipes")
		return 2
	}
	say := func(m message) {
		b, _ := json.Marshal(m)
		_, _ = out.Write(append(b, '\n'))
	}
	rd := bufio.NewReader(ctl)
	line, err := rd.ReadBytes('\n')
	if err != nil {
		say(message{Error: "spawn helper: read spec: " + err.Error()})
		return 2
	}
	var spec Spec
	if err := json.Unmarshal(line, &spec); err != nil || len(spec.Args) == 0 {
		say(message{Error: fmt.Sprintf("spawn helper: bad spec %q", line)})
		return 2
	}
	os.Unsetenv(helperEnv)
	// Signals meant for the helper end the command with it.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	subreaperErr := setSubreaper()

	led := openLedger(spec.Ledger)
	self, _ := Identify(os.Getpid())
	led.add(Record{Op: "start", PID: self.PID, Start: self.Start, Boot: self.Boot, Role: RoleHelper, Task: spec.Task, Command: spec.Command, Owner: spec.Owner})
	endSelf := func() { led.add(Record{Op: "end", PID: self.PID, Start: self.Start, Boot: self.Boot}) }

	if subreaperErr != nil {
		endSelf()
		say(message{Error: "spawn helper: " + subreaperErr.Error()})
		return 2
	}
	argv := spec.Args
	if spec.Sandbox != nil || spec.Seal {
		// The sandbox is applied, and the capabilities dropped, by a
		// second stage of this binary in the child itself, just before it
		// executes the command.
		exe, err := os.Executable()
		if err != nil {
			endSelf()
			say(message{Error: "spawn helper: find own executable: " + err.Error()})
			return 2
		}
		pol, _ := json.Marshal(spec.Sandbox)
		argv = append([]string{exe, ExecArg, string(pol)}, spec.Args...)
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		endSelf()
		say(message{Error: fmt.Sprintf("start %s: %v", argv[0], err)})
		return 2
	}
	stdin := os.Stdin
	if !spec.Stdin {
		if stdin, err = os.Open(os.DevNull); err != nil {
			endSelf()
			say(message{Error: "spawn helper: " + err.Error()})
			return 2
		}
	}
	proc, err := os.StartProcess(path, argv, &os.ProcAttr{
		Dir:   spec.Dir,
		Env:   spec.Env,
		Files: []*os.File{stdin, os.Stdout, os.Stderr},
		Sys:   stageAttr(spec.Sandbox),
	})
	// The command has its own copy; the helper never reads it.
	stdin.Close()
	if err != nil {
		endSelf()
		say(message{Error: fmt.Sprintf("start %s: %v", argv[0], err)})
		return 2
	}
	cmdPID := proc.Pid
	cmdRec, _ := Identify(cmdPID)
	led.add(Record{Op: "start", PID: cmdPID, Start: cmdRec.Start, Boot: cmdRec.Boot, Role: RoleCommand, Task: spec.Task, Command: spec.Command, Owner: spec.Owner})
	say(message{PID: cmdPID})

	// End of file on the control pipe: yolop asked for the kill or died.
	eof := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, rd)
		close(eof)
	}()
	events := make(chan waitEvent)
	go func() {
		defer close(events)
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, 0, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil {
				return // ECHILD: nothing left to wait for
			}
			events <- waitEvent{pid, ws}
		}
	}()

	// Orphans re-parented to the helper (a daemon's double fork) are
	// recorded too: if the helper itself is killed they are no longer
	// anybody's descendants, and only the ledger lets the next open end
	// them.
	adopted := map[int]Record{}
	scan := time.NewTicker(adoptScan)
	defer scan.Stop()
	end := message{Done: true}
	exited := false
	for events != nil {
		select {
		case <-scan.C:
			for _, pid := range childrenOf(self.PID) {
				if _, ok := adopted[pid]; ok || pid == cmdPID {
					continue
				}
				r, err := Identify(pid)
				if err != nil {
					continue
				}
				adopted[pid] = r
				led.add(Record{Op: "start", PID: r.PID, Start: r.Start, Boot: r.Boot, Role: RoleAdopted, Task: spec.Task, Command: cmdline(pid), Owner: spec.Owner})
			}
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if r, ok := adopted[ev.pid]; ok {
				led.add(Record{Op: "end", PID: r.PID, Start: r.Start, Boot: r.Boot})
				delete(adopted, ev.pid)
			}
			if ev.pid != cmdPID {
				continue
			}
			exited = true
			if ev.ws.Signaled() {
				end.Signal = int(ev.ws.Signal())
			} else {
				end.Exit = ev.ws.ExitStatus()
			}
			if killTree(cmdPID) && !end.Killed {
				end.Leftovers = true
			}
		case <-eof:
			eof = nil
			end.Killed = !exited
			killTree(cmdPID)
		case <-sig:
			end.Killed = !exited
			killTree(cmdPID)
		}
	}
	for _, r := range adopted {
		led.add(Record{Op: "end", PID: r.PID, Start: r.Start, Boot: r.Boot})
	}
	led.add(Record{Op: "end", PID: cmdPID, Start: cmdRec.Start, Boot: cmdRec.Boot})
	endSelf()
	led.close()
	say(end)
	return 0
}

// ledger appends records to a session's process ledger; a ledger that
// cannot be written is skipped (the helper's pipe and the environment
// marker still end the processes).
type ledger struct{ f *os.File }

func openLedger(path string) *ledger {
	if path == "" {
		return &ledger{}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		fmt.Fprintf(os.Stderr, "yolop: cannot record processes in %s: %v\n", path, err)
		return &ledger{}
	}
	return &ledger{f: f}
}

func (l *ledger) add(r Record) {
	if l.f == nil || r.PID <= 0 {
		return
	}
	b, _ := json.Marshal(r)
	// One write of one line: appends of a few hundred bytes do not
	// interleave with other helpers'.
	_, _ = l.f.Write(append(b, '\n'))
}

func (l *ledger) close() {
	if l.f != nil {
		l.f.Close()
	}
}
