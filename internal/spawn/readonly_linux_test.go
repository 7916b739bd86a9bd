package spawn

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// roProbe records in results.txt whether each probed command succeeded.
const roProbe = `probe() { if ( eval "$2" ) >/dev/null 2>err.tmp; then echo "$1 ok" >> results.txt; else echo "$1 refused: $(head -c 200 err.tmp | tr '\n' ' ')" >> results.txt; fi; rm -f err.tmp; }
`

// testReadOnly runs an attacker's commands under the sandbox stage with
// dir/.git read-only and dir writable, in dir (which the current user
// owns), and checks what each could do.
func testReadOnly(t *testing.T, dir string) {
	if abi, _ := ABI(); abi < 3 {
		t.Skipf("Landlock ABI %d; the sandbox stage needs 3", abi)
	}
	if err := ReadOnlyAvailable(); err != nil {
		t.Skipf("read-only paths are unavailable here: %v", err)
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "src/a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitDir := filepath.Join(dir, ".git")
	before := treeDigest(t, gitDir)
	pol := &Policy{Level: "write", MinABI: 3, WriteDirs: []string{dir, "/dev/pts", "/dev/shm"},
		WriteFiles: []string{"/dev/null"}, ReadOnly: []string{gitDir}}
	script := roProbe + strings.Join([]string{
		`echo "uid $(id -u) gid $(id -g)" >> results.txt`,
		`probe read "cat .git/config"`,
		`probe worktree "echo b > src/b.txt"`,
		`probe gitconfig "echo '[x]' >> .git/config"`,
		`probe gitnew "touch .git/new"`,
		`probe hook "echo evil > .git/hooks/pre-commit"`,
		`probe rmconfig "rm -f .git/config"`,
		`probe mvgit "mv .git gone"`,
		`probe gitconfigcmd "git config user.name someone"`,
		`probe gitcommit "git add src && git -c user.name=a -c user.email=a@b commit -qm agent"`,
		`probe umount "umount .git"`,
		`probe lazyumount "umount -l .git"`,
		`probe remount "mount -o remount,bind,rw .git"`,
		`probe nestedumount "unshare -rm sh -c 'umount .git'"`,
		`probe nestedremount "unshare -rm sh -c 'mount -o remount,bind,rw .git && echo x >> .git/config'"`,
		// Without a uid map (which Landlock keeps it from writing) a
		// nested user namespace still holds every capability in it: the
		// mount calls are Landlock's to refuse.
		`probe capumount "unshare -Um --propagation unchanged sh -c 'umount .git'"`,
		`probe capremount "unshare -Um --propagation unchanged sh -c 'mount -o remount,bind,rw .git && echo x >> .git/config'"`,
		`probe capbind "unshare -Um --propagation unchanged sh -c 'mount --bind src .git && echo x >> .git/config'"`,
		// The original mount, through an unconfined process's root: the
		// test's and the helper's (the command's parent).
		`probe proctest "echo x >> /proc/` + strconv.Itoa(os.Getpid()) + `/root` + gitDir + `/config"`,
		`probe prochelper "echo x >> /proc/$PPID/root` + gitDir + `/config"`,
	}, "\n")
	var out bytes.Buffer
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _, _ = io.Copy(&out, pr); close(done) }()
	p, err := Start(Spec{Args: []string{"bash", "-c", script}, Dir: dir,
		Env: append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1"), Sandbox: pol}, pw, pw)
	pw.Close()
	if err != nil {
		t.Fatal(err)
	}
	st := p.Status()
	<-done
	if st.ExitCode != 0 {
		t.Fatalf("the command: %+v\n%s", st, out.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "results.txt"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("results:\n%s", b)
	res := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(l, " ")
		res[k] = v
	}
	// The command runs as the user, not as a namespace's root.
	if want := "" + strconv.Itoa(os.Geteuid()) + " gid " + strconv.Itoa(os.Getegid()); res["uid"] != want {
		t.Errorf("the command ran as uid %s, want %s", res["uid"], want)
	}
	for _, ok := range []string{"read", "worktree"} {
		if res[ok] != "ok" {
			t.Errorf("%s: %s, want ok", ok, res[ok])
		}
	}
	for _, no := range []string{"gitconfig", "gitnew", "hook", "rmconfig", "mvgit", "gitconfigcmd", "gitcommit", "umount", "lazyumount", "remount", "nestedumount", "nestedremount", "capumount", "capremount", "capbind", "proctest", "prochelper"} {
		if !strings.HasPrefix(res[no], "refused") {
			t.Errorf("%s: %s, want refused", no, res[no])
		}
	}
	for _, no := range []string{"gitconfig", "gitnew", "hook", "rmconfig"} {
		if !strings.Contains(res[no], "Read-only file system") {
			t.Errorf("%s was refused otherwise than by the read-only mount: %s", no, res[no])
		}
	}
	if got := treeDigest(t, gitDir); got != before {
		t.Errorf(".git changed:\n%s\nwas\n%s", got, before)
	}
	// The mount was the command's own: here .git is writable still.
	if err := os.WriteFile(filepath.Join(gitDir, "yolop-test"), nil, 0o644); err != nil {
		t.Errorf("the read-only mount leaked out of the command's namespace: %v", err)
	}
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err != nil || bytes.Contains(mi, []byte(gitDir)) {
		t.Errorf("the test's mount table names %s (%v)", gitDir, err)
	}
}

// treeDigest lists every file under dir with its content.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + " " + fi.Mode().String())
		if fi.Mode().IsRegular() {
			c, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.WriteString(" " + strconv.Quote(string(c)))
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestReadOnlyPaths runs the attack as whoever runs the tests (on this
// machine root, which gets a mount namespace alone).
func TestReadOnlyPaths(t *testing.T) {
	if os.Getenv(unprivilegedDirEnv) != "" {
		t.Skip("the unprivileged leg runs TestReadOnlyPathsUnprivileged only")
	}
	testReadOnly(t, t.TempDir())
}

// unprivilegedDirEnv hands the unprivileged leg its directory.
const unprivilegedDirEnv = "SPAWN_TEST_RO_DIR"

// TestReadOnlyPathsUnprivileged runs the attack as uid 65534, which gets a
// user namespace too: as root, by running this test binary again as 65534.
func TestReadOnlyPathsUnprivileged(t *testing.T) {
	if dir := os.Getenv(unprivilegedDirEnv); dir != "" || os.Geteuid() != 0 {
		if dir == "" {
			dir = t.TempDir()
		}
		testReadOnly(t, dir)
		return
	}
	exe, work := nobodyCopy(t)
	cmd := exec.Command(exe, "-test.run=^TestReadOnlyPathsUnprivileged$", "-test.v", "-test.count=1")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), unprivilegedDirEnv+"="+work, "HOME="+work, "TMPDIR="+work)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	t.Logf("as uid 65534:\n%s", out)
	if err != nil {
		t.Fatalf("the unprivileged leg failed: %v", err)
	}
	if bytes.Contains(out, []byte("--- SKIP")) {
		t.Skip("the unprivileged leg skipped")
	}
}

// nobodyCopy copies the test binary where uid 65534 can run it and makes a
// directory 65534 owns.
func nobodyCopy(t *testing.T) (exe, work string) {
	t.Helper()
	bin, err := os.MkdirTemp("", "yolop-spawn-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	work, err = os.MkdirTemp("", "yolop-spawn-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe = filepath.Join(bin, "spawn.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{bin, work} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(work, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	return exe, work
}

// noUserNSEnv marks the leg of TestReadOnlyRefused that runs in a user
// namespace whose user.max_user_namespaces is 0.
const noUserNSEnv = "SPAWN_TEST_NO_USERNS"

// TestReadOnlyRefused: where the kernel refuses user namespaces to a
// non-root user, ReadOnlyAvailable says so, naming the setting. The test
// (as root) makes such a machine: a user namespace mapping root and 65534
// whose own user.max_user_namespaces is 0, in which it becomes 65534.
func TestReadOnlyRefused(t *testing.T) {
	if os.Getenv(noUserNSEnv) != "" {
		if err := os.WriteFile("/proc/sys/user/max_user_namespaces", []byte("0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Setgroups(nil); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Setgid(65534); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Setuid(65534); err != nil {
			t.Fatal(err)
		}
		err := runProbe()
		if err == nil || !strings.Contains(err.Error(), "the kernel refused a user and mount namespace for commands") || !strings.Contains(err.Error(), "user.max_user_namespaces is 0") {
			t.Fatalf("probe: %v", err)
		}
		t.Logf("probe: %v", err)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("making a machine without user namespaces needs root")
	}
	exe, work := nobodyCopy(t)
	cmd := exec.Command(exe, "-test.run=^TestReadOnlyRefused$", "-test.v", "-test.count=1")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), noUserNSEnv+"=1", "TMPDIR="+work)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: 65534, HostID: 65534, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: 65534, HostID: 65534, Size: 1}},
		GidMappingsEnableSetgroups: true,
	}
	out, err := cmd.CombinedOutput()
	t.Logf("in a user namespace without user namespaces:\n%s", out)
	if err != nil {
		t.Fatalf("the leg failed: %v", err)
	}
}

// The probe gets none of yolop's environment (its keys) but the race
// runtime's options, so a race-built binary's probe does not sleep at exit.
func TestProbeEnvKeepsOnlyGORACE(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "secret")
	t.Setenv("GORACE", "atexit_sleep_ms=0 halt_on_error=1")
	got := strings.Join(probeEnv(), "\n")
	want := helperEnv + "=1\nGORACE=atexit_sleep_ms=0 halt_on_error=1"
	if got != want {
		t.Fatalf("probe environment:\n%s\nwant:\n%s", got, want)
	}
	os.Unsetenv("GORACE")
	if got := probeEnv(); len(got) != 1 || got[0] != helperEnv+"=1" {
		t.Fatalf("probe environment without GORACE: %q", got)
	}
}

