package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/yolop-dev/yolop/internal/fault"
	"github.com/yolop-dev/yolop/internal/sandbox"
	"github.com/yolop-dev/yolop/internal/secret"
	"github.com/yolop-dev/yolop/internal/spawn"
)

// Writer kinds.
const (
	WriterBash       = "bash"       // a foreground command of the bash tool
	WriterBackground = "background" // a background task
	// WriterSurvivor is a process an earlier yolop process of the session
	// left running that could not be ended when the session was opened.
	WriterSurvivor = "survivor"
)

// Writer is a running process that can change the workspace. The checkpoint
// controller refuses to restore while any exists.
type Writer struct {
	ID      string
	Kind    string // WriterBash, WriterBackground or WriterSurvivor
	Command string
	Started time.Time
	PID     int // the command's process; 0 while starting
}

// stopWait bounds how long Stop waits for a killed group's shell to be reaped.
const stopWait = 10 * time.Second

// keepFinished bounds how many exited background tasks stay listed.
const keepFinished = 50

// ErrUnknownTask is returned by Stop for an id that was never started here.
var ErrUnknownTask = fault.Plain("tools: unknown task")

type task struct {
	w       Writer
	proc    *spawn.Proc
	logPath string        // background: combined output; "" for foreground
	done    chan struct{} // closed once the shell is reaped and its group killed

	// Set before done is closed, read only after.
	exitCode  int    // -1 when killed by a signal
	exitNote  string // "killed by signal 9", "stopped", ...
	leftovers bool   // processes were left in the group and killed

	ended time.Time // guarded by Tasks.mu
}

func (t *task) finished() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// status describes a finished task's end for the model.
func (t *task) status() string {
	switch {
	case t.exitNote != "":
		return t.exitNote
	default:
		return "exit code " + strconv.Itoa(t.exitCode)
	}
}

// Tasks tracks the shell processes of a session: foreground bash commands
// while they run and background tasks until they exit (and, once exited, the
// last few of them so their result can be listed).
type Tasks struct {
	spillDir string
	opts     TaskOptions

	mu      sync.Mutex
	next    int              // guarded by mu: last id number handed out
	tasks   map[string]*task // guarded by mu: running tasks and finished background ones
	stopped map[string]bool  // guarded by mu: ids killed through Stop
	// survivors are processes of an earlier yolop process that could not
	// be ended; they count as writers while they live.
	survivors []survivor // guarded by mu

	plan      EnvPlan // where the commands' environment comes from
	loginOnce sync.Once
	login     loginEnv // read by loginOnce
	loginTold bool     // guarded by mu: login.note was told
	hostTold  bool     // guarded by mu: LoginNotice said it
}

// survivor is a process left by an earlier yolop process and when this
// one found it (its Writer.Started).
type survivor struct {
	rec   spawn.Record
	found time.Time
}

// TaskOptions configures the processes a Tasks starts.
type TaskOptions struct {
	// Session names the session in every process's environment
	// (spawn.SessionEnv), so that descendants can be found later.
	Session string
	// Ledger is the session's process ledger ("" records nothing).
	Ledger string
	// PassEnv names environment variables that commands get although
	// their names look like secrets (settings: [tools] pass_env).
	PassEnv []string
	// Sandbox is how commands are confined: its Policy is applied to every
	// command (nil: unconfined); when Refused is set no command runs.
	Sandbox sandbox.Status
	// TmpDir, when set, is every command's TMPDIR (created if missing).
	TmpDir string
	// Env is where the commands' environment comes from (settings:
	// [tools] env): EnvInherit ("" too) or EnvLogin; see PlanEnv.
	Env string
	// LoginCache, when set, is where the login environment is kept for
	// the session's later processes (and a login profile that hangs is
	// remembered, so that they do not wait for it again) while the
	// profile files are unchanged.
	LoginCache string
	// LoginTimeout bounds the login profile (0: loginEnvTimeout).
	LoginTimeout time.Duration
}

// NewTasks makes a registry whose background logs go to spillDir.
func NewTasks(spillDir string) *Tasks {
	return NewSessionTasks(spillDir, TaskOptions{})
}

