// Package sandbox drives the real yolop binary on the real kernel to show
// that the tools' commands can write only where a rewind can undo them
// (plus the declared caches), that git still works on the session branch,
// and that yolop says what is not confined when the sandbox is off or
// unavailable.
//
//	go test ./test/sandbox -v
package sandbox

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
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/spawn"
	"github.com/yolop-dev/yolop/internal/testenv"
)

var (
	bin     string
	gitCfg  string
	kernABI int
)

func TestMain(m *testing.M) {
	testenv.NoRaceExitSleep()
	// The test binary doubles as the attacker's program that a sandboxed
	// background task runs (see swap_test.go).
	if len(os.Args) > 1 && os.Args[1] == swapArg {
		os.Exit(swapMain(os.Args[2:]))
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "yolop-sandbox-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	if bin, err = testenv.Yolop(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	gittest.IsolateProcess(dir)
	gitCfg = os.Getenv("GIT_CONFIG_GLOBAL")
	kernABI, _ = spawn.ABI()
	return m.Run()
}

func needABI(t *testing.T, n int) {
	t.Helper()
	if kernABI < n {
		t.Skipf("this kernel has Landlock ABI %d; the test needs %d (Linux 6.7 or later with Landlock enabled)", kernABI, n)
	}
}

// env is one user's machine: a home with caches, a repository, a data dir.
type env struct {
	t                      *testing.T
	home, repo, data, root string
	sid                    string
	extra                  []string
	// bin and cred, when set, run another copy of the binary as another
	// user (see newEnvAs).
	bin  string
	cred *syscall.Credential
}

func newEnv(t *testing.T, settings string) *env {
	t.Helper()
	base := t.TempDir()
	e := &env{t: t, home: filepath.Join(base, "home"), data: filepath.Join(base, "data"), repo: gittest.NewRepo(t)}
	for _, d := range []string{".cache/go-build", "go/pkg/mod", ".npm", ".config/yolop"} {
		if err := os.MkdirAll(filepath.Join(e.home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if settings != "" {
		if err := os.WriteFile(filepath.Join(e.home, ".config/yolop/settings.toml"), []byte(settings), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e *env) environ() []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + e.home, "TMPDIR=" + os.TempDir(), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + gitCfg, "LANG=C.UTF-8", "YOLOP_DATA_DIR=" + e.data,
		// For the race-built swap program a task starts (see TestMain).
		"GORACE=" + os.Getenv("GORACE"),
		// No spare is prepared in the background: a detached preparer
		// would still be writing the data directory when the test ends.
		"YOLOP_WORKTREE_SPARES=0"}, e.extra...)
}

// yolop runs the binary and decodes its JSON object.
func (e *env) yolop(args ...string) map[string]json.RawMessage {
	e.t.Helper()
	b := bin
	if e.bin != "" {
		b = e.bin
	}
	cmd := exec.Command(b, append([]string{"--provider", "sim", "--output-format", "json"}, args...)...)
	cmd.Dir = e.repo
	cmd.Env = e.environ()
	if e.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: e.cred}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		e.t.Fatalf("yolop %q: %v\n%s\n%s", args, err, out.String(), errb.String())
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		e.t.Fatalf("yolop %q: output %q: %v", args, out.String(), err)
	}
	return m
}

func str(m map[string]json.RawMessage, k string) string {
	var s string
	_ = json.Unmarshal(m[k], &s)
	return s
}

func (e *env) turn(flags []string, script string) map[string]json.RawMessage {
	e.t.Helper()
	args := append([]string(nil), flags...)
	if e.sid != "" {
		args = append(args, "--session", e.sid)
	}
	m := e.yolop(append(args, "-p", "$ "+script)...)
	if e.sid == "" {
		e.sid, e.root = str(m, "session_id"), str(m, "active_root")
	}
	if st := str(m, "status"); st != "completed" {
		e.t.Fatalf("turn: status %s: %s", st, m["error"])
	}
	return m
}

// toolResults are the contents of the session's tool results.
func (e *env) toolResults() string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.data, "sessions", e.sid, "events.jsonl"))
	if err != nil {
		e.t.Fatal(err)
	}
	var all strings.Builder
	for _, l := range strings.Split(string(b), "\n") {
		var ev struct {
			Type string
			Data struct{ Content string }
		}
		if json.Unmarshal([]byte(l), &ev) == nil && ev.Type == "tool.result" {
			all.WriteString(ev.Data.Content)
		}
	}
	return all.String()
}