// A success is kept under the conditions it was found in, and a later
// process with the same conditions does not try again; a failure, other
// conditions or a damaged file make it try.
func TestProbeCacheKeepsOnlySuccess(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "probe", "read-only")
	key := "k1"
	runs := 0
	var result error
	run := func() error { runs++; return result }
	probe := func() error { return cachedProbe(cache, func() string { return key }, run) }

	result = errors.New("the kernel refused a user and mount namespace")
	if err := probe(); err == nil || runs != 1 {
		t.Fatalf("a failed try: err %v after %d runs", err, runs)
	}
	if _, err := os.Stat(cache); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failure was kept: %v", err)
	}
	if err := probe(); err == nil || runs != 2 {
		t.Fatalf("a failure was not tried again: err %v after %d runs", err, runs)
	}
	result = nil
	if err := probe(); err != nil || runs != 3 {
		t.Fatalf("a success: err %v after %d runs", err, runs)
	}
	if err := probe(); err != nil || runs != 3 {
		t.Fatalf("a kept success was tried again: err %v after %d runs", err, runs)
	}
	key = "k2" // a sysctl changed, a new binary, a reboot
	result = errors.New("refused now")
	if err := probe(); err == nil || runs != 4 {
		t.Fatalf("other conditions: err %v after %d runs", err, runs)
	}
	result = nil
	if err := probe(); err != nil || runs != 5 {
		t.Fatalf("err %v after %d runs", err, runs)
	}
	if err := os.WriteFile(cache, []byte("yolop-read-only-probe v1 k2 but torn"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := probe(); err != nil || runs != 6 {
		t.Fatalf("a damaged cache was trusted: err %v after %d runs", err, runs)
	}
	// No key (a /proc file unreadable): always tried, nothing kept.
	key = ""
	if err := probe(); err != nil || runs != 7 {
		t.Fatalf("without a key: err %v after %d runs", err, runs)
	}
	if got := readProbeCache(cache); got != "k2" {
		t.Fatalf("the cache holds %q", got)
	}
	// The real key is stable within a process and names the binary.
	if k := probeKey(); k == "" || k != probeKey() {
		t.Fatalf("probeKey %q is not stable", k)
	}
}
