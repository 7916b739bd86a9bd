package cli_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/yolop-dev/yolop/internal/cli"
	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/spawn"
	"github.com/yolop-dev/yolop/internal/testenv"
)

// exitFileVar names the file where the yolop command records its exit code,
// so scripts can assert the documented code (testscript's exec only tells
// zero from non-zero).
const exitFileVar = "YOLOP_TEST_EXIT_FILE"

// TestMain makes the test binary double as the real yolop program:
// testscript installs it on $PATH as "yolop" and scripts run it as a
// separate process.
func TestMain(m *testing.M) {
	testenv.NoRaceExitSleep()
	spawn.Main()
	testscript.Main(m, map[string]func(){
		"yolop": func() {
			code := cli.Main()
			if p := os.Getenv(exitFileVar); p != "" {
				_ = os.WriteFile(p, []byte(strconv.Itoa(code)+"\n"), 0o600)
			}
			os.Exit(code)
		},
		"yolop-test-mcp": testMCPServer,
		"gitprobe":       gitProbe,
	})
}

// TestScripts runs testdata/script/*.txtar against the real program.
func TestScripts(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	// Given a built yolop ($YOLOP_BIN, as .ci/run does), the scripts run
	// it; otherwise they run this test binary as yolop.
	wrapper, err := testenv.ScriptYolop(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			if err := setupScript(env); err != nil {
				return err
			}
			if wrapper != "" {
				env.Setenv("PATH", filepath.Dir(wrapper)+string(os.PathListSeparator)+env.Getenv("PATH"))
				env.Setenv("YOLOP_BUILT", os.Getenv(testenv.BinEnv))
			}
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "mcpserver" {
				_, err := os.Stat(everythingServer())
				return err == nil, nil
			}
			if cond == "builtbin" {
				// yolop is $YOLOP_BIN, run through the wrapper.
				return wrapper != "", nil
			}
			if cond == "mount" {
				return canMount(), nil
			}
			if cond == "readonly" {
				// Commands can be given read-only paths (namespaces).
				return spawn.ReadOnlyAvailable() == nil, nil
			}
			if cond == "autogroup" {
				// The kernel shares the processor between sessions first.
				_, err := os.Stat("/proc/self/autogroup")
				return err == nil, nil
			}
			if cond == "landlock" {
				// The strict level's network rules need ABI 4.
				abi, err := spawn.ABI()
				return err == nil && abi >= 4, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode":  cmdExitCode,
			"jsonone":   cmdJSONOne,
			"jsonget":   cmdJSONGet,
			"jsonkeys":  cmdJSONKeys,
			"grab":      cmdGrab,
			"manifest":  cmdManifest,
			"gitstate":  cmdGitState,
			"mkrepo":    cmdMkRepo,
			"smalldisk": cmdSmallDisk,
			"garble":    cmdGarble,
			"waitfor":   cmdWaitFor,
			"waitglob":  cmdWaitGlob,
			"count":     cmdCount,
			"pidalive":  cmdPIDAlive,
		},
	})
}