// fingerprint hashes every file under the given roots (missing roots
// count as empty), to prove they are byte-identical afterwards.
func fingerprint(t *testing.T, roots ...string) string {
	t.Helper()
	var lines []string
	for _, r := range roots {
		_ = filepath.WalkDir(r, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			h := sha256.Sum256(b)
			lines = append(lines, p+" "+hex.EncodeToString(h[:]))
			return nil
		})
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// probe is a shell function the turn's scripts use: it runs a command and
// records in results.txt (in the worktree) whether it succeeded.
const probe = `probe() { if ( eval "$2" ) >/dev/null 2>err.tmp; then echo "$1 ok" >> results.txt; else echo "$1 refused: $(head -c 300 err.tmp | tr '\n' ' ')" >> results.txt; fi; rm -f err.tmp; }; `

func (e *env) results() map[string]string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.root, "results.txt"))
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		name, rest, _ := strings.Cut(l, " ")
		out[name] = rest
	}
	return out
}

// TestWriteLevel: at the default level (write) a command cannot write the
// user's home outside the caches, the user's checkout, a file outside all
// allowed roots, .git/config, packed-refs, hooks or the user's branches;
// those stay byte-identical. Writes in the worktree, TMPDIR, the Go and
// npm caches, and git status/diff/log/commit on the session branch work.
func TestWriteLevel(t *testing.T) {
	needABI(t, 3)
	t.Parallel()
	e := newEnv(t, "")
	gittest.Git(t, e.repo, "branch", "feature")
	gittest.Git(t, e.repo, "pack-refs", "--all")
	gittest.Git(t, e.repo, "branch", "loose")
	outside := t.TempDir()
	gitDir := filepath.Join(e.repo, ".git")
	// The repository's objects, worktrees/ and yolop/ refs change by
	// design (snapshots, the session branch); everything else may not.
	protected := []string{filepath.Join(e.home, "notes.txt"), filepath.Join(e.home, ".config"), outside,
		filepath.Join(e.repo, "README.md"), filepath.Join(e.repo, "user.txt")}
	for _, g := range []string{"config", "packed-refs", "HEAD", "index", "hooks", "refs/heads/main", "refs/heads/feature", "refs/heads/loose", "refs/tags", "logs/HEAD", "logs/refs/heads/main", "info"} {
		protected = append(protected, filepath.Join(gitDir, g))
	}
	// The first turn creates the session (its worktree); the second probes.
	e.turn(nil, "true")
	before := fingerprint(t, protected...)
	userRefs := []string{"for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/main", "refs/heads/feature", "refs/heads/loose", "refs/tags"}
	refs := gittest.Git(t, e.repo, userRefs...)
	gocache, gomod, npm := filepath.Join(e.home, ".cache/go-build"), filepath.Join(e.home, "go/pkg/mod"), filepath.Join(e.home, ".npm")
	script := probe + strings.Join([]string{
		`probe worktree "echo w > in-worktree.txt"`,
		`probe tmpdir "echo t > \$TMPDIR/t.txt && test \$TMPDIR != /tmp"`,
		`probe gocache "echo c > ` + gocache + `/yolop-probe"`,
		`probe gomodcache "mkdir -p ` + gomod + `/example.com && echo m > ` + gomod + `/example.com/probe"`,
		`probe npm "echo n > ` + npm + `/probe"`,
		`probe devnull "echo x > /dev/null"`,
		`probe status "git status --short"`,
		`probe diff "git diff --stat HEAD"`,
		`probe log "git log --oneline -1"`,
		`probe commit "git add in-worktree.txt && git commit -qm agent-commit"`,
		`probe home "echo h > \$HOME/notes.txt"`,
		`probe homeconfig "echo h >> \$HOME/.config/yolop/settings.toml"`,
		`probe checkout "echo u > ` + e.repo + `/user.txt"`,
		`probe readme "echo u >> ` + e.repo + `/README.md"`,
		`probe outside "echo o > ` + outside + `/o.txt"`,
		`probe gitconfig "echo '[x]' >> ` + gitDir + `/config"`,
		`probe gitconfigcmd "git config user.name someone-else"`,
		`probe packedrefs "echo x >> ` + gitDir + `/packed-refs"`,
		`probe hooks "echo x > ` + gitDir + `/hooks/pre-commit"`,
		`probe userhead "echo ref: refs/heads/feature > ` + gitDir + `/HEAD"`,
		`probe branchf "git branch -f feature HEAD"`,
		`probe branchloose "git branch -f loose HEAD"`,
		`probe updateref "git update-ref refs/heads/main HEAD"`,
		`probe tag "git tag agent-tag"`,
		// Unprobed, so the model sees the refusal.
		`echo h > $HOME/notes.txt`,
	}, "; ")
	e.turn(nil, script)
	res := e.results()
	for _, ok := range []string{"worktree", "tmpdir", "gocache", "gomodcache", "npm", "devnull", "status", "diff", "log", "commit"} {
		if res[ok] != "ok" {
			t.Errorf("%s: %s, want ok", ok, res[ok])
		}
	}
	for _, no := range []string{"home", "homeconfig", "checkout", "readme", "outside", "gitconfig", "gitconfigcmd", "packedrefs", "hooks", "userhead", "branchf", "branchloose", "updateref", "tag"} {
		if !strings.HasPrefix(res[no], "refused") {
			t.Errorf("%s: %s, want refused", no, res[no])
		}
	}
	if got := fingerprint(t, protected...); got != before {
		t.Errorf("protected files changed:\n%s\nwant\n%s", got, before)
	}
	if got := gittest.Git(t, e.repo, userRefs...); got != refs {
		t.Errorf("the user's refs changed:\n%s\nwas\n%s", got, refs)
	}
	// The commit landed on the session branch.
	if msg := gittest.Git(t, e.root, "log", "-1", "--format=%s"); msg != "agent-commit" {
		t.Errorf("session branch head: %q", msg)
	}
	// The model was told which path was refused and how the user allows it.
	out := e.toolResults()
	for _, want := range []string{"refused writing", filepath.Join(e.home, "notes.txt"), "extra_caches", "--sandbox off"} {
		if !strings.Contains(out, want) {
			t.Errorf("the tool result lacks %q:\n%s", want, out)
		}
	}
	// The rewind preview says what is not undone.
	m := e.yolop("--session", e.sid, "-p", "/rewind cp2 workspace")
	if !strings.Contains(string(m["preview"]), "effects outside the workspace are not undone: turn cp2") ||
		!strings.Contains(string(m["preview"]), "use the network") {
		t.Errorf("preview: %s", m["preview"])
	}
}

