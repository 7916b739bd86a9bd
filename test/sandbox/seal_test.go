package sandbox

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
)

// newEnvAs is newEnv for another user: everything (a copy of the binary,
// the git configuration, home, data dir and repository) lives in a
// directory that user owns, and yolop runs with its uid and gid.
func newEnvAs(t *testing.T, uid, gid int) *env {
	t.Helper()
	base, err := os.MkdirTemp("", "yolop-as-"+strconv.Itoa(uid)+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, home: filepath.Join(base, "home"), data: filepath.Join(base, "data"), repo: gittest.NewRepoIn(t, base),
		bin: filepath.Join(base, "yolop"), cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	for _, d := range []string{".cache/go-build", ".config/yolop"} {
		if err := os.MkdirAll(filepath.Join(e.home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for src, dst := range map[string]string{bin: e.bin, gitCfg: filepath.Join(base, "gitconfig")} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.extra = []string{"GIT_CONFIG_GLOBAL=" + filepath.Join(base, "gitconfig")}
	if err := filepath.Walk(base, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	}); errors.Is(err, syscall.EINVAL) {
		// A user namespace that maps root alone.
		t.Skipf("uid %d is not mapped here: %v", uid, err)
	} else if err != nil {
		t.Fatal(err)
	}
	return e
}

// sealProbe is the attack: the agent's command looks for the provider key
// in the environment and memory of yolop (its helper's parent), in its
// helper's environment, and in every process it can read, and prints what
// it finds base64-encoded, so that the plain-text redaction of the tool
// result does not catch it.
const sealProbe = probe + `H=$PPID; Y=$(awk '{print $4}' /proc/$H/stat); ` +
	`probe helper_environ "cat /proc/$H/environ"; probe yolop_environ "cat /proc/$Y/environ"; ` +
	`probe helper_mem "exec 3</proc/$H/mem"; probe yolop_mem "exec 3</proc/$Y/mem"; ` +
	`probe yolop_maps "cat /proc/$Y/maps"; ` +
	`echo "capbnd $(awk '/^CapBnd/ {print $2}' /proc/self/status)" >> results.txt; ` +
	`echo "capeff $(awk '/^CapEff/ {print $2}' /proc/self/status)" >> results.txt; ` +
	`echo "nonewprivs $(awk '/^NoNewPrivs/ {print $2}' /proc/self/status)" >> results.txt; ` +
	`for f in /proc/[0-9]*/environ; do v=$(tr '\0' '\n' < $f 2>/dev/null | sed -n 's/^YOLOP_SEAL_TEST_KEY=//p'); ` +
	`[ -n "$v" ] && printf %s "$v" | base64 -w0 >> leak.b64 && echo >> leak.b64; done; cat leak.b64 2>/dev/null; true`

// TestKeysThroughProc: the agent's command cannot read the environment or
// memory of yolop, nor find the key in its helper, as root and as an
// unprivileged user,
// with the sandbox in force and when the kernel cannot apply it (commands
// then run unconfined), so the provider key never reaches the tool
// result, events.jsonl, the request trace or sessions search in any
// encoding. As root, the command holds none of CAP_SYS_ADMIN, CAP_PERFMON
// and CAP_SYS_PTRACE, not even in its bounding set.
func TestKeysThroughProc(t *testing.T) {
	needABI(t, 3)
	if os.Getuid() != 0 {
		t.Skip("runs yolop as root and as uid 65534: needs root")
	}
	const key = "sk-seal-e2e-0123456789abcdefghij"
	for _, tc := range []struct {
		name     string
		uid, gid int
		landlock bool
	}{
		{"root", 0, 0, true},
		{"uid 65534", 65534, 65534, true},
		{"root without landlock", 0, 0, false},
		{"uid 65534 without landlock", 65534, 65534, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var e *env
			if tc.uid == 0 {
				e = newEnv(t, "")
			} else {
				e = newEnvAs(t, tc.uid, tc.gid)
			}
			trace := filepath.Join(e.data, "trace.jsonl")
			e.extra = append(e.extra, "YOLOP_SEAL_TEST_KEY="+key, "YOLOP_TRACE_REQUESTS="+trace)
			if !tc.landlock {
				e.extra = append(e.extra, "YOLOP_LANDLOCK_ABI=0")
			}
			e.turn(nil, sealProbe)
			e.turn(nil, "true") // the first result goes to the model again
			res := e.results()
			for _, no := range []string{"yolop_environ", "yolop_mem", "yolop_maps"} {
				if !strings.HasPrefix(res[no], "refused") {
					t.Errorf("%s: %s, want refused", no, res[no])
				}
			}
			// The helper holds only the command's own environment: as the
			// same user without Landlock the command may read it, and the
			// scan below proves the key is not there.
			if leak, err := os.ReadFile(filepath.Join(e.root, "leak.b64")); err == nil && len(bytes.TrimSpace(leak)) > 0 {
				t.Errorf("the command found the key in /proc: %s", leak)
			}
			// An unprivileged user cannot shrink the bounding set; it holds
			// no capability, and no_new_privs keeps an executed program
			// from gaining one.
			sets := []string{"capeff"}
			if tc.uid == 0 {
				sets = append(sets, "capbnd")
			} else if tc.landlock && res["nonewprivs"] != "1" {
				t.Errorf("no_new_privs: %q, want 1", res["nonewprivs"])
			}
			for _, set := range sets {
				v, err := strconv.ParseUint(strings.TrimSpace(res[set]), 16, 64)
				if err != nil {
					t.Fatalf("%s %q: %v", set, res[set], err)
				}
				for _, c := range []struct {
					name string
					bit  uint
				}{{"CAP_SYS_PTRACE", 19}, {"CAP_SYS_ADMIN", 21}, {"CAP_PERFMON", 38}} {
					if v&(1<<c.bit) != 0 {
						t.Errorf("the command holds %s in its %s set (%s)", c.name, set, res[set])
					}
				}
			}
			enc := base64.StdEncoding.EncodeToString([]byte(key))
			logs := map[string]string{"events.jsonl": filepath.Join(e.data, "sessions", e.sid, "events.jsonl"), "trace": trace}
			for name, p := range logs {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range []string{key, enc} {
					if bytes.Contains(b, []byte(v)) {
						t.Errorf("%s holds the key (%s)", name, v)
					}
				}
			}
			// sessions search reads every session's logs.
			search := exec.Command(e.binOr(), "sessions", "search", enc)
			search.Dir, search.Env = e.repo, e.environ()
			if e.cred != nil {
				search.SysProcAttr = &syscall.SysProcAttr{Credential: e.cred}
			}
			if out, err := search.CombinedOutput(); err != nil || !bytes.HasPrefix(out, []byte("No matches for")) {
				t.Errorf("sessions search finds the encoded key (%v):\n%s", err, out)
			}
		})
	}
}

func (e *env) binOr() string {
	if e.bin != "" {
		return e.bin
	}
	return bin
}
