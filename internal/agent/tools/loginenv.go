package tools

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/yolop-dev/yolop/internal/spawn"
)

// loginEnvTimeout bounds how long the user's login profile may take to
// give its environment.
const loginEnvTimeout = 15 * time.Second

// loginEnv is the environment of the user's login shell, read once per
// session: `bash -lc 'env -0'`, run like a command (through the spawn
// helper, confined by the sandbox) with its own output thrown away.
// Commands then run as `bash -c` in that environment, so that they get
// what the profile sets (PATH additions of version managers and
// toolchains, which an editor that started yolop may not have passed on)
// while a profile's noise — a version manager that cannot rehash inside
// the sandbox, a banner — is neither in every command's output nor taken
// for a write the command itself attempted, and a slow profile is paid
// once. When the profile fails or hangs, commands run in yolop's own
// environment and the first one says so.
type loginEnv struct {
	env  []string // "K=V", nil when the profile gave nothing usable
	note string   // why env is nil, told once
}

// readLoginEnv runs the login shell in dir with base as its environment.
func (t *Tasks) readLoginEnv(dir string, base []string) loginEnv {
	if t.opts.TmpDir != "" {
		if err := os.MkdirAll(t.opts.TmpDir, 0o700); err != nil {
			return loginEnv{note: fmt.Sprintf("your login shell's environment could not be read (%v)", err)}
		}
	}
	out, err := os.CreateTemp(t.opts.TmpDir, "login-env-")
	if err != nil {
		return loginEnv{note: fmt.Sprintf("your login shell's environment could not be read (%v)", err)}
	}
	defer os.Remove(out.Name())
	defer out.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return loginEnv{note: fmt.Sprintf("your login shell's environment could not be read (%v)", err)}
	}
	defer null.Close()
	p, err := spawn.Start(spawn.Spec{
		Args: []string{"bash", "-lc", "env -0"}, Dir: dir, Env: base,
		Ledger: t.opts.Ledger, Task: "login-env", Command: "bash -lc 'env -0' (reading the login environment)", Owner: os.Getpid(),
		Sandbox: t.opts.Sandbox.Policy,
	}, out, null)
	if err != nil {
		return loginEnv{note: fmt.Sprintf("your login shell could not be started (%v)", err)}
	}
	var st spawn.Status
	select {
	case <-p.Done():
		st = p.Status()
	case <-time.After(loginEnvTimeout):
		p.Kill()
		p.Status()
		return loginEnv{note: fmt.Sprintf("your login shell's profile did not finish within %s", loginEnvTimeout)}
	}
	if st.ExitCode != 0 || st.Err != "" {
		return loginEnv{note: fmt.Sprintf("your login shell's profile failed (exit code %d%s)", st.ExitCode, map[bool]string{true: ", " + st.Err, false: ""}[st.Err != ""])}
	}
	data, err := os.ReadFile(out.Name())
	if err != nil {
		return loginEnv{note: fmt.Sprintf("your login shell's environment could not be read (%v)", err)}
	}
	env := parseEnv0(data)
	if len(env) == 0 {
		return loginEnv{note: "your login shell printed no environment"}
	}
	return loginEnv{env: env}
}

// shellOwn are variables a shell sets for itself; they are not carried
// from the login shell to the commands.
var shellOwn = map[string]bool{"PWD": true, "OLDPWD": true, "SHLVL": true, "_": true}

// parseEnv0 reads `env -0` output.
func parseEnv0(b []byte) []string {
	var env []string
	for _, kv := range bytes.Split(b, []byte{0}) {
		k, _, ok := strings.Cut(string(kv), "=")
		if !ok || k == "" || shellOwn[k] {
			continue
		}
		env = append(env, string(kv))
	}
	return env
}
