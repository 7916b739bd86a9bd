package crash

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/config"
	"github.com/yolop-dev/yolop/internal/failpoint"
	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/testenv"
	"github.com/yolop-dev/yolop/internal/worktree"
)

// spareEnv is a user with recycled worktrees on (one spare per repository).
type spareEnv struct {
	t      *testing.T
	repo   string
	data   string
	spares string // YOLOP_WORKTREE_SPARES
}

func newSpareEnv(t *testing.T) *spareEnv {
	t.Helper()
	repo := gittest.NewRepo(t)
	gittest.WriteFile(t, repo, ".gitignore", "*.log\n")
	gittest.WriteFile(t, repo, "src/a.txt", "a\n")
	gittest.Commit(t, repo, "base")
	e := &spareEnv{t: t, repo: repo, data: t.TempDir(), spares: "1"}
	t.Cleanup(e.waitIdle)
	return e
}

// run runs yolop with spares on; fp arms a failpoint.
func (e *spareEnv) run(fp string, args ...string) result {
	e.t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = e.repo
	cmd.Env = append(append([]string(nil), baseEnv...), "YOLOP_DATA_DIR="+e.data, config.SparesEnv+"="+e.spares)
	if fp != "" {
		cmd.Env = append(cmd.Env, failpoint.Env+"="+fp)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		res.killed = strings.Contains(ee.String(), "killed")
		res.code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("run yolop %v: %v", args, err)
	}
	return res
}

func (e *spareEnv) ok(args ...string) result {
	e.t.Helper()
	r := e.run("", args...)
	if r.code != 0 {
		e.t.Fatalf("yolop %q: exit %d\n%s\n%s", args, r.code, r.stdout, r.stderr)
	}
	return r
}

type turnOut struct {
	SessionID  string `json:"session_id"`
	ActiveRoot string `json:"active_root"`
	Status     string `json:"status"`
	Recycled   bool   `json:"recycled"`
}

// newSession runs the first turn of a new session and checks its worktree
// is exactly the user's HEAD on the session's own branch, nothing more.
func (e *spareEnv) newSession(prompt string) turnOut {
	e.t.Helper()
	out := e.firstTurn(prompt)
	e.checkFresh(out)
	return out
}

func (e *spareEnv) firstTurn(prompt string) turnOut {
	e.t.Helper()
	r := e.ok("--output-format", "json", "-p", prompt)
	var out turnOut
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Status != "completed" {
		e.t.Fatalf("first turn: %q %v", r.stdout, err)
	}
	return out
}

func (e *spareEnv) checkFresh(out turnOut) {
	e.t.Helper()
	if got, want := gittest.Git(e.t, out.ActiveRoot, "rev-parse", "HEAD"), gittest.Git(e.t, e.repo, "rev-parse", "HEAD"); got != want {
		e.t.Fatalf("session worktree at %s, want the user's HEAD %s", got, want)
	}
	br := gittest.Git(e.t, out.ActiveRoot, "symbolic-ref", "--short", "HEAD")
	if !strings.HasPrefix(br, worktree.BranchPrefix) {
		e.t.Fatalf("session worktree on %q, not a session branch", br)
	}
	if st := gittest.Git(e.t, out.ActiveRoot, "status", "--porcelain", "--untracked-files=all", "--ignored"); st != "" {
		e.t.Fatalf("the new session's worktree is not clean:\n%s", st)
	}
}

// waitIdle waits until no `yolop worktree prepare-spare` of this data
// directory runs any more.
func (e *spareEnv) waitIdle() {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if !testenv.Preparing(e.data) {
			return
		}
	}
	e.t.Errorf("a spare preparation was still running after a minute")
}

// sessions returns the ids of the sessions on disk.
func (e *spareEnv) sessions() map[string]bool {
	ids := map[string]bool{}
	ents, _ := os.ReadDir(filepath.Join(e.data, "sessions"))
	for _, d := range ents {
		ids[d.Name()] = true
	}
	return ids
}