// TestRewindWithSandbox is the combined-rewind acceptance run with the
// sandbox on: the turns' effects inside the project are all undone.
func TestRewindWithSandbox(t *testing.T) {
	needABI(t, 3)
	t.Parallel()
	e := newEnv(t, "")
	e.turn(nil, "echo one > one.txt && mkdir -p d && echo x > d/x.txt")
	before := fingerprint(t, e.root+"/one.txt", e.root+"/d", e.root+"/README.md")
	e.turn(nil, "rm one.txt && echo two > d/x.txt && echo new > new.txt && git add -A && git commit -qm c2")
	e.turn(nil, "echo three >> README.md && ln -s new.txt link")
	p := e.yolop("--session", e.sid, "-p", "/rewind cp2 both")
	e.yolop("--session", e.sid, "-p", "/rewind cp2 both --confirm "+str(p, "token"))
	if got := fingerprint(t, e.root+"/one.txt", e.root+"/d", e.root+"/README.md"); got != before {
		t.Fatalf("after the rewind:\n%s\nwant\n%s", got, before)
	}
	for _, gone := range []string{"new.txt", "link"} {
		if _, err := os.Lstat(filepath.Join(e.root, gone)); !os.IsNotExist(err) {
			t.Errorf("%s survived the rewind: %v", gone, err)
		}
	}
}