// setupScript isolates every script: its own home (bash -l reads the
// profile there), data dir, git config, request trace, and no API keys, so
// the offline sim provider is the default.
func setupScript(env *testscript.Env) error {
	work := env.WorkDir
	home := filepath.Join(work, ".home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	gitconfig := filepath.Join(work, ".gitconfig")
	cfg := "[user]\n\tname = yolop test\n\temail = test@example.invalid\n[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
	if err := os.WriteFile(gitconfig, []byte(cfg), 0o600); err != nil {
		return err
	}
	env.Setenv("HOME", home)
	env.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	env.Setenv("XDG_DATA_HOME", filepath.Join(home, ".local", "share"))
	env.Setenv("YOLOP_DATA_DIR", filepath.Join(work, ".data"))
	env.Setenv("DATA", filepath.Join(work, ".data"))
	env.Setenv("YOLOP_TRACE_REQUESTS", filepath.Join(work, ".trace.jsonl"))
	env.Setenv("TRACE", filepath.Join(work, ".trace.jsonl"))
	env.Setenv("GIT_CONFIG_GLOBAL", gitconfig)
	env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	env.Setenv("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
	env.Setenv("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
	env.Setenv(exitFileVar, filepath.Join(work, ".exitcode"))
	env.Setenv("MCP_EVERYTHING", everythingServer())
	port, err := freePort()
	if err != nil {
		return err
	}
	env.Setenv("MCP_PORT", strconv.Itoa(port))
	// No background preparation of spare worktrees unless a script asks:
	// a detached preparer would race the script's cleanup.
	env.Setenv("YOLOP_WORKTREE_SPARES", "0")
	for _, k := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "YOLOP_PROVIDER", "YOLOP_MODEL", "YOLOP_BASE_URL", "YOLOP_FAILPOINT", "NO_COLOR"} {
		env.Setenv(k, "")
	}
	return nil
}

// exitcode N: the last yolop process exited with N.
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: exitcode N")
	}
	p := ts.Getenv(exitFileVar)
	b, err := os.ReadFile(p)
	ts.Check(err)
	got := strings.TrimSpace(string(b))
	if (got == args[0]) == neg {
		ts.Fatalf("yolop exit code %s, want %s%s", got, map[bool]string{true: "not ", false: ""}[neg], args[0])
	}
	// Consume it so that a later assertion cannot read a stale code.
	ts.Check(os.Remove(p))
}

// stdoutJSON parses the last command's stdout, which must be exactly one
// JSON object on one line.
func stdoutJSON(ts *testscript.TestScript) map[string]any {
	out := ts.ReadFile("stdout")
	if !strings.HasSuffix(out, "\n") || strings.Count(out, "\n") != 1 {
		ts.Fatalf("stdout is not exactly one line:\n%s", out)
	}
	var v map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		ts.Fatalf("stdout is not a JSON object: %v\n%s", err, out)
	}
	if dec.More() {
		ts.Fatalf("stdout holds more than one JSON value:\n%s", out)
	}
	return v
}

// jsonone: stdout is exactly one JSON object on one line.
func cmdJSONOne(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: jsonone")
	}
	stdoutJSON(ts)
}

// lookup walks a dotted path (numbers index arrays; "." is the root).
func lookup(v any, path string) (any, bool) {
	if path == "." {
		return v, true
	}
	for _, part := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[part]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// render shows strings raw and everything else as compact JSON.
func render(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// jsonget [-env NAME] PATH [WANT]: the value at PATH in stdout's JSON
// object equals WANT (strings raw, other values as compact JSON); with
// -env it is stored in $NAME. "! jsonget PATH" asserts PATH is absent,
// "! jsonget PATH WANT" that it differs.
func cmdJSONGet(ts *testscript.TestScript, neg bool, args []string) {
	envName := ""
	if len(args) >= 2 && args[0] == "-env" {
		envName, args = args[1], args[2:]
	}
	if len(args) < 1 || len(args) > 2 || (envName != "" && neg) {
		ts.Fatalf("usage: jsonget [-env NAME] PATH [WANT]")
	}
	v, ok := lookup(stdoutJSON(ts), args[0])
	switch {
	case len(args) == 1 && neg:
		if ok {
			ts.Fatalf("%s is present: %s", args[0], render(v))
		}
		return
	case !ok:
		ts.Fatalf("%s is missing in %s", args[0], strings.TrimSpace(ts.ReadFile("stdout")))
	}
	got := render(v)
	if envName != "" {
		ts.Setenv(envName, got)
	}
	if len(args) == 2 && (got == args[1]) == neg {
		ts.Fatalf("%s = %q, want %s%q", args[0], got, map[bool]string{true: "not ", false: ""}[neg], args[1])
	}
}

// jsonkeys PATH KEY...: the object at PATH has exactly these keys.
func cmdJSONKeys(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: jsonkeys PATH KEY...")
	}
	v, ok := lookup(stdoutJSON(ts), args[0])
	m, isObj := v.(map[string]any)
	if !ok || !isObj {
		ts.Fatalf("%s is not an object", args[0])
	}
	var got []string
	for k := range m {
		got = append(got, k)
	}
	want := append([]string(nil), args[1:]...)
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		ts.Fatalf("keys of %s: %v, want %v", args[0], got, want)
	}
}