// NewSessionTasks makes a registry for a session's commands.
func NewSessionTasks(spillDir string, opts TaskOptions) *Tasks {
	return &Tasks{spillDir: spillDir, opts: opts, plan: PlanEnv(opts.Env, os.Environ()), tasks: map[string]*task{}, stopped: map[string]bool{}}
}

// SessionTmpDir is the directory, in a session's directory, that is its
// commands' TMPDIR.
const SessionTmpDir = "tmp"

// SessionSpillDir picks where command output beyond the tools' caps goes
// for session id, whose directory is dir: spill/ there, unless the active
// root contains it (a conversation-only session started above the data
// directory), then a private directory under the system temp dir. It is
// created owner-only.
func SessionSpillDir(dir, id, root string) (string, error) {
	inside := func(p string) bool {
		rel, err := filepath.Rel(root, p)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
	}
	spill := filepath.Join(dir, "spill")
	if inside(spill) {
		spill = filepath.Join(os.TempDir(), fmt.Sprintf("yolop-%d", os.Getuid()), id, "spill")
		if inside(spill) {
			return "", fmt.Errorf("the working directory %s contains both yolop's data directory and the temp directory; start yolop in a project directory, or set --data-dir elsewhere", root)
		}
	}
	if err := os.MkdirAll(spill, 0o700); err != nil {
		return "", err
	}
	return spill, os.Chmod(spill, 0o700)
}

// ForSession makes the command registry of session id, whose directory is
// dir: o says where the commands' environment comes from and how they are
// confined, and the session's directory holds the rest. Every command
// carries the session marker, is recorded in the session's process ledger
// (spawn.LedgerFile) and gets the session's own TMPDIR (SessionTmpDir);
// the login environment (or a profile that hangs) is remembered for the
// session's later processes (login-env.json).
func ForSession(dir, id, spillDir string, o TaskOptions) *Tasks {
	o.Session = id
	o.Ledger = filepath.Join(dir, spawn.LedgerFile)
	o.TmpDir = filepath.Join(dir, SessionTmpDir)
	o.LoginCache = filepath.Join(dir, "login-env.json")
	return NewSessionTasks(spillDir, o)
}

// EnvPlan says where the commands' environment comes from.
func (t *Tasks) EnvPlan() EnvPlan { return t.plan }

// AddSurvivors registers processes left by an earlier yolop process that
// could not be ended: until they are gone they are active writers.
func (t *Tasks) AddSurvivors(rs []spawn.Record) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range rs {
		t.survivors = append(t.survivors, survivor{r, time.Now()})
	}
}

// survivorsLocked drops survivors that are gone and lists the rest.
func (t *Tasks) survivorsLocked() []Writer {
	var out []Writer
	kept := t.survivors[:0]
	for _, s := range t.survivors {
		if !spawn.Alive(s.rec) {
			continue
		}
		kept = append(kept, s)
		out = append(out, Writer{ID: "p" + strconv.Itoa(s.rec.PID), Kind: WriterSurvivor, Command: s.rec.Command, PID: s.rec.PID, Started: s.found})
	}
	t.survivors = kept
	return out
}

// Active lists the writers still running, oldest first.
func (t *Tasks) Active() []Writer {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Writer
	for _, tk := range t.tasks {
		if !tk.finished() {
			out = append(out, tk.w)
		}
	}
	sortWriters(out)
	return append(t.survivorsLocked(), out...)
}

// BackgroundRunning reports whether a background task still runs.
func (t *Tasks) BackgroundRunning() bool {
	for _, w := range t.Active() {
		if w.Kind == WriterBackground {
			return true
		}
	}
	return false
}

func sortWriters(ws []Writer) {
	sort.Slice(ws, func(i, j int) bool { return idNum(ws[i].ID) < idNum(ws[j].ID) })
}

func idNum(id string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(id, "t"))
	return n
}

