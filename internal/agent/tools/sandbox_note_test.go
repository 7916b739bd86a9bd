package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/sandbox"
	"github.com/yolop-dev/yolop/internal/spawn"
)

func TestSandboxNoteGitRefs(t *testing.T) {
	st := sandbox.Status{InForce: sandbox.Write, Policy: &spawn.Policy{WriteDirs: []string{"/wt", "/repo/.git/objects", "/repo/.git/refs/heads/yolop"}}}
	cases := []struct {
		out, want string
	}{
		// git stash names no path.
		{"exit code: 1\nstderr:\nCannot save the current status\n", "refused a write of git's: git may write the session's branch"},
		// A tag names the lock file it could not create.
		{"stderr:\nfatal: cannot lock ref 'refs/tags/v1': Unable to create '/repo/.git/refs/tags/v1.lock': Permission denied\n", "refused writing /repo/.git/refs/tags/v1.lock: git may write"},
		// Anywhere else: the workspace advice.
		{"stderr:\ntouch: cannot touch '/etc/x': Permission denied\n", "refused writing /etc/x: commands may write only the workspace"},
	}
	for _, c := range cases {
		got := sandboxNote(c.out, st, "/wt")
		if !strings.Contains(got, c.want) {
			t.Errorf("%q:\n got %q\nwant %q", c.out, got, c.want)
		}
	}
	if got := sandboxNote("stderr:\nCannot save the current status\n", sandbox.Status{}, "/wt"); got != "" {
		t.Errorf("no sandbox, yet %q", got)
	}
	if got := sandboxNote("stdout:\nall fine\n", st, "/wt"); got != "" {
		t.Errorf("nothing refused, yet %q", got)
	}
}

func TestNetworkNote(t *testing.T) {
	t.Parallel()
	strict := sandbox.Status{Requested: sandbox.Strict, InForce: sandbox.Strict, Policy: &spawn.Policy{}, Ports: []int{443}}
	write := sandbox.Status{Requested: sandbox.Write, InForce: sandbox.Write, Policy: &spawn.Policy{}}
	for _, tc := range []struct {
		name string
		st   sandbox.Status
		out  string
		want string // "" = no note
	}{
		{"curl", strict, "stdout:\n000 rc=7\nstderr:\ncurl: (7) Failed to connect to 127.0.0.1 port 8765 after 0 ms: Couldn't connect to server\n", "refused the TCP connection to port 8765, not the server: commands may connect only to TCP ports 443"},
		{"bash dev tcp", strict, "stderr:\nbash: connect: Permission denied\nbash: line 1: /dev/tcp/127.0.0.1/5432: Permission denied\n", "port 5432"},
		{"python", strict, "ConnectionRefusedError: [Errno 111] Connection refused (localhost:8000)\n", "port 8000"},
		{"go dial", strict, "dial tcp 10.0.0.1:6379: connect: permission denied\n", "port 6379"},
		{"no port named", strict, "psql: error: could not connect to server: Permission denied\n", "may have refused this connection"},
		{"allowed port: the server's failure", strict, "curl: (7) Failed to connect to example.com port 443 after 3 ms: Couldn't connect to server\n", ""},
		{"write level", write, "curl: (7) Failed to connect to 127.0.0.1 port 8765 after 0 ms: Couldn't connect to server\n", ""},
		{"no connection", strict, "exit code: 0\nstdout:\nok\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := networkNote(tc.out, tc.st)
			if tc.want == "" {
				if got != "" {
					t.Fatalf("note %q, want none", got)
				}
				return
			}
			if !strings.Contains(got, tc.want) || !strings.Contains(got, "[sandbox] ports") || !strings.Contains(got, "--sandbox write") {
				t.Fatalf("note %q, want it to contain %q and the way to open the port", got, tc.want)
			}
		})
	}
	// No port configured: the note says none is open and how to open one,
	// never "ports none".
	closed := strict
	closed.Ports = nil
	n := networkNote("curl: (7) Failed to connect to 127.0.0.1 port 8765 after 0 ms: Couldn't connect to server\n", closed)
	for _, want := range []string{"refused the TCP connection to port 8765", "no TCP port is open to commands", "ports = [8765]", "--sandbox write"} {
		if !strings.Contains(n, want) {
			t.Errorf("note %q lacks %q", n, want)
		}
	}
	if strings.Contains(n, "ports none") {
		t.Errorf("note %q says \"ports none\"", n)
	}
	// A refused connection is not reported as a refused write.
	if n := sandboxNote("bash: line 1: /dev/tcp/127.0.0.1/5432: Permission denied\n", strict, "/work"); n != "" {
		t.Fatalf("the connection was taken for a write: %q", n)
	}
}

