package spawn

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.NoRaceExitSleep()
	Main()
	if os.Getenv("SPAWN_TEST_OWNER") != "" {
		os.Exit(owner())
	}
	os.Exit(m.Run())
}

// owner is a yolop stand-in: it starts the command in SPAWN_TEST_OWNER
// through the helper and waits to be killed.
func owner() int {
	p, err := Start(Spec{
		Args: []string{"bash", "-c", os.Getenv("SPAWN_TEST_OWNER")}, Dir: os.Getenv("SPAWN_TEST_DIR"),
		Env:    append(os.Environ(), SessionEnv+"="+os.Getenv("SPAWN_TEST_SESSION")),
		Ledger: os.Getenv("SPAWN_TEST_LEDGER"), Task: "t1", Command: "test",
	}, os.Stdout, os.Stderr)
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	os.Stdout.WriteString("helper " + strconv.Itoa(p.HelperPID) + "\n")
	time.Sleep(time.Minute)
	return 0
}

// spread starts a background job, a setsid daemon and a nohup job, each
// writing its pid to a file in the current directory, and waits until all
// three have.
const spread = `sleep 300 & echo $! > bg.pid
setsid bash -c 'echo $$ > daemon.pid; exec sleep 300' &
nohup bash -c 'echo $$ > nohup.pid; exec sleep 300' >/dev/null 2>&1 &
for i in $(seq 100); do [ -s daemon.pid ] && [ -s nohup.pid ] && break; sleep 0.05; done
echo ready > ready`

func pidsIn(t *testing.T, dir string) []int {
	t.Helper()
	var out []int
	for _, n := range []string{"bg.pid", "daemon.pid", "nohup.pid"} {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pid)
	}
	return out
}

func waitGone(t *testing.T, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for {
			r, err := Identify(pid)
			if err != nil || !Alive(r) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("process %d still runs", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func waitFile(t *testing.T, p string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(p); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", p)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func linuxOnly(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the subreaper and /proc are Linux only; elsewhere the process group is the documented fallback")
	}
}

func TestLeftoversDieWithTheCommand(t *testing.T) {
	linuxOnly(t)
	dir := t.TempDir()
	p, err := Start(Spec{Args: []string{"bash", "-c", spread}, Dir: dir, Env: os.Environ()}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := p.Status()
	if st.ExitCode != 0 || !st.Leftovers || st.Killed || st.Err != "" {
		t.Fatalf("status %+v", st)
	}
	waitGone(t, pidsIn(t, dir)...)
}

func TestKillEndsEveryDescendant(t *testing.T) {
	linuxOnly(t)
	dir := t.TempDir()
	p, err := Start(Spec{Args: []string{"bash", "-c", spread + "; sleep 300"}, Dir: dir, Env: os.Environ()}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(dir, "ready"))
	p.Kill()
	st := p.Status()
	if !st.Killed || st.Signal != syscall.SIGKILL {
		t.Fatalf("status %+v", st)
	}
	waitGone(t, append(pidsIn(t, dir), p.PID, p.HelperPID)...)
}

func TestStartErrors(t *testing.T) {
	_, err := Start(Spec{Args: []string{"no-such-command-here"}, Dir: t.TempDir(), Env: os.Environ()}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "no-such-command-here") {
		t.Fatalf("err = %v", err)
	}
}

func startOwner(t *testing.T, dir, ledger, session string) (*exec.Cmd, int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "SPAWN_TEST_OWNER="+spread+"; sleep 300", "SPAWN_TEST_DIR="+dir,
		"SPAWN_TEST_LEDGER="+ledger, "SPAWN_TEST_SESSION="+session)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := out.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	helper, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(string(buf[:n]), "helper ")))
	if err != nil {
		t.Fatalf("owner said %q", buf[:n])
	}
	waitFile(t, filepath.Join(dir, "ready"))
	return cmd, helper
}

// TestOwnerDeath: SIGKILL of the process that started the command ends
// the command and everything it started.
func TestOwnerDeath(t *testing.T) {
	linuxOnly(t)
	dir := t.TempDir()
	cmd, helper := startOwner(t, dir, filepath.Join(dir, "ledger"), "s1")
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitGone(t, append(pidsIn(t, dir), helper)...)
}