// Stop kills task id's whole process group and waits for it to end. Stopping
// a task that already exited is not an error.
func (t *Tasks) Stop(id string) error {
	if strings.HasPrefix(id, "p") {
		return t.stopSurvivor(id)
	}
	t.mu.Lock()
	tk, ok := t.tasks[id]
	if ok && !tk.finished() {
		t.stopped[id] = true
	}
	t.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownTask, id)
	}
	if tk.finished() {
		return nil
	}
	t.mu.Lock()
	pid, p := tk.w.PID, tk.proc
	t.mu.Unlock()
	if p != nil {
		p.Kill()
	} // else start kills it as soon as it runs (t.stopped is set)
	select {
	case <-tk.done:
		return nil
	case <-time.After(stopWait):
		return fmt.Errorf("tools: task %s (pid %d) did not exit within %s of SIGKILL; it may be stuck in the kernel", id, pid, stopWait)
	}
}

// stopSurvivor kills a survivor (the one listed as id) again.
func (t *Tasks) stopSurvivor(id string) error {
	t.mu.Lock()
	var rec *spawn.Record
	for i := range t.survivors {
		if "p"+strconv.Itoa(t.survivors[i].rec.PID) == id {
			r := t.survivors[i].rec
			rec = &r
		}
	}
	t.mu.Unlock()
	if rec == nil || !spawn.Alive(*rec) {
		return fmt.Errorf("%w %q", ErrUnknownTask, id)
	}
	if err := syscall.Kill(rec.PID, syscall.SIGKILL); err != nil {
		return fmt.Errorf("tools: kill process %d left by an earlier yolop process: %w; end it yourself (kill -9 %d)", rec.PID, err, rec.PID)
	}
	deadline := time.Now().Add(stopWait)
	for spawn.Alive(*rec) {
		if time.Now().After(deadline) {
			return fmt.Errorf("tools: process %d did not exit within %s of SIGKILL; it may be stuck in the kernel", rec.PID, stopWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// StopAll stops every running task; used when the session ends.
func (t *Tasks) StopAll() {
	for _, w := range t.Active() {
		_ = t.Stop(w.ID)
	}
}

// Output describes a background task: its state and the tail of its log.
func (t *Tasks) Output(id string) (string, bool) {
	t.mu.Lock()
	tk, ok := t.tasks[id]
	if !ok {
		t.mu.Unlock()
		return "", false
	}
	w := tk.w
	t.mu.Unlock()
	return describe(w, tk, 4<<10), true
}

// describe is a task's listing for the model with up to tail bytes of output.
// w is a copy of tk.w taken under the lock (its PID is set after start).
func describe(w Writer, tk *task, tail int) string {
	var b strings.Builder
	state := "running"
	if tk.finished() {
		state = "exited, " + tk.status()
		if tk.leftovers {
			state += "; processes it left running were killed"
		}
	}
	fmt.Fprintf(&b, "%s [%s] %s\n  started %s, pid %d", w.ID, state, w.Command, w.Started.Format(time.TimeOnly), w.PID)
	if tk.logPath == "" {
		b.WriteString(" (foreground bash command)\n")
		return b.String()
	}
	fmt.Fprintf(&b, ", output in %s\n", tk.logPath)
	text, size := readTail(tk.logPath, tail)
	switch {
	case size == 0:
		b.WriteString("  (no output yet)\n")
	case int64(len(text)) < size:
		fmt.Fprintf(&b, "  last %d of %d output bytes:\n%s", len(text), size, indent(text))
	default:
		fmt.Fprintf(&b, "  output:\n%s", indent(text))
	}
	return b.String()
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	return "  | " + strings.ReplaceAll(s, "\n", "\n  | ") + "\n"
}

// readTail returns the last n bytes of a file, starting at a line boundary
// when one is near, and the file's size.
func readTail(path string, n int) (string, int64) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0
	}
	size := fi.Size()
	start := max(size-int64(n), 0)
	buf := make([]byte, size-start)
	k, _ := f.ReadAt(buf, start)
	buf = buf[:k]
	if start > 0 {
		if i := strings.IndexByte(string(buf), '\n'); i >= 0 && i < len(buf)-1 {
			buf = buf[i+1:]
		}
	}
	return string(buf), size
}

// list describes every task for the tasks tool, newest last.
func (t *Tasks) list() string {
	type entry struct {
		w  Writer
		tk *task
	}
	t.mu.Lock()
	var es []entry
	for _, tk := range t.tasks {
		es = append(es, entry{tk.w, tk})
	}
	t.mu.Unlock()
	if len(es) == 0 {
		return "no tasks; start one with bash {\"command\": ..., \"background\": true}"
	}
	sort.Slice(es, func(i, j int) bool { return idNum(es[i].w.ID) < idNum(es[j].w.ID) })
	var b strings.Builder
	for _, e := range es {
		b.WriteString(describe(e.w, e.tk, 2<<10))
	}
	return b.String()
}

// proc is a process started through Tasks.
type proc struct {
	tk *task
}

// start runs `bash -c command` in dir, in the commands' environment, through
// the spawn helper (so that it and everything it starts die with this
// process, and are confined by the sandbox when one is set), with stdin
// from /dev/null, registered as a writer until it ends. stdout and stderr are handed to the child as
// files, so nothing waits for pipes that a leftover process might hold.
func (t *Tasks) start(kind, command, dir string, stdout, stderr *os.File, logPath string) (*proc, error) {
	t.mu.Lock()
	t.next++
	tk := &task{
		w:       Writer{ID: "t" + strconv.Itoa(t.next), Kind: kind, Command: command, Started: time.Now()},
		logPath: logPath,
		done:    make(chan struct{}),
	}
	// Registered before the process exists, so there is no moment where a
	// writer runs unlisted.
	t.tasks[tk.w.ID] = tk
	t.mu.Unlock()

	env := t.commandEnv(dir)
	spec := spawn.Spec{
		Args: []string{t.plan.bashFor(env), "-c", command}, Dir: dir, Env: env,
		Ledger: t.opts.Ledger, Task: tk.w.ID, Command: command, Owner: os.Getpid(),
		Sandbox: t.opts.Sandbox.Policy, Seal: t.opts.Sandbox.Seals(),
	}
	if t.opts.TmpDir != "" {
		if err := os.MkdirAll(t.opts.TmpDir, 0o700); err != nil {
			t.mu.Lock()
			delete(t.tasks, tk.w.ID)
			t.mu.Unlock()
			close(tk.done)
			return nil, fmt.Errorf("create the commands' temporary directory: %w", err)
		}
	}
	p, err := spawn.Start(spec, stdout, stderr)
	if err != nil {
		t.mu.Lock()
		delete(t.tasks, tk.w.ID)
		delete(t.stopped, tk.w.ID)
		t.mu.Unlock()
		close(tk.done)
		return nil, fmt.Errorf("start bash: %w", err)
	}
	t.mu.Lock()
	tk.w.PID, tk.proc = p.PID, p
	// Stopped while it was starting: Stop found no process to kill.
	stopped := t.stopped[tk.w.ID]
	t.mu.Unlock()
	if stopped {
		p.Kill()
	}
	go t.reap(tk, p)
	return &proc{tk: tk}, nil
}

// commandEnv is the environment of every command: yolop's own, or the
// login shell's (see PlanEnv, loginEnv), with yolop's rules applied (no
// secrets, no pager, the session's TMPDIR); yolop's own when the login
// environment could not be read.
func (t *Tasks) commandEnv(dir string) []string {
	own := func(environ []string) []string {
		base, _ := secret.FilterEnv(environ, t.opts.PassEnv)
		env := t.shellEnv(base)
		if t.opts.Session != "" {
			env = append(env, spawn.SessionEnv+"="+t.opts.Session)
		}
		if t.opts.TmpDir != "" {
			env = append(env, "TMPDIR="+t.opts.TmpDir)
		}
		return env
	}
	if t.opts.Sandbox.Refused != "" || t.plan.Source == EnvInherit {
		return own(os.Environ()) // refused: nothing runs, start says why
	}
	t.loginOnce.Do(func() { t.login = t.readLoginEnv(dir, own(os.Environ())) })
	if t.login.env == nil {
		return own(os.Environ())
	}
	return own(t.login.env)
}

// LoginProblem says why commands do not run in the login shell's
// environment, "" when they do or no command ran yet; hosts tell the user
// (loginNote tells the model).
func (t *Tasks) LoginProblem() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.loginTold {
		return ""
	}
	return t.login.note
}

// LoginNotice is LoginProblem for the user, once per session: "" after
// it said something.
func (t *Tasks) LoginNotice() string {
	why := t.LoginProblem()
	t.mu.Lock()
	defer t.mu.Unlock()
	if why == "" || t.hostTold {
		return ""
	}
	t.hostTold = true
	return why
}

// loginNote says, once, why commands do not run in the login shell's
// environment ("" when they do, or once it was told).
func (t *Tasks) loginNote() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.login.note == "" || t.loginTold {
		return ""
	}
	t.loginTold = true
	return "note: " + t.login.note + "; commands run in yolop's own environment instead.\n"
}

