package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/yolop-dev/yolop/internal/git"
	"github.com/yolop-dev/yolop/internal/spawn"
)

// Confined is how a command run by RunConfined ended.
type Confined struct {
	Stdout, Stderr []byte
	ExitCode       int // -1 when it was killed
}

// RunConfined runs argv in dir the way the session's commands run, and
// waits for it: under the spawn helper (recorded in the session's process
// ledger; nothing it starts outlives it), in the session's sandbox, with
// the commands' environment (no secrets) plus env. yolop uses it for the
// git processes that run what the agent could have written, such as the
// hooks of `yolop commit`. A cancelled ctx kills the command.
func (t *Tasks) RunConfined(ctx context.Context, dir string, env []string, argv ...string) (Confined, error) {
	if t.opts.Sandbox.Refused != "" {
		return Confined{}, errors.New(t.opts.Sandbox.Refused)
	}
	if len(argv) == 0 {
		return Confined{}, errors.New("tools: RunConfined needs a command")
	}
	if t.opts.TmpDir != "" {
		if err := os.MkdirAll(t.opts.TmpDir, 0o700); err != nil {
			return Confined{}, fmt.Errorf("create the commands' temporary directory: %w", err)
		}
	}
	out, err := os.CreateTemp("", "yolop-confined-out-")
	if err != nil {
		return Confined{}, err
	}
	defer os.Remove(out.Name())
	defer out.Close()
	errf, err := os.CreateTemp("", "yolop-confined-err-")
	if err != nil {
		return Confined{}, err
	}
	defer os.Remove(errf.Name())
	defer errf.Close()
	spec := spawn.Spec{
		Args: argv, Dir: dir, Env: append(t.commandEnv(dir), env...),
		Ledger: t.opts.Ledger, Task: "yolop", Command: strings.Join(argv, " "), Owner: os.Getpid(),
		Sandbox: t.opts.Sandbox.Policy,
	}
	p, err := spawn.Start(spec, out, errf)
	if err != nil {
		return Confined{}, fmt.Errorf("start %s: %w", argv[0], err)
	}
	select {
	case <-p.Done():
	case <-ctx.Done():
		p.Kill()
		<-p.Done()
	}
	st := p.Status()
	var res Confined
	res.ExitCode = st.ExitCode
	if res.Stdout, err = os.ReadFile(out.Name()); err != nil {
		return res, err
	}
	if res.Stderr, err = os.ReadFile(errf.Name()); err != nil {
		return res, err
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if st.Err != "" {
		return res, fmt.Errorf("%s: %s", argv[0], st.Err)
	}
	return res, nil
}

// RunGit is RunConfined for a git command (argv[0] is git) whose caller
// wants its stdout: a non-zero exit is a *git.Error, as from git's own
// runner. It is the land package's Confine for a session's commit.
func (t *Tasks) RunGit(ctx context.Context, dir string, env []string, argv ...string) ([]byte, error) {
	res, err := t.RunConfined(ctx, dir, env, argv...)
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return res.Stdout, &git.Error{Args: argv[1:], ExitCode: res.ExitCode, Stderr: string(res.Stderr)}
	}
	return res.Stdout, nil
}
