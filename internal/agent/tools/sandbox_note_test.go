package tools

import (
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
	// A refused connection is not reported as a refused write.
	if n := sandboxNote("bash: line 1: /dev/tcp/127.0.0.1/5432: Permission denied\n", strict, "/work"); n != "" {
		t.Fatalf("the connection was taken for a write: %q", n)
	}
}
