package sandbox

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseLevel(t *testing.T) {
	for in, want := range map[string]string{"": Write, "off": Off, "WRITE": Write, " strict ": Strict} {
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
	st, err := Plan(Config{Level: Strict, AllowUnconfined: true}, Layout{Top: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if st.InForce != Off || st.Policy != nil || !strings.Contains(st.Warning(), "Landlock is not available") {
		t.Fatalf("%+v %q", st, st.Warning())
	}
	st, err = Plan(Config{Level: Write}, Layout{Top: t.TempDir()})
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