// TestStrictLevel: strict blocks an outbound TCP connection to a port that
// is not listed, write allows it, and listing the port in the settings
// allows it under strict.
func TestStrictLevel(t *testing.T) {
	needABI(t, 4)
	t.Parallel()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	connect := probe + fmt.Sprintf(`probe connect "exec 3<>/dev/tcp/127.0.0.1/%d"`, port)
	for _, tc := range []struct {
		name, settings string
		flags          []string
		want           string
	}{
		{"strict", "", []string{"--sandbox", "strict"}, "refused"},
		{"write", "", []string{"--sandbox", "write"}, "ok"},
		{"strict with the port listed", fmt.Sprintf("[sandbox]\nlevel = \"strict\"\nports = [%d]\n", port), nil, "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.settings)
			e.turn(tc.flags, connect)
			if got := e.results()["connect"]; !strings.HasPrefix(got, tc.want) {
				t.Fatalf("connect: %s, want %s", got, tc.want)
			}
			// The model is told when the sandbox refused, and how the
			// user opens the port; never for a connection it allowed.
			e.turn(tc.flags, fmt.Sprintf("curl -sS -m 3 -o /dev/null http://127.0.0.1:%d/ || bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d'", port, port))
			note := fmt.Sprintf("the sandbox (level strict) refused the TCP connection to port %d, not the server", port)
			if got := e.toolResults(); strings.Contains(got, note) != (tc.want == "refused") {
				t.Fatalf("tool results (want the note: %v):\n%s", tc.want == "refused", got)
			} else if tc.want == "refused" && !strings.Contains(got, "[sandbox] ports") {
				t.Fatalf("the note does not say how to open the port:\n%s", got)
			}
		})
	}
}

// TestFallback: with the sandbox off, or Landlock unavailable (forced with
// YOLOP_LANDLOCK_ABI), yolop says what is not confined in the JSON turn
// object, the listing and the preview; with allow_unconfined = false no
// command runs.
func TestFallback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, settings string
		flags, env     []string
		warn, level    string
		ran            bool
	}{
		{"off", "", []string{"--sandbox", "off"}, nil, "the sandbox is off", "off", true},
		{"no landlock", "", nil, []string{"YOLOP_LANDLOCK_ABI=0"}, "Landlock is not available", "off", true},
		{"old kernel for strict", "", []string{"--sandbox", "strict"}, []string{"YOLOP_LANDLOCK_ABI=3"}, "level strict needs Landlock ABI 4 and the kernel has 3", "write", true},
		{"unconfined not allowed", "[sandbox]\nallow_unconfined = false\n", nil, []string{"YOLOP_LANDLOCK_ABI=0"}, "allow_unconfined is false", "off", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.settings)
			e.extra = tc.env
			m := e.turn(tc.flags, "echo h > $HOME/outside.txt; echo w > w.txt")
			if !strings.Contains(string(m["warnings"]), tc.warn) {
				t.Fatalf("turn object: warnings %s; want %q", m["warnings"], tc.warn)
			}
			_, err := os.Stat(filepath.Join(e.root, "w.txt"))
			if (err == nil) != tc.ran {
				t.Fatalf("command ran = %v, want %v", err == nil, tc.ran)
			}
			list := e.yolop(append(append([]string(nil), tc.flags...), "--session", e.sid, "-p", "/rewind")...)
			if !strings.Contains(string(list["warnings"]), tc.warn) {
				t.Fatalf("listing: %s", list["warnings"])
			}
			pv := e.yolop(append(append([]string(nil), tc.flags...), "--session", e.sid, "-p", "/rewind cp1 workspace")...)
			if !strings.Contains(string(pv["warnings"]), tc.warn) {
				t.Fatalf("preview warnings: %s", pv["warnings"])
			}
			if tc.level == "off" && tc.ran && !strings.Contains(string(pv["preview"]), "with the sandbox off") {
				t.Fatalf("preview: %s", pv["preview"])
			}
		})
	}
}

