package mcp

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/sandbox"
	"github.com/yolop-dev/yolop/internal/spawn"
)

// TestConfine: a server's spec carries the session marker, the ledger,
// this process as owner and the session's sandbox; a refused sandbox keeps
// it from starting.
func TestConfine(t *testing.T) {
	t.Parallel()
	pol := &spawn.Policy{}
	spec := spawn.Spec{Env: []string{"A=1"}}
	if err := Confine("s_one", "/s/ledger", sandbox.Status{Requested: sandbox.Write, Policy: pol})(&spec); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(spec.Env, []string{"A=1", spawn.SessionEnv + "=s_one"}) || spec.Ledger != "/s/ledger" || spec.Owner != os.Getpid() || spec.Sandbox != pol || !spec.Seal {
		t.Fatalf("spec: %+v", spec)
	}
	if err := Confine("s_one", "", sandbox.Status{Refused: "no sandbox here"})(&spawn.Spec{}); err == nil || err.Error() != "no sandbox here" {
		t.Fatalf("refused sandbox: %v", err)
	}
}

// TestWithCallTimeout: only servers without a timeout of their own get
// the settings'; the caller's list is not changed.
func TestWithCallTimeout(t *testing.T) {
	t.Parallel()
	in := []Server{{Name: "editor"}, {Name: "own", CallTimeout: time.Minute}, {Name: "none", CallTimeout: -1}}
	out := WithCallTimeout(in, 5*time.Second)
	if out[0].CallTimeout != 5*time.Second || out[1].CallTimeout != time.Minute || out[2].CallTimeout != -1 || in[0].CallTimeout != 0 {
		t.Fatalf("timeouts: %+v (from %+v)", out, in)
	}
}