// checkNoLeaks: every directory under the data directory's worktrees is a
// live session's worktree or a spare, git knows exactly those worktrees
// (none prunable), checkpoint refs belong to live sessions, `worktree prune
// --dry-run` has nothing to do, and no yolop/ branch exists except those of
// live sessions and the ones in kept.
func (e *spareEnv) checkNoLeaks(kept ...string) {
	e.t.Helper()
	e.waitIdle()
	live := e.sessions()
	var dirs []string
	ents, _ := filepath.Glob(filepath.Join(e.data, "worktrees", "*", "*"))
	for _, p := range ents {
		st, err := os.Stat(p)
		if err != nil || !st.IsDir() {
			continue
		}
		name := filepath.Base(p)
		if !live[name] && !strings.HasPrefix(name, ".spare-") {
			e.t.Errorf("leaked worktree directory %s", p)
		}
		dirs = append(dirs, p)
	}
	wl := gittest.Git(e.t, e.repo, "worktree", "list", "--porcelain")
	if strings.Contains(wl, "prunable") {
		e.t.Errorf("git has prunable worktrees:\n%s", wl)
	}
	var known []string
	for _, l := range strings.Split(wl, "\n") {
		if p, ok := strings.CutPrefix(l, "worktree "); ok && p != e.repo {
			known = append(known, p)
		}
	}
	sort.Strings(known)
	sort.Strings(dirs)
	if strings.Join(known, "\n") != strings.Join(dirs, "\n") {
		e.t.Errorf("git's worktrees %v != yolop's directories %v", known, dirs)
	}
	for _, r := range strings.Fields(gittest.Git(e.t, e.repo, "for-each-ref", "--format=%(refname)", worktree.RefPrefix)) {
		sid := strings.SplitN(strings.TrimPrefix(r, worktree.RefPrefix), "/", 2)[0]
		if !live[sid] {
			e.t.Errorf("leaked checkpoint ref %s", r)
		}
	}
	branches := map[string]bool{}
	for _, k := range kept {
		branches[k] = true
	}
	for sid := range live {
		b, err := os.ReadFile(filepath.Join(e.data, "sessions", sid, "workspace.json"))
		if err != nil {
			continue
		}
		var ws struct {
			Worktree struct {
				Branch string `json:"branch"`
			} `json:"worktree"`
		}
		_ = json.Unmarshal(b, &ws)
		branches[ws.Worktree.Branch] = true
	}
	for _, b := range strings.Fields(gittest.Git(e.t, e.repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/yolop/")) {
		if !branches[b] {
			e.t.Errorf("leaked branch %s", b)
		}
	}
	if r := e.ok("worktree", "prune", "--dry-run"); strings.TrimSpace(r.stdout) != "Nothing to prune." {
		e.t.Errorf("worktree prune --dry-run still finds work:\n%s", r.stdout)
	}
}

// TestCrashAtEverySpareStep kills yolop at each step of claiming, parking
// and preparing a spare, then proves that the next start gives a clean
// worktree at the user's HEAD and that nothing leaks.
func TestCrashAtEverySpareStep(t *testing.T) {
	t.Parallel()
	for _, fp := range worktree.SpareFailpoints {
		t.Run(fp, func(t *testing.T) {
			t.Parallel()
			e := newSpareEnv(t)
			var kept []string
			switch {
			case strings.HasPrefix(fp, "spare.claim_"):
				e.ok("worktree", "prepare-spare")
				// The user moves on, so the claim has files to write.
				gittest.WriteFile(t, e.repo, "src/b.txt", "b\n")
				gittest.Commit(t, e.repo, "more")
				if r := e.run(fp, "--output-format", "json", "-p", "hello"); !r.killed {
					t.Fatalf("the failpoint was not reached: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
				}
			case strings.HasPrefix(fp, "spare.park_"):
				// No spare yet, so that the removal parks the worktree.
				e.spares = "0"
				first := e.firstTurn("$ echo work > work.txt; echo log > x.log")
				e.spares = "1"
				b, _ := os.ReadFile(filepath.Join(e.data, "sessions", first.SessionID, "workspace.json"))
				var ws struct {
					Worktree struct {
						Branch string `json:"branch"`
					} `json:"worktree"`
				}
				_ = json.Unmarshal(b, &ws)
				kept = append(kept, ws.Worktree.Branch)
				if r := e.run(fp, "sessions", "rm", "--force", first.SessionID); !r.killed {
					t.Fatalf("the failpoint was not reached: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
				}
				// The user retries the removal.
				e.ok("sessions", "rm", "--force", first.SessionID)
			case strings.HasPrefix(fp, "spare.prepare_"):
				if r := e.run(fp, "worktree", "prepare-spare"); !r.killed {
					t.Fatalf("the failpoint was not reached: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
				}
			default:
				t.Fatalf("no scenario for failpoint %s", fp)
			}
			// The next start is correct whatever was left.
			e.newSession("next")
			e.checkNoLeaks(kept...)
		})
	}
}

// TestCrashDuringBackgroundPreparation kills the detached preparer a turn
// starts (the failpoint is inherited) and proves the next start is correct.
func TestCrashDuringBackgroundPreparation(t *testing.T) {
	t.Parallel()
	e := newSpareEnv(t)
	r := e.run("spare.prepare_after_add", "--output-format", "json", "-p", "first")
	if r.code != 0 {
		t.Fatalf("first turn: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// The preparer dies after its checkout; wait for it.
	e.waitIdle()
	if m, _ := filepath.Glob(filepath.Join(e.data, "worktrees", "*", ".tmp-*")); len(m) == 0 {
		t.Fatal("the background preparation left no half-made worktree: was it started?")
	}
	out := e.newSession("second")
	if out.Recycled {
		t.Fatal("a half-made spare was claimed")
	}
	e.checkNoLeaks()
}

// TestFourSessionsStartAgainstOneSpare starts four sessions at once with
// one spare: exactly one recycles it, all four get clean, distinct
// worktrees at the user's HEAD, and nothing leaks.
func TestFourSessionsStartAgainstOneSpare(t *testing.T) {
	t.Parallel()
	e := newSpareEnv(t)
	e.ok("worktree", "prepare-spare")
	var wg sync.WaitGroup
	outs := make([]result, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = e.run("", "--output-format", "json", "-p", fmt.Sprintf("start %d", i))
		}()
	}
	wg.Wait()
	recycled := 0
	roots := map[string]bool{}
	for i, r := range outs {
		var out turnOut
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil || out.Status != "completed" {
			t.Fatalf("start %d: exit %d\n%s\n%s", i, r.code, r.stdout, r.stderr)
		}
		e.checkFresh(out)
		if roots[out.ActiveRoot] {
			t.Fatalf("two sessions share %s", out.ActiveRoot)
		}
		roots[out.ActiveRoot] = true
		if out.Recycled {
			recycled++
		}
	}
	if recycled != 1 {
		t.Fatalf("%d sessions recycled the one spare", recycled)
	}
	e.checkNoLeaks()
}

// TestCrashDuringEditorEarlyClaim kills an editor's yolop (ACP) while the
// session it just opened claims the spare in the background, before any
// prompt: at the claim's move, and after it moved the spare to the user's
// HEAD. The next start is correct and nothing leaks: no session, no branch.
func TestCrashDuringEditorEarlyClaim(t *testing.T) {
	t.Parallel()
	for _, fp := range []string{"spare.claim_after_move", "spare.claim_after_reset"} {
		t.Run(fp, func(t *testing.T) {
			t.Parallel()
			e := newSpareEnv(t)
			e.ok("worktree", "prepare-spare")
			gittest.WriteFile(t, e.repo, "src/b.txt", "b\n")
			gittest.Commit(t, e.repo, "more")
			cmd := exec.Command(bin, "--acp")
			cmd.Dir = e.repo
			cmd.Env = append(append([]string(nil), baseEnv...), "YOLOP_DATA_DIR="+e.data, config.SparesEnv+"="+e.spares, failpoint.Env+"="+fp)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`+"\n")
			fmt.Fprintf(stdin, `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`+"\n", e.repo)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err = <-done:
			case <-time.After(60 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("the failpoint was not reached:\n%s", out.String())
			}
			stdin.Close()
			if ee, ok := err.(*exec.ExitError); !ok || !strings.Contains(ee.String(), "killed") {
				t.Fatalf("yolop --acp was not killed at %s: %v\n%s", fp, err, out.String())
			}
			if ents, _ := os.ReadDir(filepath.Join(e.data, "sessions")); len(ents) != 0 {
				t.Fatalf("a session opened without a prompt was made: %v", ents)
			}
			e.newSession("next")
			e.checkNoLeaks()
		})
	}
}

// TestSecondSessionWaitsForThePreparation: a session started while a
// spare is being prepared in the background says on stderr that it waits
// for it, and claims that spare: one checkout in all, not two.
func TestSecondSessionWaitsForThePreparation(t *testing.T) {
	t.Parallel()
	e := newSpareEnv(t)
	// Every checkout of the repository from here on waits for the flag.
	flag := filepath.Join(t.TempDir(), "go")
	gittest.WriteFile(t, e.repo, ".gitattributes", "slow.txt filter=slow\n")
	gittest.WriteFile(t, e.repo, "slow.txt", "slow\n")
	gittest.Commit(t, e.repo, "a file whose checkout waits")
	gittest.Git(t, e.repo, "config", "filter.slow.smudge", "while [ ! -e '"+flag+"' ]; do sleep 0.02; done; cat")
	goOn := sync.OnceFunc(func() {
		if err := os.WriteFile(flag, nil, 0o600); err != nil {
			t.Error(err)
		}
	})
	// A start that does not wait would hang in its own checkout.
	defer time.AfterFunc(2*time.Minute, goOn).Stop()

	prep := exec.Command(bin, "worktree", "prepare-spare")
	prep.Dir = e.repo
	prep.Env = append(append([]string(nil), baseEnv...), "YOLOP_DATA_DIR="+e.data, config.SparesEnv+"=1")
	prep.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := prep.Start(); err != nil {
		t.Fatal(err)
	}
	prepDone := make(chan error, 1)
	go func() { prepDone <- prep.Wait() }()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		locks, _ := filepath.Glob(filepath.Join(e.data, "worktrees", "*", ".tmp-*.lock"))
		if len(locks) > 0 {
			if b, _ := os.ReadFile(locks[0]); strings.HasPrefix(string(b), "prepare ") {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the preparation did not start")
		}
	}

	cmd := exec.Command(bin, "-p", "second")
	cmd.Dir = e.repo
	cmd.Env = append(append([]string(nil), baseEnv...), "YOLOP_DATA_DIR="+e.data, config.SparesEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var told strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := stderr.Read(buf)
		told.Write(buf[:n])
		if strings.Contains(told.String(), "waiting for the spare worktree being prepared in the background") {
			goOn()
		}
		if err != nil {
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("second session: %v\n%s\n%s", err, out.String(), told.String())
	}
	if err := <-prepDone; err != nil {
		t.Fatalf("the preparation: %v", err)
	}
	if !strings.Contains(told.String(), fmt.Sprintf("yolop process %d", prep.Process.Pid)) {
		t.Fatalf("the start did not say what it waited for:\n%s", told.String())
	}
	ids := e.sessions()
	if len(ids) != 1 {
		t.Fatalf("sessions: %v", ids)
	}
	for sid := range ids {
		b, err := os.ReadFile(filepath.Join(e.data, "sessions", sid, "workspace.json"))
		if err != nil {
			t.Fatal(err)
		}
		var ws struct {
			Recycled bool `json:"recycled"`
		}
		if err := json.Unmarshal(b, &ws); err != nil || !ws.Recycled {
			t.Fatalf("the session did not claim the prepared spare: %s", b)
		}
	}
	e.checkNoLeaks()
}
