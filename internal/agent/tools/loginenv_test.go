package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// loginTasks gives a tool set commands in the login shell's environment,
// remembered in cache ("" for none).
func loginTasks(cache string) func(*Env) {
	return func(e *Env) {
		e.Tasks = NewSessionTasks(e.SpillDir, TaskOptions{Env: EnvLogin, LoginCache: cache})
	}
}

// With env = "login", commands get what the user's login profile sets (PATH, variables), the
// profile runs once per session, its output and the writes it attempts
// outside the sandbox never appear in a command's result (nor as a
// sandbox refusal), and a secret it exports is withheld like any other.
func TestCommandsRunInTheLoginEnvironment(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	bin := filepath.Join(home, "tools-bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "mytool"), []byte("#!/bin/sh\necho mytool-ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	count := filepath.Join(t.TempDir(), "profile-runs")
	profile := "export PATH=\"$HOME/tools-bin:$PATH\"\n" +
		"export FROM_PROFILE=yes\n" +
		"export OPENAI_API_KEY=sk-from-profile-0123456789\n" +
		"echo profile banner\n" +
		"echo profile noise >&2\n" +
		"echo x >> " + count + "\n" +
		"touch /proc/profile-cannot-write 2>&1 || echo \"touch: cannot touch '/proc/x': Permission denied\" >&2\n"
	if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	s, _ := newSet(t, loginTasks(""))
	for i := 0; i < 2; i++ {
		r := mustOK(t, call(t, s, "bash", map[string]any{"command": "echo \"from=$FROM_PROFILE\"; mytool; echo \"key=${OPENAI_API_KEY:-none}\""}))
		for _, want := range []string{"from=yes", "mytool-ran", "key=none"} {
			if !strings.Contains(r.Content, want) {
				t.Errorf("command %d: %q missing:\n%s", i, want, r.Content)
			}
		}
		for _, bad := range []string{"profile banner", "profile noise", "Permission denied", "sandbox", "note:"} {
			if strings.Contains(r.Content, bad) {
				t.Errorf("command %d: %q in the result:\n%s", i, bad, r.Content)
			}
		}
	}
	if b, err := os.ReadFile(count); err != nil || strings.Count(string(b), "x") != 1 {
		t.Errorf("the profile ran %q times (%v), want once", b, err)
	}
}

// A profile that fails leaves commands in yolop's own environment, and the
// first result says why, once.
func TestBrokenLoginProfileIsToldOnce(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte("exit 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, _ := newSet(t, loginTasks(""))
	first := mustOK(t, call(t, s, "bash", map[string]any{"command": "echo one"}))
	second := mustOK(t, call(t, s, "bash", map[string]any{"command": "echo two"}))
	if !strings.Contains(first.Content, "login shell's profile failed (exit code 3)") {
		t.Errorf("first result does not say the profile failed:\n%s", first.Content)
	}
	if strings.Contains(second.Content, "profile") {
		t.Errorf("second result repeats the note:\n%s", second.Content)
	}
}

// A profile that hangs is given up on after the timeout, and remembered:
// a later process of the session does not wait for it again until a
// profile file changes; then the environment it gives is remembered
// instead.
func TestHangingLoginProfileIsRemembered(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	profile := filepath.Join(home, ".bash_profile")
	if err := os.WriteFile(profile, []byte("sleep 30\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(t.TempDir(), "login-env.failed")
	run := func(timeout time.Duration) string {
		root := t.TempDir()
		spill := t.TempDir()
		s, err := New(Env{Root: root, SpillDir: spill, Tasks: NewSessionTasks(spill, TaskOptions{Env: EnvLogin, LoginCache: cache, LoginTimeout: timeout})})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Tasks().StopAll)
		r := mustOK(t, call(t, s, "bash", map[string]any{"command": "echo ran"}))
		if !strings.Contains(r.Content, "ran") {
			t.Fatalf("the command did not run:\n%s", r.Content)
		}
		return r.Content + s.Tasks().LoginProblem()
	}
	first := run(time.Second)
	if strings.Count(first, "did not finish within 1s") != 2 { // the model's note and the host's
		t.Fatalf("first result:\n%s", first)
	}
	// The record answers: the profile is not run (and waited for) again.
	second := run(time.Second)
	if !strings.Contains(second, "remembered from an earlier yolop process") {
		t.Fatalf("second result does not come from the record:\n%s", second)
	}
	// A changed profile is tried again.
	if err := os.WriteFile(profile, []byte("export FIXED=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A profile that finishes is given all the time a loaded machine
	// needs.
	third := run(time.Minute)
	if strings.Contains(third, "profile") {
		t.Fatalf("the fixed profile still reports a problem:\n%s", third)
	}
	// The record now holds the environment the fixed profile gave.
	if b, err := os.ReadFile(cache); err != nil || strings.Contains(string(b), "did not finish") || !strings.Contains(string(b), "FIXED=1") {
		t.Fatalf("the record (%v) still holds the hang:\n%s", err, b)
	}
}

// By default commands inherit the environment yolop was started with: an
// activated virtualenv's bin/ on PATH reaches them (and VIRTUAL_ENV with
// it), a secret-looking variable does not, and the login profile is not
// run at all.
func TestCommandsInheritTheLaunchingEnvironment(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	count := filepath.Join(t.TempDir(), "profile-runs")
	if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte("echo x >> "+count+"\nexport PATH=/nowhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	venv := filepath.Join(t.TempDir(), ".venv")
	if err := os.MkdirAll(filepath.Join(venv, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(venv, "bin", "python"), []byte("#!/bin/sh\necho venv-python\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", filepath.Join(venv, "bin")+":"+os.Getenv("PATH"))
	t.Setenv("VIRTUAL_ENV", venv)
	t.Setenv("SERVICE_TOKEN", "svc-token-0123456789")
	s, _ := newSet(t)
	if p := s.Tasks().EnvPlan(); p.Source != EnvInherit || p.Fallback != "" {
		t.Fatalf("plan %+v", p)
	}
	r := mustOK(t, call(t, s, "bash", map[string]any{"command": "which python; python; echo \"venv=$VIRTUAL_ENV\"; echo \"token=${SERVICE_TOKEN:-none}\""}))
	for _, want := range []string{filepath.Join(venv, "bin", "python"), "venv-python", "venv=" + venv, "token=none"} {
		if !strings.Contains(r.Content, want) {
			t.Errorf("%q missing:\n%s", want, r.Content)
		}
	}
	if _, err := os.Stat(count); err == nil {
		t.Errorf("the login profile ran")
	}
}

// Without a usable PATH (a desktop launcher), commands get the login
// shell's environment, and the plan says why.
func TestNoPathFallsBackToTheLoginShell(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	bin := filepath.Join(home, "tools-bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "mytool"), []byte("#!/bin/sh\necho mytool-ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte("export PATH=\"$HOME/tools-bin:/usr/bin:/bin\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"", "/nonexistent-dir"} {
		t.Setenv("PATH", path)
		s, _ := newSet(t)
		p := s.Tasks().EnvPlan()
		if p.Source != EnvLogin || p.Fallback == "" || !strings.Contains(p.Describe(), p.Fallback) {
			t.Fatalf("PATH=%q: plan %+v", path, p)
		}
		r := mustOK(t, call(t, s, "bash", map[string]any{"command": "mytool"}))
		if !strings.Contains(r.Content, "mytool-ran") {
			t.Errorf("PATH=%q: the login PATH did not reach the command:\n%s", path, r.Content)
		}
	}
}

// The login environment is read once per session: a later process of the
// session (a new Tasks with the same cache) takes it from the record,
// until a profile file changes. The record holds no secret.
func TestLoginEnvIsReadOncePerSession(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	count := filepath.Join(t.TempDir(), "profile-runs")
	profile := filepath.Join(home, ".bash_profile")
	write := func(v string) {
		if err := os.WriteFile(profile, []byte("echo x >> "+count+"\nexport FROM_PROFILE="+v+"\nexport DEPLOY_TOKEN=dep-token-0123456789\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("one")
	cache := filepath.Join(t.TempDir(), "login-env")
	run := func() string {
		s, _ := newSet(t, loginTasks(cache))
		return mustOK(t, call(t, s, "bash", map[string]any{"command": "echo \"from=$FROM_PROFILE token=${DEPLOY_TOKEN:-none}\""})).Content
	}
	for i := 0; i < 3; i++ {
		if got := run(); !strings.Contains(got, "from=one token=none") {
			t.Fatalf("process %d: %s", i, got)
		}
	}
	if b, _ := os.ReadFile(count); strings.Count(string(b), "x") != 1 {
		t.Fatalf("the profile ran %d times for three processes, want once", strings.Count(string(b), "x"))
	}
	if b, err := os.ReadFile(cache); err != nil || strings.Contains(string(b), "dep-token") || !strings.Contains(string(b), "FROM_PROFILE=one") {
		t.Fatalf("record (%v):\n%s", err, b)
	}
	write("two-longer") // another size: a changed stamp even where mtimes are coarse
	if got := run(); !strings.Contains(got, "from=two-longer") {
		t.Fatalf("a changed profile was not read again: %s", got)
	}
}