// TestSandboxNoteReadOnly: a write refused in a read-only .git is
// explained as the in-place rule, not as a place outside the workspace;
// other refusals in the same output keep their note.
func TestSandboxNoteReadOnly(t *testing.T) {
	t.Parallel()
	st := sandbox.Status{InForce: sandbox.Write, Policy: &spawn.Policy{WriteDirs: []string{"/co"}, ReadOnly: []string{"/co/.git", "/co/vendor"}}}
	cases := []struct {
		out       string
		want, not []string
	}{
		{"stderr:\nerror: could not lock config file .git/config: Read-only file system\n",
			[]string{"refused a write in /co/.git: the repository's .git is read-only for commands, because this session works in place", "a rewind cannot undo", "yolop commit"},
			[]string{"commands may write only the workspace", "git may write the session's branch"}},
		{"stderr:\nfatal: Unable to create '/co/.git/index.lock': Read-only file system\n",
			[]string{"refused a write in /co/.git: the repository's .git is read-only"}, nil},
		{"stderr:\ntouch: cannot touch 'vendor/x': Read-only file system\n",
			[]string{"refused a write in /co/vendor: it is read-only for commands in this session"}, []string{".git"}},
		{"stderr:\nbash: .git/hooks/pre-commit: Read-only file system\ntouch: cannot touch '/etc/x': Permission denied\n",
			[]string{"the repository's .git is read-only", "refused writing /etc/x: commands may write only the workspace"}, nil},
	}
	for _, c := range cases {
		got := sandboxNote(c.out, st, "/co")
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q:\n got %q\nwant %q", c.out, got, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(got, n) {
				t.Errorf("%q:\n got %q\nwhich should not say %q", c.out, got, n)
			}
		}
	}
	// A read-only path the machine does not enforce is not in the policy:
	// a refusal there is the ordinary one.
	plain := sandbox.Status{InForce: sandbox.Write, Policy: &spawn.Policy{WriteDirs: []string{"/co"}}}
	if got := sandboxNote("stderr:\nbash: /etc/x: Permission denied\n", plain, "/co"); strings.Contains(got, "read-only for commands") {
		t.Errorf("unenforced: %q", got)
	}
}

// TestReadOnlyGitThroughBash: with the checkout's .git read-only (as a
// session in place plans it), an agent's git commit and git config fail
// through the real sandbox stage, the model is told why, and the files
// next to .git stay writable.
func TestReadOnlyGitThroughBash(t *testing.T) {
	t.Parallel()
	if abi, _ := spawn.ABI(); abi < sandbox.WriteABI {
		t.Skipf("Landlock ABI %d", abi)
	}
	if err := spawn.ReadOnlyAvailable(); err != nil {
		t.Skipf("read-only paths unavailable: %v", err)
	}
	base := t.TempDir()
	root, spill := filepath.Join(base, "co"), filepath.Join(base, "spill")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "init", "-q", root).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	cfg, err := os.ReadFile(filepath.Join(root, ".git/config"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := sandbox.Plan(sandbox.Config{}, sandbox.Layout{Top: root, TmpDir: filepath.Join(base, "tmp"), ReadOnly: []string{filepath.Join(root, ".git")}})
	if err != nil || !st.ReadOnly.Enforced {
		t.Fatalf("plan: %+v %v", st.ReadOnly, err)
	}
	s, err := New(Env{Root: root, SpillDir: spill, Tasks: NewSessionTasks(spill, TaskOptions{Sandbox: st})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Tasks().StopAll)
	r := call(t, s, "bash", map[string]any{"command": "echo x > a.txt && git add a.txt && git -c user.name=a -c user.email=a@b commit -qm agent"})
	if !strings.Contains(r.Content, "the repository's .git is read-only for commands, because this session works in place") {
		t.Fatalf("commit: %s", r.Content)
	}
	r = call(t, s, "bash", map[string]any{"command": "git config user.name someone"})
	if !strings.Contains(r.Content, "the repository's .git is read-only") {
		t.Fatalf("config: %s", r.Content)
	}
	if got := readFileT(t, root, "a.txt"); got != "x\n" {
		t.Fatalf("a.txt: %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(root, ".git/config")); string(got) != string(cfg) {
		t.Fatalf(".git/config changed:\n%s", got)
	}
}

func TestRefusalSummary(t *testing.T) {
	t.Parallel()
	write := sandbox.Status{Requested: sandbox.Write, InForce: sandbox.Write, Policy: &spawn.Policy{}}
	strict := sandbox.Status{Requested: sandbox.Strict, InForce: sandbox.Strict, Policy: &spawn.Policy{}}
	for _, tc := range []struct {
		name, out string
		st        sandbox.Status
		want      string // the user's line; "" = no certain refusal
	}{
		{"write outside", "exit code: 0\nstderr:\ntouch: cannot touch '/etc/x': Permission denied\n", write, "the sandbox (level write) refused writing /etc/x"},
		{"git ref", "stderr:\nCannot save the current status\n", write, "the sandbox (level write) refused a write of git's (a ref outside the session's branch)"},
		{"closed port", "curl: (7) Failed to connect to 127.0.0.1 port 8765 after 0 ms: Couldn't connect to server\n", strict, "the sandbox (level strict) refused the TCP connection to port 8765"},
		{"read-only .git and a write outside", "stderr:\nbash: .git/hooks/pre-commit: Read-only file system\ntouch: cannot touch '/etc/x': Permission denied\n",
			sandbox.Status{InForce: sandbox.Write, Policy: &spawn.Policy{WriteDirs: []string{"/wt"}, ReadOnly: []string{"/wt/.git"}}},
			"the sandbox (level write) refused a write in /wt/.git; the sandbox (level write) refused writing /etc/x"},
		{"the reporting program is not the path refused", "exit code: 0\nstderr:\n/usr/bin/bash: line 1: /etc/x: Permission denied\n", write, "the sandbox (level write) refused writing /etc/x"},
		{"a guess is not told", "stderr:\nsomething: Permission denied\n", write, ""},
		{"nothing refused", "exit code: 0\nstdout:\nok\n", write, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			notes, got := refusal(tc.out, tc.st, "/wt")
			if got != tc.want {
				t.Fatalf("summary %q, want %q (notes %q)", got, tc.want, notes)
			}
			if tc.want != "" && notes == "" {
				t.Fatal("a refusal without a note for the model")
			}
		})
	}
}