// TestReapAfterHelperDeath: when the helper itself is killed with the
// owner, its descendants survive; Reap finds them through the ledger and
// the session marker and ends them, and the ledger is emptied.
func TestReapAfterHelperDeath(t *testing.T) {
	linuxOnly(t)
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger")
	cmd, helper := startOwner(t, dir, ledger, "s-reap")
	if err := syscall.Kill(helper, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	survivors := pidsIn(t, dir)
	time.Sleep(200 * time.Millisecond)
	for _, pid := range survivors {
		if r, err := Identify(pid); err != nil || !Alive(r) {
			t.Fatalf("process %d did not survive its helper; the test proves nothing", pid)
		}
	}
	res, err := Reap(ledger, "s-reap")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Left) != 0 || len(res.Ended) < 3 {
		t.Fatalf("reaped %+v", res)
	}
	waitGone(t, survivors...)
	if _, err := os.Stat(ledger); !os.IsNotExist(err) {
		t.Fatalf("ledger still there: %v", err)
	}
	// A pid recorded in the ledger but now another process is left alone.
	self, _ := Identify(os.Getpid())
	self.Start++
	self.Op = "start"
	if err := rewriteLedger(ledger, []Record{self}); err != nil {
		t.Fatal(err)
	}
	res, err = Reap(ledger, "s-none")
	if err != nil || len(res.Ended)+len(res.Left) != 0 {
		t.Fatalf("reaped %+v %v", res, err)
	}
}

// BenchmarkStart is the cost of running `true` through the helper (with
// and without the sandbox stage) against starting it directly.
//
//	go test ./internal/spawn -run '^$' -bench Start
func BenchmarkStart(b *testing.B) {
	dir := b.TempDir()
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("helper", func(b *testing.B) {
		for b.Loop() {
			p, err := Start(Spec{Args: []string{"true"}, Dir: dir, Env: os.Environ()}, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			p.Status()
		}
	})
	if abi, _ := ABI(); abi >= 3 {
		b.Run("helper+sandbox", func(b *testing.B) {
			pol := &Policy{Level: "write", MinABI: 3, WriteDirs: []string{dir}, WriteFiles: []string{"/dev/null"}}
			for b.Loop() {
				p, err := Start(Spec{Args: []string{"true"}, Dir: dir, Env: os.Environ(), Sandbox: pol}, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				if st := p.Status(); st.ExitCode != 0 {
					b.Fatalf("status %+v", st)
				}
			}
		})
		if ReadOnlyAvailable() == nil {
			ro := filepath.Join(dir, ".git")
			if err := os.MkdirAll(ro, 0o755); err != nil {
				b.Fatal(err)
			}
			b.Run("helper+sandbox+readonly", func(b *testing.B) {
				pol := &Policy{Level: "write", MinABI: 3, WriteDirs: []string{dir}, WriteFiles: []string{"/dev/null"}, ReadOnly: []string{ro}}
				for b.Loop() {
					p, err := Start(Spec{Args: []string{"true"}, Dir: dir, Env: os.Environ(), Sandbox: pol}, nil, nil)
					if err != nil {
						b.Fatal(err)
					}
					if st := p.Status(); st.ExitCode != 0 {
						b.Fatalf("status %+v", st)
					}
				}
			})
		}
	}
}

// TestHelperEnvironment: the helper runs in the command's environment,
// not in its owner's, which holds the keys.
func TestHelperEnvironment(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	t.Setenv("SPAWN_TEST_OWNER_KEY", "sk-owner-only-0123456789")
	p, err := Start(Spec{Args: []string{"sleep", "30"}, Dir: t.TempDir(), Env: []string{"PATH=" + os.Getenv("PATH")}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { p.Kill(); p.Status() }()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.HelperPID) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "SPAWN_TEST_OWNER_KEY") {
		t.Fatalf("the helper got its owner's environment: %q", b)
	}
}

// TestStartIO: the command reads the stdin it is given and sees its end.
func TestStartIO(t *testing.T) {
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := StartIO(Spec{Args: []string{"cat"}, Dir: t.TempDir(), Env: []string{"PATH=" + os.Getenv("PATH")}}, inR, outW, nil)
	inR.Close()
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inW.WriteString("over the pipe\n"); err != nil {
		t.Fatal(err)
	}
	inW.Close()
	got, err := io.ReadAll(outR)
	if err != nil {
		t.Fatal(err)
	}
	if st := p.Status(); string(got) != "over the pipe\n" || st.ExitCode != 0 {
		t.Fatalf("cat read %q, status %+v", got, st)
	}
}