// grab NAME REGEXP [FILE]: the first submatch of REGEXP in FILE (default
// stdout) is stored in $NAME.
func cmdGrab(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: grab NAME REGEXP [FILE]")
	}
	file := "stdout"
	if len(args) == 3 {
		file = args[2]
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	m := re.FindStringSubmatch(ts.ReadFile(file))
	if len(m) < 2 {
		ts.Fatalf("no match for %q in %s", args[1], file)
	}
	ts.Setenv(args[0], m[1])
}

// manifest [-skip REL]... DIR OUT: one line per file under DIR (without
// .git and the skipped paths): its path, type, permission bits and sha256
// (or a symlink's target).
func cmdManifest(ts *testscript.TestScript, neg bool, args []string) {
	skip := map[string]bool{}
	for len(args) >= 2 && args[0] == "-skip" {
		skip[args[1]] = true
		args = args[2:]
	}
	if neg || len(args) != 2 {
		ts.Fatalf("usage: manifest [-skip REL]... DIR OUT")
	}
	root := ts.MkAbs(args[0])
	m, err := gittest.ReadManifest(root, gittest.ManifestOptions{Dirs: true, Skip: func(rel string) bool {
		return path.Base(rel) == ".git" || skip[rel]
	}})
	ts.Check(err)
	var lines []string
	for rel, e := range m {
		switch e.Type {
		case fs.ModeSymlink:
			lines = append(lines, fmt.Sprintf("%s symlink -> %s", rel, e.Link))
		case fs.ModeDir:
			lines = append(lines, fmt.Sprintf("%s/ dir", rel))
		default:
			lines = append(lines, fmt.Sprintf("%s file %04o %s", rel, e.Perm, e.Hash))
		}
	}
	sort.Strings(lines)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
}

func git(ts *testscript.TestScript, dir string, args ...string) string {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + ts.Getenv("HOME"), "GIT_CONFIG_GLOBAL=" + ts.Getenv("GIT_CONFIG_GLOBAL"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		ts.Fatalf("git %v in %s: %v: %s", args, dir, err, stderr.String())
	}
	return string(out)
}

// gitstate REPO OUT: the bytes a restore must never change: HEAD as
// written, every ref outside refs/yolop/ with its target, and the sha256
// of the real index.
func cmdGitState(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: gitstate REPO OUT")
	}
	dir := ts.MkAbs(args[0])
	var b strings.Builder
	for _, name := range []string{"HEAD", "index"} {
		p := strings.TrimSpace(git(ts, dir, "rev-parse", "--path-format=absolute", "--git-path", name))
		data, err := os.ReadFile(p)
		ts.Check(err)
		sum := sha256.Sum256(data)
		fmt.Fprintf(&b, "%s %s\n", name, hex.EncodeToString(sum[:]))
		if name == "HEAD" {
			fmt.Fprintf(&b, "HEAD content %s", data)
		}
	}
	for _, line := range strings.Split(git(ts, dir, "for-each-ref", "--format=%(objectname) %(refname)"), "\n") {
		if line != "" && !strings.Contains(line, " refs/yolop/") {
			fmt.Fprintln(&b, line)
		}
	}
	fmt.Fprintf(&b, "log %s", git(ts, dir, "log", "--all", "--format=%H %s", "--", "."))
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(b.String()), 0o644))
}