// reap waits for the command and everything it left behind to be gone
// and records the end.
func (t *Tasks) reap(tk *task, p *spawn.Proc) {
	st := p.Status()
	tk.exitCode = st.ExitCode
	tk.leftovers = st.Leftovers
	switch {
	case st.Err != "":
		tk.exitNote = st.Err
	case st.Signal != 0:
		tk.exitNote = "killed by signal " + st.Signal.String()
	}
	t.mu.Lock()
	tk.ended = time.Now()
	if t.stopped[tk.w.ID] {
		tk.exitNote = "stopped"
		delete(t.stopped, tk.w.ID)
	}
	if tk.logPath == "" {
		// Foreground commands report through the bash tool; only
		// background tasks stay listed after they end.
		delete(t.tasks, tk.w.ID)
	}
	t.pruneLocked()
	close(tk.done)
	t.mu.Unlock()
}

// pruneLocked drops the oldest exited background tasks beyond keepFinished.
func (t *Tasks) pruneLocked() {
	var ended []*task
	for _, tk := range t.tasks {
		if !tk.ended.IsZero() {
			ended = append(ended, tk)
		}
	}
	if len(ended) <= keepFinished {
		return
	}
	sort.Slice(ended, func(i, j int) bool { return idNum(ended[i].w.ID) < idNum(ended[j].w.ID) })
	for _, tk := range ended[:len(ended)-keepFinished] {
		delete(t.tasks, tk.w.ID)
	}
}

