// Package watch drives the real yolop binary as an ACP agent over stdio,
// with its file watcher on, through turns in which the agent, a background
// shell process the agent started and the user (this test) edit, rename
// directories, delete and chmod; every capture (before and after each
// turn, and a restore's recovery point) must be the tree git itself gives
// for the same state (`git add -A` on a copy of the worktree's index), and
// rewinds must restore exactly.
//
//	go test ./test/watch -v
package watch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/testenv"
)

var (
	bin     string
	baseEnv []string
)

func TestMain(m *testing.M) {
	testenv.NoRaceExitSleep()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "yolop-watch-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	if bin, err = testenv.Yolop(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		panic(err)
	}
	os.Setenv("HOME", home)
	gittest.IsolateProcess(dir)
	baseEnv = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + os.TempDir(), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.Getenv("GIT_CONFIG_GLOBAL"), "LANG=C.UTF-8", "YOLOP_WORKTREE_SPARES=0"}
	return m.Run()
}

// agent is one `yolop --acp` process and the client side of its stdio.
type agent struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	msgs  chan map[string]json.RawMessage
	id    int
	sid   string
	stErr bytes.Buffer
}

func startAgent(t *testing.T, dir, data string, extraEnv []string, args ...string) *agent {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--acp", "--provider", "sim"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(append([]string(nil), baseEnv...), "YOLOP_DATA_DIR="+data), extraEnv...)
	a := &agent{t: t, cmd: cmd, msgs: make(chan map[string]json.RawMessage, 1024)}
	var err error
	if a.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &a.stErr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(a.msgs)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				a.msgs <- m
			}
		}
	}()
	t.Cleanup(func() {
		a.in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	a.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	var created struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(a.call("session/new", map[string]any{"cwd": dir, "mcpServers": []any{}}), &created); err != nil || created.SessionID == "" {
		t.Fatalf("session/new: %v", err)
	}
	a.sid = created.SessionID
	return a
}

// call sends a request and returns its result and the text of the agent's
// messages that came before it.
func (a *agent) callText(method string, params any) (json.RawMessage, string) {
	a.t.Helper()
	a.id++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": a.id, "method": method, "params": params})
	if _, err := a.in.Write(append(b, '\n')); err != nil {
		a.t.Fatal(err)
	}
	want := fmt.Sprint(a.id)
	var text strings.Builder
	deadline := time.After(120 * time.Second)
	for {
		select {
		case m, ok := <-a.msgs:
			if !ok {
				a.t.Fatalf("%s: the agent closed the connection\n%s", method, a.stErr.String())
			}
			if string(m["method"]) == `"session/update"` {
				var u struct {
					Update struct {
						SessionUpdate string `json:"sessionUpdate"`
						Content       struct {
							Text string `json:"text"`
						} `json:"content"`
					} `json:"update"`
				}
				if json.Unmarshal(m["params"], &u) == nil && u.Update.SessionUpdate == "agent_message_chunk" {
					text.WriteString(u.Update.Content.Text)
				}
				continue
			}
			if string(m["id"]) != want || m["method"] != nil {
				continue
			}
			if e := m["error"]; e != nil {
				a.t.Fatalf("%s: %s", method, e)
			}
			return m["result"], text.String()
		case <-deadline:
			a.t.Fatalf("%s: no response\n%s", method, a.stErr.String())
		}
	}
}

func (a *agent) call(method string, params any) json.RawMessage {
	a.t.Helper()
	r, _ := a.callText(method, params)
	return r
}

func (a *agent) prompt(text string) string {
	a.t.Helper()
	r, out := a.callText("session/prompt", map[string]any{"sessionId": a.sid, "prompt": []any{map[string]any{"type": "text", "text": text}}})
	var res struct {
		StopReason string `json:"stopReason"`
	}
	if err := json.Unmarshal(r, &res); err != nil || res.StopReason != "end_turn" {
		a.t.Fatalf("prompt %q: %s\n%s", text, r, out)
	}
	return out
}

// watches counts the inotify watches the agent process holds.
//
// yolop seals itself (its /proc files belong to root), so only root can
// count them: ok is false for any other user.
func (a *agent) watches() (n int, ok bool) {
	a.t.Helper()
	dir := fmt.Sprintf("/proc/%d/fdinfo", a.cmd.Process.Pid)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrPermission) && os.Geteuid() != 0 {
		return 0, false
	}
	if err != nil {
		a.t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err == nil {
			n += bytes.Count(b, []byte("inotify wd:"))
		}
	}
	return n, true
}