// TestVersionVerbose reports the level in force and why.
func TestVersionVerbose(t *testing.T) {
	needABI(t, 4)
	e := newEnv(t, "")
	run := func(extra []string, args ...string) string {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(e.environ(), extra...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("yolop %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := run(nil, "version", "--verbose"); !strings.Contains(out, fmt.Sprintf("sandbox: write; Landlock ABI %d", kernABI)) {
		t.Fatalf("version --verbose: %s", out)
	}
	if out := run([]string{"YOLOP_LANDLOCK_ABI=3"}, "--sandbox", "strict", "version", "--verbose"); !strings.Contains(out, "sandbox: write (requested strict: level strict needs Landlock ABI 4 and the kernel has 3)") {
		t.Fatalf("version --verbose: %s", out)
	}
}

// TestSecrets: yolop's keys and secret-looking variables do not reach the
// agent's shell, and no known key value reaches events.jsonl or the request
// trace, even when the command prints the settings file.
func TestSecrets(t *testing.T) {
	t.Parallel()
	const (
		openai    = "sk-openai-e2e-0123456789abcdef"
		anthropic = "sk-ant-settings-e2e-0123456789"
		gh        = "ghp_e2e0123456789abcdefghij"
		npm       = "npm_e2e_passed_0123456789"
	)
	e := newEnv(t, "[anthropic]\napi_key = \""+anthropic+"\"\n\n[tools]\npass_env = [\"NPM_TOKEN\"]\n")
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	e.extra = []string{"OPENAI_API_KEY=" + openai, "GITHUB_TOKEN=" + gh, "NPM_TOKEN=" + npm, "YOLOP_TRACE_REQUESTS=" + trace}
	e.turn(nil, `env > env.txt; echo "openai=${OPENAI_API_KEY:-unset} gh=${GITHUB_TOKEN:-unset}"; cat $HOME/.config/yolop/settings.toml; echo "npm=$NPM_TOKEN"`)
	// A second turn sends the first one's tool result to the model again.
	e.turn(nil, "true")
	envTxt, err := os.ReadFile(filepath.Join(e.root, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"OPENAI_API_KEY=", "GITHUB_TOKEN=", "ANTHROPIC_API_KEY="} {
		if strings.Contains(string(envTxt), gone) {
			t.Errorf("%s reached the shell", gone)
		}
	}
	if !strings.Contains(string(envTxt), "NPM_TOKEN="+npm) {
		t.Errorf("pass_env did not pass NPM_TOKEN")
	}
	events, err := os.ReadFile(filepath.Join(e.data, "sessions", e.sid, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"events.jsonl": events, "trace": tr} {
		for _, v := range []string{openai, anthropic, gh, npm} {
			if bytes.Contains(b, []byte(v)) {
				t.Errorf("%s holds the secret %s", name, v)
			}
		}
		if !bytes.Contains(b, []byte("[redacted anthropic.api_key]")) || !bytes.Contains(b, []byte("[redacted NPM_TOKEN]")) {
			t.Errorf("%s lacks the redaction markers", name)
		}
	}
}