// mkrepo DIR: a git repository with one commit holding README.md and
// .gitignore (ignoring *.log).
func cmdMkRepo(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mkrepo DIR")
	}
	dir := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(dir, 0o755))
	ts.Check(os.WriteFile(filepath.Join(dir, "README.md"), []byte("# project\n"), 0o644))
	ts.Check(os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("*.log\n"), 0o644))
	git(ts, dir, "init", "-q", "-b", "main")
	git(ts, dir, "add", "-A")
	git(ts, dir, "commit", "-q", "-m", "initial")
}

// smalldisk DIR BYTES: mount a tmpfs of BYTES on DIR (created), so that
// filling it makes writes there fail with ENOSPC; unmounted when the script
// ends. Guard it with `[!mount] skip '…'`: mounting needs root with
// CAP_SYS_ADMIN.
func cmdSmallDisk(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: smalldisk DIR BYTES")
	}
	dir := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(dir, 0o755))
	ts.Check(mountTmpfs(dir, args[1]))
	ts.Defer(func() {
		if err := unmount(dir); err != nil {
			ts.Logf("unmount %s: %v", dir, err)
		}
	})
}

// canMount reports whether this process may mount a tmpfs.
func canMount() bool {
	dir, err := os.MkdirTemp("", "mountcheck-")
	if err != nil {
		return false
	}
	defer os.Remove(dir)
	if mountTmpfs(dir, "65536") != nil {
		return false
	}
	return unmount(dir) == nil
}

// garble FILE N: replace line N (1-based) of FILE with bytes that are not
// JSON, keeping the line count.
func cmdGarble(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: garble FILE N")
	}
	p := ts.MkAbs(args[0])
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	b, err := os.ReadFile(p)
	ts.Check(err)
	lines := strings.SplitAfter(string(b), "\n")
	if n < 1 || n >= len(lines) {
		ts.Fatalf("%s has no line %d followed by another", args[0], n)
	}
	lines[n-1] = "{\"v\":1,\"type\":\x00garbled\n"
	ts.Check(os.WriteFile(p, []byte(strings.Join(lines, "")), 0o600))
}

// waitfor FILE TEXT: wait (up to a minute) until FILE contains TEXT. Used
// to know that a background process has reached a point, not to time it.
func cmdWaitFor(ts *testscript.TestScript, neg bool, args []string) {
	if !neg && len(args) == 2 && args[0] == "-port" {
		// waitfor -port N: something listens on 127.0.0.1:N.
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if c, err := net.Dial("tcp", "127.0.0.1:"+args[1]); err == nil {
				c.Close()
				return
			}
		}
		ts.Fatalf("nothing listens on port %s", args[1])
	}
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitfor FILE TEXT | waitfor -port N")
	}
	p := ts.MkAbs(args[0])
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(args[1])) {
			return
		}
	}
	ts.Fatalf("%s never contained %q", args[0], args[1])
}

// waitglob [!] PATTERN: wait until PATTERN matches some path (with !: no
// path), for at most a minute.
func cmdWaitGlob(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: waitglob [!] PATTERN")
	}
	p := ts.MkAbs(args[0])
	var m []string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var err error
		m, err = filepath.Glob(p)
		ts.Check(err)
		if (len(m) > 0) != neg {
			return
		}
	}
	ts.Fatalf("%s: matches %v after a minute", args[0], m)
}

// count N TEXT FILE: FILE contains TEXT exactly N times.
func cmdCount(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: count N TEXT FILE")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	if got := strings.Count(ts.ReadFile(args[2]), args[1]); got != want {
		ts.Fatalf("%s contains %q %d times, want %d", args[2], args[1], got, want)
	}
}

// everythingServer is the official MCP test server that .ci/run installs
// (cd test/mcp && npm ci).
func everythingServer() string {
	p, err := filepath.Abs(filepath.Join("..", "..", "test", "mcp", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	if err != nil {
		return ""
	}
	return p
}

// freePort finds a loopback port nobody listens on.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
