package tools

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/yolop-dev/yolop/internal/fsutil"
	"github.com/yolop-dev/yolop/internal/secret"
	"github.com/yolop-dev/yolop/internal/spawn"
)

// loginEnvTimeout bounds how long the user's login profile may take to
// give its environment.
const loginEnvTimeout = 15 * time.Second

// loginEnv is the environment of the user's login shell ([tools] env =
// "login", or the fallback of a yolop started without a usable PATH; see
// PlanEnv), read once per session: `bash -lc 'env -0'`, run like a
// command (through the spawn helper, confined by the sandbox) with its
// own output thrown away. Commands then run as `bash -c` in that
// environment, so that they get what the profile sets (PATH additions of
// version managers and toolchains, which a desktop launcher that started
// yolop may not have passed on) while a profile's noise — a version
// manager that cannot rehash inside the sandbox, a banner — is neither in
// every command's output nor taken for a write the command itself
// attempted, and a slow profile is paid once per session. When the
// profile fails or hangs, commands run in yolop's own environment and the
// first one says so.
type loginEnv struct {
	env  []string // "K=V", nil when the profile gave nothing usable
	note string   // why env is nil, told once
	hung bool     // the profile did not finish in time
}

// profileFiles are the files a login bash reads: a change to any of them
// makes a remembered failure stale.
func profileFiles(home string) []string {
	return []string{"/etc/profile", filepath.Join(home, ".bash_profile"), filepath.Join(home, ".bash_login"), filepath.Join(home, ".profile"), filepath.Join(home, ".bashrc")}
}

// profileStamp identifies the current state of the profile files.
func profileStamp(base []string) string {
	home := ""
	for _, kv := range base {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	var b strings.Builder
	for _, f := range profileFiles(home) {
		if fi, err := os.Stat(f); err == nil {
			fmt.Fprintf(&b, "%s %d %d\n", f, fi.Size(), fi.ModTime().UnixNano())
		} else {
			fmt.Fprintf(&b, "%s -\n", f)
		}
	}
	return b.String()
}

// loginRecord is what LoginCache holds: the login environment an earlier
// process of the session read (secret-looking variables already withheld,
// so the file holds no more than the commands get), or why it could not
// be read when the profile hung, with the stamp of what it was read for.
type loginRecord struct {
	Stamp string   `json:"stamp"`
	Env   []string `json:"env,omitempty"`
	Note  string   `json:"note,omitempty"`
}

// loginStamp identifies what a login environment is read from: the
// profile files (their paths name HOME) and the variables passed through
// although secret. The environment yolop was started with is left out:
// it changes from one process to the next (a terminal's, a variable
// exported since), while the session keeps the environment it read.
func loginStamp(base, pass []string) string {
	h := sha256.New()
	io.WriteString(h, profileStamp(base))
	io.WriteString(h, "pass\x00"+strings.Join(pass, "\x00"))
	return hex.EncodeToString(h.Sum(nil))
}

// readLoginEnv reads the login environment, once per session: a later
// process of the session takes what an earlier one read (t.opts.
// LoginCache) while the profile files are unchanged, and also remembers
// a profile that hangs (waiting again
// in every process would cost every print-mode turn the whole timeout).
func (t *Tasks) readLoginEnv(dir string, base []string) loginEnv {
	stamp := loginStamp(base, t.opts.PassEnv)
	if t.opts.LoginCache != "" {
		if b, err := os.ReadFile(t.opts.LoginCache); err == nil {
			var rec loginRecord
			if json.Unmarshal(b, &rec) == nil && rec.Stamp == stamp {
				if len(rec.Env) > 0 {
					return loginEnv{env: rec.Env}
				}
				if rec.Note != "" {
					return loginEnv{note: rec.Note + " (remembered from an earlier yolop process; it is tried again when a profile file changes)"}
				}
			}
		}
	}
	le := t.runLoginEnv(dir, base)
	if t.opts.LoginCache != "" {
		rec := loginRecord{Stamp: stamp}
		switch {
		case le.env != nil:
			rec.Env, _ = secret.FilterEnv(le.env, t.opts.PassEnv)
		case le.hung:
			rec.Note = le.note
		}
		if rec.Env == nil && rec.Note == "" {
			if err := os.Remove(t.opts.LoginCache); err != nil && !errors.Is(err, fs.ErrNotExist) {
				le.note = strings.TrimSpace(le.note + fmt.Sprintf(" (a stale record %s could not be removed: %v)", t.opts.LoginCache, err))
			}
		} else if b, err := json.Marshal(rec); err != nil {
			le.note = strings.TrimSpace(le.note + fmt.Sprintf(" (it could not be remembered for the session's next process: %v)", err))
		} else if err := fsutil.WriteFileAtomic(t.opts.LoginCache, b, 0o600); err != nil {
			le.note = strings.TrimSpace(le.note + fmt.Sprintf(" (it could not be remembered for the session's next process: %v)", err))
		}
	}
	return le
}

// runLoginEnv runs the login shell in dir with base as its environment.
func (t *Tasks) runLoginEnv(dir string, base []string) loginEnv {
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
		Args: []string{t.plan.Bash, "-lc", "env -0"}, Dir: dir, Env: base,
		Ledger: t.opts.Ledger, Task: "login-env", Command: "bash -lc 'env -0' (reading the login environment)", Owner: os.Getpid(),
		Sandbox: t.opts.Sandbox.Policy, Seal: t.opts.Sandbox.Seals(),
	}, out, null)
	if err != nil {
		return loginEnv{note: fmt.Sprintf("your login shell could not be started (%v)", err)}
	}
	timeout := t.opts.LoginTimeout
	if timeout <= 0 {
		timeout = loginEnvTimeout
	}
	var st spawn.Status
	select {
	case <-p.Done():
		st = p.Status()
	case <-time.After(timeout):
		p.Kill()
		p.Status()
		return loginEnv{note: fmt.Sprintf("your login shell's profile did not finish within %s", timeout), hung: true}
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
