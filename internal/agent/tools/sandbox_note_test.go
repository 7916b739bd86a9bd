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
