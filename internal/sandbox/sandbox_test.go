package sandbox

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/spawn"
)

func TestParseLevel(t *testing.T) {
	for in, want := range map[string]Level{"": Write, "off": Off, "WRITE": Write, " strict ": Strict} {
		if got, err := ParseLevel(in); err != nil || got != want {
			t.Errorf("ParseLevel(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseLevel("paranoid"); !errors.Is(err, ErrLevel) {
		t.Errorf("ParseLevel(paranoid): %v", err)
	}
}

func TestPlanFallback(t *testing.T) {
	t.Setenv(ABIEnv, "0")
	st, err := Plan(Config{Level: string(Strict), AllowUnconfined: true}, Layout{Top: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if st.InForce != Off || st.Policy != nil || !strings.Contains(st.Warning(), "Landlock is not available") {
		t.Fatalf("%+v %q", st, st.Warning())
	}
	st, err = Plan(Config{Level: string(Write)}, Layout{Top: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if st.Refused == "" || !strings.Contains(st.Warning(), "allow_unconfined is false") {
		t.Fatalf("%+v", st)
	}
	if _, err := Plan(Config{Ports: []int{70000}}, Layout{}); err == nil {
		t.Fatal("port 70000 accepted")
	}
}

func TestPolicyRoots(t *testing.T) {
	t.Setenv(ABIEnv, "")
	st := Status{InForce: Write, Caches: []string{"/c/go-build"}}
	lay := Layout{Top: "/w/top", TmpDir: "/d/tmp", CommonDir: "/r/.git", AdminDir: "/r/.git/worktrees/top"}
	st.Policy = buildPolicy(st, lay)
	for _, ok := range []string{"/w/top/a/b", "/d/tmp/x", "/c/go-build/00/x", "/r/.git/objects/ab/cd", "/r/.git/refs/heads/yolop/s", "/r/.git/logs/refs/heads/yolop/s", "/r/.git/worktrees/top/index", "/dev/null"} {
		if !st.Allowed(ok) {
			t.Errorf("%s refused", ok)
		}
	}
	for _, no := range []string{"/w", "/w/topx", "/r/.git/HEAD", "/r/.git/config", "/r/.git/packed-refs", "/r/.git/index", "/r/.git/refs/heads/main", "/r/.git/hooks/pre-commit", "/r/.git/worktrees/other/HEAD", "/home/u/.bashrc"} {
		if st.Allowed(no) {
			t.Errorf("%s allowed", no)
		}
	}
}

func TestDefaultCaches(t *testing.T) {
	env := map[string]string{"HOME": "/h", "GOMODCACHE": "/m"}
	got := DefaultCaches(func(k string) string { return env[k] })
	for _, want := range []string{filepath.Join("/h", ".cache", "go-build"), "/m", "/h/.npm", "/h/.cache/pip"} {
		if !slices.Contains(got, want) {
			t.Errorf("%v lacks %s", got, want)
		}
	}
}

// TestReadOnlyPlan: read-only paths go into the policy when the machine
// can enforce them, and Status says why not otherwise; either way the note
// and the warning can tell a read-only path from a writable one.
func TestReadOnlyPlan(t *testing.T) {
	t.Setenv(ABIEnv, "")
	abi, _ := spawn.ABI()
	if abi < WriteABI {
		t.Skipf("Landlock ABI %d", abi)
	}
	top := t.TempDir()
	git := filepath.Join(top, ".git")
	lay := Layout{Top: top, TmpDir: t.TempDir(), ReadOnly: []string{git + "/"}}
	if _, err := Plan(Config{}, Layout{Top: top, ReadOnly: []string{".git"}}); err == nil || !strings.Contains(err.Error(), "not absolute") {
		t.Fatalf("a relative read-only path: %v", err)
	}
	if err := spawn.ReadOnlyAvailable(); err == nil {
		st, err := Plan(Config{}, lay)
		if err != nil {
			t.Fatal(err)
		}
		if !st.ReadOnly.Enforced || st.ReadOnly.Why != "" || !slices.Equal(st.Policy.ReadOnly, []string{git}) || st.Warning() != "" {
			t.Fatalf("enforced: %+v %+v %q", st.ReadOnly, st.Policy, st.Warning())
		}
		if st.Allowed(git+"/config") || !st.Allowed(top+"/src/a.go") || !st.Allowed(top+"/.gitignore") {
			t.Fatal("Allowed ignores the read-only path")
		}
		if d, ok := st.ReadOnlyAt(git + "/hooks/pre-commit"); !ok || d != git {
			t.Fatalf("ReadOnlyAt: %q %v", d, ok)
		}
		if !strings.Contains(st.Describe(), "read-only for commands: "+git) {
			t.Fatalf("Describe: %s", st.Describe())
		}
	}
	// The kernel refuses the namespaces.
	saved := readOnlyAvailable
	readOnlyAvailable = func() error {
		return errors.New("the kernel refused a user and mount namespace for commands: operation not permitted")
	}
	defer func() { readOnlyAvailable = saved }()
	st, err := Plan(Config{}, lay)
	if err != nil {
		t.Fatal(err)
	}
	if st.ReadOnly.Enforced || len(st.Policy.ReadOnly) != 0 || !strings.Contains(st.ReadOnly.Why, "operation not permitted") {
		t.Fatalf("unavailable: %+v %+v", st.ReadOnly, st.Policy)
	}
	if w := st.Warning(); !strings.Contains(w, git+" is not read-only for commands (the kernel refused") {
		t.Fatalf("warning: %q", w)
	}
	if _, ok := st.ReadOnlyAt(git + "/config"); ok || !st.Allowed(git+"/config") {
		t.Fatal("an unenforced read-only path is reported as enforced")
	}
	// No sandbox, no read-only paths: said so.
	st, err = Plan(Config{Level: string(Off)}, lay)
	if err != nil || st.ReadOnly.Enforced || st.ReadOnly.Why != "the sandbox is off" {
		t.Fatalf("off: %+v %v", st.ReadOnly, err)
	}
	t.Setenv(ABIEnv, "0")
	st, err = Plan(Config{AllowUnconfined: true}, lay)
	if err != nil || st.ReadOnly.Enforced || !strings.Contains(st.ReadOnly.Why, "the sandbox is not in force: Landlock is not available") {
		t.Fatalf("no Landlock: %+v %v", st.ReadOnly, err)
	}
}