func sh(t *testing.T, dir, script string) string {
	t.Helper()
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sh %q: %v\n%s", script, err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitView is git's own capture of root: its index, copied, with `git add
// -A` applied, written as a tree. The copy keeps the index's modification
// time, by which git tells a file rewritten at the same size in the same
// second as the index was written (racily clean).
func gitView(t *testing.T, root string) string {
	t.Helper()
	idx := filepath.Join(t.TempDir(), "index")
	return sh(t, root, `cp -p "$(git rev-parse --git-path index)" `+idx+`; GIT_INDEX_FILE=`+idx+` git add -A; GIT_INDEX_FILE=`+idx+` git write-tree`)
}

// refs maps the session's checkpoint ref names to their trees.
func refs(t *testing.T, repo, sid string) map[string]string {
	t.Helper()
	m := map[string]string{}
	prefix := "refs/yolop/checkpoints/" + sid + "/"
	for _, l := range strings.Split(sh(t, repo, "git for-each-ref --format='%(refname) %(objectname)' "+prefix), "\n") {
		if name, oid, ok := strings.Cut(l, " "); ok {
			m[strings.TrimPrefix(name, prefix)] = oid
		}
	}
	return m
}

// modes lists the permission bits of every file under root outside .git.
func modes(t *testing.T, root string) string {
	t.Helper()
	return sh(t, root, `find . -path ./.git -prune -o -type f -printf '%m %p\n' | sort`)
}

// permsDiffer compares the permission listings of modes: a restore gives
// back every exec bit and every permission narrower than a tree's
// 0644/0755 that the checkpoint had; it never opens up a file that was
// narrowed since (its content unchanged), so that is accepted.
func permsDiffer(got, want string) string {
	parse := func(s string) map[string]int {
		m := map[string]int{}
		for _, l := range strings.Split(s, "\n") {
			var perm int
			var p string
			if _, err := fmt.Sscanf(l, "%o %s", &perm, &p); err == nil {
				m[p] = perm
			}
		}
		return m
	}
	g, w := parse(got), parse(want)
	for p, wp := range w {
		gp, ok := g[p]
		switch {
		case !ok:
			return p + " is missing"
		case gp&0o100 != wp&0o100:
			return fmt.Sprintf("%s is %o, was %o", p, gp, wp)
		case wp != 0o644 && wp != 0o755 && gp != wp:
			return fmt.Sprintf("%s is %o, was %o (narrower than a tree can say)", p, gp, wp)
		case gp&^wp != 0:
			return fmt.Sprintf("%s is %o, more open than its %o", p, gp, wp)
		}
	}
	for p := range g {
		if _, ok := w[p]; !ok {
			return p + " should not be there"
		}
	}
	return ""
}

var confirmRE = regexp.MustCompile(`(/rewind \S+ \S+ --confirm \S+)`)

type scenario struct {
	t        *testing.T
	a        *agent
	repo     string
	root     string // the active root
	seen     map[string]string
	modes    map[string]string // checkpoint -> the permissions before it
	outside  string            // a directory outside the worktree for the signal to the background process
	captured int
}

// turn runs one prompt and requires every ref it made to be the tree git
// gives: a checkpoint (cpN) and a restore's recovery point (rN) the state
// before the prompt, the end of a turn (end-cpN) the state after it.
func (s *scenario) turn(prompt string) string {
	s.t.Helper()
	pre := gitView(s.t, s.root)
	preModes := modes(s.t, s.root)
	out := s.a.prompt(prompt)
	post := gitView(s.t, s.root)
	now := refs(s.t, s.repo, s.a.sid)
	var made []string
	for name, tree := range now {
		if s.seen[name] == tree {
			continue
		}
		made = append(made, name)
		want := pre
		if strings.HasPrefix(name, "end-") {
			want = post
		}
		if tree != want {
			diff := sh(s.t, s.repo, "git diff-tree -r --name-status "+want+" "+tree)
			s.t.Fatalf("after %q: %s is %s, git gives %s:\n%s\n%s", prompt, name, tree, want, diff, out)
		}
		s.captured++
		if !strings.HasPrefix(name, "end-") {
			s.modes[name] = preModes
		}
	}
	sort.Strings(made)
	s.t.Logf("%q made %v", firstLine(prompt), made)
	s.seen = now
	return out
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// rewind previews and confirms `/rewind <cp> both` and requires the files
// to be exactly the checkpoint's tree, with the permissions they had.
func (s *scenario) rewind(cp string) {
	s.t.Helper()
	preview := s.turn("/rewind " + cp + " both")
	m := confirmRE.FindStringSubmatch(preview)
	if m == nil {
		s.t.Fatalf("no confirm line in the preview:\n%s", preview)
	}
	s.turn(m[1])
	if got, want := gitView(s.t, s.root), s.seen[cp]; got != want {
		diff := sh(s.t, s.repo, "git diff-tree -r --name-status "+want+" "+got)
		s.t.Fatalf("after /rewind %s the files are %s, the checkpoint %s:\n%s", cp, got, want, diff)
	}
	if bad := permsDiffer(modes(s.t, s.root), s.modes[cp]); bad != "" {
		s.t.Fatalf("after /rewind %s: %s", cp, bad)
	}
}

// run is the scenario: agent turns with a background process and the
// user's edits between them, rewinds, and a turn after each.
func (s *scenario) run(where string) {
	t := s.t
	sig := s.outside
	s.turn(`$ mkdir -p pkg/x && printf 'f\n' > pkg/x/f.txt && printf '#!/bin/sh\n' > run.sh && chmod +x run.sh && ln -s README.md link && printf 'bin\000v1' > data.bin`)
	// The user, between turns: a new file, a 0600 file, a directory renamed.
	sh(t, s.root, `printf 'mine\n' > docs/user.txt && chmod 600 src/a.go && mv src/lib src/lib2`)
	// The agent starts a background process that waits for the turn to
	// end (this test's signal), then renames, deletes, chmods and creates
	// a directory tree while no turn runs.
	s.turn(`$ printf 't2\n' > t2.txt
call bash {"command":"while [ ! -e ` + sig + `/go ]; do sleep 0.05; done; mv pkg pkg2 && rm data.bin && chmod -x run.sh && mkdir -p new/deep && printf 'n\\n' > new/deep/n.txt && mv src/lib2/b.go src/b.go","background":true}`)
	sh(t, sig, "touch go")
	for i := 0; ; i++ {
		// Its last step (the sandbox lets it write only the tree).
		if _, err := os.Stat(filepath.Join(s.root, "src", "b.go")); err == nil {
			break
		}
		if i > 1200 {
			t.Fatal("the background process did not finish")
		}
		time.Sleep(50 * time.Millisecond)
	}
	sh(t, s.root, `rm docs/r.md && ln -sf src/a.go link`)
	// cp4: the agent edits a .gitignore (the watcher cannot vouch: the
	// capture walks) and writes; the user then makes a rule that hides
	// a file captured before.
	s.turn("$ printf '*.log\\n' > .gitignore && printf 'w0\\n' > w0.txt\nwrite w.txt\nw\nEOF")
	sh(t, s.root, `printf 't2.txt\n' >> .gitignore && printf 'u\n' > u.txt`)
	// A directory replaced by a file, a mode opened up.
	s.turn(`$ rm -r new && printf 'file now\n' > new && chmod 755 w.txt`)
	s.turn(`$ printf 'four\n' > four.txt && mv pkg2/x pkg2/y`)
	// Back to before the last turn (nobody else edited since: exact in
	// place too), then on.
	s.rewind("cp6")
	s.turn(`$ printf 'after\n' > after.txt && mv pkg2 pkg3`)
	if where == "worktree" {
		// A session worktree is the session's own: any checkpoint is
		// restored exactly, whoever made the changes since.
		s.rewind("cp4")
		s.turn(`$ printf 'again\n' > again.txt`)
		s.rewind("cp1")
		s.turn(`$ printf 'last\n' > last.txt`)
	}
	if s.captured < 12 {
		t.Fatalf("only %d captures were checked", s.captured)
	}
}

func newRepo(t *testing.T) string {
	repo := gittest.NewRepo(t)
	sh(t, repo, `mkdir -p src/lib docs && printf 'a\n' > src/a.go && printf 'b\n' > src/lib/b.go && printf 'r\n' > docs/r.md && git add -A && git commit -qm base`)
	return repo
}

// TestACPWatchedCapturesAreExact runs the scenario in a worktree session
// and in place, with the watcher on (it must hold watches), with no
// watcher allowed (YOLOP_WATCH_BUDGET=0: every capture walks) and with a
// budget too small for the tree (the watcher cannot vouch and walks).
func TestACPWatchedCapturesAreExact(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"worktree", "in-place"} {
		for _, budget := range []string{"", "0", "3"} {
			name := where + "/budget=" + budget
			if budget == "" {
				name = where + "/watched"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				repo := newRepo(t)
				var env, args []string
				if budget != "" {
					env = append(env, "YOLOP_WATCH_BUDGET="+budget)
				}
				if where == "in-place" {
					args = append(args, "--in-place")
				}
				a := startAgent(t, repo, t.TempDir(), env, args...)
				s := &scenario{t: t, a: a, repo: repo, root: repo, seen: map[string]string{}, modes: map[string]string{}, outside: t.TempDir()}
				// The first prompt makes the session (and, in a worktree
				// session, its worktree).
				s.turn("hello")
				if where == "worktree" {
					s.root = sessionWorktree(t, repo)
				}
				switch n, ok := a.watches(); {
				case !ok:
					t.Log("not root: the sealed agent's inotify watches cannot be counted")
				case budget == "" && n < 4:
					t.Fatalf("the agent holds %d inotify watches: no watcher over the tree", n)
				case budget == "0" && n != 0:
					t.Fatalf("YOLOP_WATCH_BUDGET=0, yet the agent holds %d inotify watches", n)
				case budget == "3" && n > 3:
					t.Fatalf("YOLOP_WATCH_BUDGET=3, yet the agent holds %d inotify watches", n)
				}
				s.run(where)
			})
		}
	}
}

func sessionWorktree(t *testing.T, repo string) string {
	t.Helper()
	for _, l := range strings.Split(sh(t, repo, "git worktree list --porcelain"), "\n") {
		if p, ok := strings.CutPrefix(l, "worktree "); ok && p != repo {
			return p
		}
	}
	t.Fatal("no session worktree")
	return ""
}