// shellEnv is the environment of shell commands: the user's (without
// secrets, see secret.FilterEnv), without variables that would point git
// at another repository, and with pagers and
// prompts disabled because no one is at a terminal to answer them.
func (t *Tasks) shellEnv(base []string) []string {
	drop := map[string]bool{
		"GIT_DIR": true, "GIT_WORK_TREE": true, "GIT_INDEX_FILE": true, "GIT_OBJECT_DIRECTORY": true,
		"GIT_ALTERNATE_OBJECT_DIRECTORIES": true, "GIT_COMMON_DIR": true, "GIT_PREFIX": true,
		"PAGER": true, "GIT_PAGER": true, "GIT_TERMINAL_PROMPT": true, "GIT_EDITOR": true,
	}
	var env []string
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] && k != spawn.SessionEnv && !(k == "TMPDIR" && t.opts.TmpDir != "") {
			env = append(env, kv)
		}
	}
	return append(env, "PAGER=cat", "GIT_PAGER=cat", "GIT_TERMINAL_PROMPT=0", "GIT_EDITOR=true")
}

// spillFile creates a new owner-only file in dir named after the task.
func spillFile(dir, pattern string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create spill directory: %w", err)
	}
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, fmt.Errorf("create spill file: %w", err)
	}
	return f, nil
}

// NoTasks are the background tasks of a session that has run nothing.
type NoTasks struct{}

func (NoTasks) Active() []Writer { return nil }
func (NoTasks) Stop(id string) error {
	return fmt.Errorf("no background task %q: this session has run nothing yet", id)
}
