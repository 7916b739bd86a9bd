package tools

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/yolop-dev/yolop/internal/secret"
)

// RunSetup streams the command's output a line at a time, redacted, keeps
// its tail, and reports a failure with its exit code.
func TestRunSetup(t *testing.T) {
	t.Parallel()
	const key = "sk-setup-0a1b2c3d4e5f"
	secret.Add("SETUP_TEST_KEY", key)
	s, root := newSet(t)
	var mu sync.Mutex
	var chunks []string
	res, err := s.Tasks().RunSetup(context.Background(), "echo one; echo "+key+"; echo two >&2; exit 4", root, func(c string) {
		mu.Lock()
		chunks = append(chunks, c)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(chunks, "")
	if res.ExitCode != 4 || res.Failure != "exit code 4" {
		t.Errorf("result %+v", res)
	}
	for _, text := range []string{all, res.Output} {
		if strings.Contains(text, key) || !strings.Contains(text, "one\n") || !strings.Contains(text, "two\n") || !strings.Contains(text, secret.Marker("SETUP_TEST_KEY")) {
			t.Errorf("output %q", text)
		}
	}
	for _, c := range chunks {
		if !strings.HasSuffix(c, "\n") {
			t.Errorf("a chunk ends inside a line: %q", c)
		}
	}
	if len(s.Tasks().Active()) != 0 {
		t.Errorf("writers left: %v", s.Tasks().Active())
	}
}

// A cancelled setup is killed with what it started, and says so.
func TestRunSetupCancelled(t *testing.T) {
	t.Parallel()
	s, root := newSet(t)
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	var once sync.Once
	res, err := s.Tasks().RunSetup(ctx, "echo started; sleep 60 & sleep 60", root, func(c string) {
		if strings.Contains(c, "started") {
			once.Do(func() {
				// While it runs it is a writer, so restores wait for it.
				if ws := s.Tasks().Active(); len(ws) != 1 || ws[0].Kind != WriterSetup {
					t.Errorf("writers while it runs: %v", ws)
				}
				close(started)
				cancel()
			})
		}
	})
	<-started
	if !errors.Is(err, context.Canceled) || res.ExitCode != -1 || !strings.Contains(res.Failure, "cancelled") {
		t.Fatalf("err %v, result %+v", err, res)
	}
	if len(s.Tasks().Active()) != 0 {
		t.Errorf("writers left: %v", s.Tasks().Active())
	}
}
