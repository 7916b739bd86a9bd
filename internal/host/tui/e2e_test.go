package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(gittest.Main(m)) }

// tmuxTerm is one yolop running in a private tmux server.
type tmuxTerm struct {
	t    *testing.T
	sock string
}

func (tm *tmuxTerm) tmux(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", tm.sock}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (tm *tmuxTerm) capture() string { return tm.tmux("capture-pane", "-p", "-t", "yolop") }

// keys sends tmux key names (Enter, Escape, C-j, Down).
func (tm *tmuxTerm) keys(k ...string) {
	tm.t.Helper()
	tm.tmux(append([]string{"send-keys", "-t", "yolop"}, k...)...)
}

// typeLines types text; a newline inside becomes Ctrl+J (a newline in the
// composer, not a send).
func (tm *tmuxTerm) typeLines(text string) {
	tm.t.Helper()
	for i, line := range strings.Split(text, "\n") {
		if i > 0 {
			tm.keys("C-j")
		}
		if line != "" {
			tm.tmux("send-keys", "-t", "yolop", "-l", line)
		}
	}
}

// waitFor polls the screen until cond holds; a terminal program renders
// asynchronously, so this is the only way to observe it.
func (tm *tmuxTerm) waitFor(what string, cond func(screen string) bool) string {
	tm.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var s string
	for time.Now().Before(deadline) {
		s = tm.capture()
		if cond(s) {
			return s
		}
		if strings.Contains(s, "yolop-exit=") {
			tm.t.Fatalf("yolop exited while waiting for %s; screen:\n%s", what, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
	tm.t.Fatalf("timed out waiting for %s; screen:\n%s", what, s)
	return ""
}

// exited waits for the shell's line after yolop and returns the screen
// with the lines the terminal wrapped joined: what yolop prints as it
// leaves is plain output, as long as the paths in it.
func (tm *tmuxTerm) exited() string {
	tm.t.Helper()
	tm.waitText("yolop-exit=")
	return tm.tmux("capture-pane", "-p", "-J", "-t", "yolop")
}

func (tm *tmuxTerm) waitText(sub string) string {
	tm.t.Helper()
	return tm.waitFor(fmt.Sprintf("%q", sub), func(s string) bool { return strings.Contains(s, sub) })
}

// waitFile polls until path holds want ("" with gone=true: absent).
func waitFile(t *testing.T, path, want string, gone bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var got string
	var err error
	for time.Now().Before(deadline) {
		var b []byte
		b, err = os.ReadFile(path)
		got = string(b)
		if gone && os.IsNotExist(err) || !gone && err == nil && got == want {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	if gone {
		t.Fatalf("%s still exists (content %q), want it removed", path, got)
	}
	t.Fatalf("%s = %q (err %v), want %q", path, got, err, want)
}

// TestTmuxRewindEndToEnd drives the built binary in a real terminal: the
// welcome screen, three sim turns, Esc Esc, the picker, cp2, its preview,
// a file's diff, y with a prompt typed right after it (not merged, not
// sent); the files are restored and turn 2's prompt is in the input
// history; then /redo.
func TestTmuxRewindEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test in tmux; skipped with -short")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	tmp := t.TempDir()
	bin, err := testenv.Yolop(tmp)
	if err != nil {
		t.Fatal(err)
	}
	repo := gittest.NewRepo(t)
	data := filepath.Join(tmp, "data")

	// The script keeps the pane open after yolop exits so the exit code
	// and the resume hint can be read.
	script := filepath.Join(tmp, "run.sh")
	body := "#!/bin/sh\n" +
		"export NO_COLOR=1 YOLOP_WORKTREE_SPARES=0 XDG_CONFIG_HOME='" + filepath.Join(tmp, "config") + "' YOLOP_DATA_DIR='" + data + "'\n" +
		"unset OPENAI_API_KEY ANTHROPIC_API_KEY OPENROUTER_API_KEY\n" +
		"cd '" + repo + "' || exit 1\n" +
		"'" + bin + "' --provider sim --data-dir '" + data + "'\n" +
		"echo \"yolop-exit=$?\"\n" +
		"sleep 120\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	tm := &tmuxTerm{t: t, sock: filepath.Join(tmp, "tmux.sock")}
	tm.tmux("-f", "/dev/null", "new-session", "-d", "-s", "yolop", "-x", "110", "-y", "32", "sh "+script)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", tm.sock, "kill-server").Run() })

	welcome := tm.waitText("Type a prompt")
	for _, want := range []string{"Welcome to yolop", "Session", "Esc Esc", "/help"} {
		if !strings.Contains(welcome, want) {
			t.Errorf("the first screen lacks %q:\n%s", want, welcome)
		}
	}
	turns := []string{"write a.txt\nhello\nEOF", "write b.txt\nsecond\nEOF", "rm a.txt"}
	for i, p := range turns {
		tm.typeLines(p)
		tm.keys("Enter")
		want := regexp.MustCompile(fmt.Sprintf(`│ %d checkpoints?\b`, i+1))
		tm.waitFor(fmt.Sprintf("turn %d to finish", i+1), func(s string) bool {
			return want.MatchString(s) && strings.Contains(s, "Enter send")
		})
	}
	screen := tm.capture()
	id := regexp.MustCompile(`s_[0-9a-z]+`).FindString(screen)
	if id == "" {
		t.Fatalf("no session id in the status bar:\n%s", screen)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--data-dir", data, "sessions", "show", id, "--output-format", "json").Output()
	if err != nil {
		t.Fatalf("yolop sessions show %s: %v", id, err)
	}
	var show struct {
		ActiveRoot string `json:"active_root"`
	}
	if err := json.Unmarshal(out, &show); err != nil || show.ActiveRoot == "" {
		t.Fatalf("sessions show: %v: %s", err, out)
	}
	root := show.ActiveRoot
	waitFile(t, filepath.Join(root, "a.txt"), "", true)
	waitFile(t, filepath.Join(root, "b.txt"), "second\n", false)

	// Esc Esc opens the picker; cp2 is the second row (newest first).
	tm.keys("Escape")
	time.Sleep(150 * time.Millisecond) // two separate presses, well inside the 1 s window
	tm.keys("Escape")
	tm.waitText("Rewind: choose a checkpoint")
	tm.keys("Down")
	tm.waitText("› cp2")
	tm.keys("Enter")
	preview := tm.waitText("y confirm")
	for _, want := range []string{"Rewind to before cp2", "conversation and workspace", "cp3", "rm a.txt", "a.txt", "b.txt"} {
		if !strings.Contains(preview, want) {
			t.Errorf("preview lacks %q:\n%s", want, preview)
		}
	}
	t.Logf("preview:\n%s", preview)

	// Enter opens the diff of the first file (a.txt comes back); it does
	// not confirm. Esc returns to the preview.
	tm.keys("Enter")
	diff := tm.waitFor("the diff of a.txt", func(s string) bool {
		return strings.Contains(s, "Diff of a.txt") && !strings.Contains(s, "loading…")
	})
	if !strings.Contains(diff, "+hello") || !strings.Contains(diff, "new file mode") {
		t.Errorf("the diff of a.txt lacks its content:\n%s", diff)
	}
	tm.keys("Escape")
	tm.waitText("y confirm")
	time.Sleep(700 * time.Millisecond) // y is ignored in the first moment

	// Confirm, and type a prompt and Enter right away, as a fast typist
	// would: what was typed must not merge into turn 2's prompt, and the
	// Enter must send nothing.
	tm.keys("y")
	tm.tmux("send-keys", "-t", "yolop", "-l", "cleanup")
	tm.keys("Enter")
	tm.waitFor("the restore to land", func(s string) bool {
		return strings.Contains(s, "redo available") && strings.Contains(s, "input history")
	})
	time.Sleep(time.Second) // anything the Enter started would show by now
	restored := tm.capture()
	if !regexp.MustCompile(`(?m)^> cleanup\s*$`).MatchString(restored) || strings.Contains(restored, "cleanupwrite") || strings.Contains(restored, "write b.txtcleanup") {
		t.Fatalf("the composer does not hold exactly what was typed:\n%s", restored)
	}
	if strings.Contains(restored, "› cleanup") || !regexp.MustCompile(`│ 1 checkpoint\b`).MatchString(restored) {
		t.Fatalf("the Enter typed during the restore sent something:\n%s", restored)
	}
	waitFile(t, filepath.Join(root, "a.txt"), "hello\n", false)
	waitFile(t, filepath.Join(root, "b.txt"), "", true)

	// Turn 2's prompt is in the input history: Ctrl+C clears the
	// composer (keeping "cleanup" in the history), ↑ ↑ brings it back.
	tm.keys("C-c")
	tm.waitText("Type a prompt")
	tm.keys("Up")
	tm.waitText("> cleanup")
	tm.keys("Up")
	back := tm.waitText("> write b.txt")
	if !regexp.MustCompile(`(?m)^> write b\.txt\s*\n\s+second\s*\n\s+EOF`).MatchString(back) {
		t.Fatalf("the history does not hold turn 2's prompt:\n%s", back)
	}

	// Clear the composer (Ctrl+C once when idle), then /redo.
	tm.keys("C-c")
	tm.waitText("Type a prompt")
	tm.typeLines("/redo")
	tm.keys("Enter")
	tm.waitText("y confirm")
	time.Sleep(700 * time.Millisecond)
	tm.keys("y")
	tm.waitFor("redo to finish", func(s string) bool {
		return regexp.MustCompile(`│ 3 checkpoints`).MatchString(s) && !strings.Contains(s, "y confirm")
	})
	waitFile(t, filepath.Join(root, "a.txt"), "", true)
	waitFile(t, filepath.Join(root, "b.txt"), "second\n", false)

	// /diff shows the session's work. (An Enter right after a restore
	// sends nothing, so wait that out first.)
	time.Sleep(time.Second)
	tm.typeLines("/diff")
	tm.keys("Enter")
	tm.waitText("+++ b/b.txt")
	tm.waitText("/diff: the session's work")
	tm.keys("Escape") // close the pager
	tm.waitFor("the pager to close", func(s string) bool { return !strings.Contains(s, "+++ b/b.txt") })
	// /apply previews the session's work with no token to type and writes
	// nothing; any key but y cancels it.
	tm.typeLines("/apply")
	tm.keys("Enter")
	ap := tm.waitText("y apply · any other key cancels")
	for _, want := range []string{"Dry run: applying session " + id, "clean", "b.txt", "y will apply these changes to " + repo} {
		if !strings.Contains(ap, want) {
			t.Errorf("apply preview lacks %q:\n%s", want, ap)
		}
	}
	for _, bad := range []string{"--confirm", "Confirmation token"} {
		if strings.Contains(ap, bad) {
			t.Errorf("the apply preview asks for a typed token (%q):\n%s", bad, ap)
		}
	}
	tm.keys("x")
	tm.waitText("apply cancelled: nothing was written")
	if _, err := os.Stat(filepath.Join(repo, "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("the /apply preview wrote b.txt into the checkout")
	}
	// Previewed again, y (after the moment it is ignored) applies it, and
	// /apply undo takes it back.
	tm.typeLines("/apply")
	tm.keys("Enter")
	tm.waitText("y apply · any other key cancels")
	time.Sleep(700 * time.Millisecond)
	tm.keys("y")
	tm.waitText("Wrote 1 path as uncommitted changes")
	waitFile(t, filepath.Join(repo, "b.txt"), "second\n", false)
	tm.typeLines("/apply undo")
	tm.keys("Enter")
	tm.waitText("Undid the apply of session " + id)
	waitFile(t, filepath.Join(repo, "b.txt"), "", true)
	// With a b.txt of the user's own, the preview conflicts: its hints are
	// slash commands, and y offers only what /apply markers does.
	if err := os.WriteFile(filepath.Join(repo, "b.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tm.typeLines("/apply")
	tm.keys("Enter")
	ap = tm.waitText("/apply would write nothing")
	for _, want := range []string{"`/apply markers`", "y will write conflict markers into b.txt"} {
		if !strings.Contains(ap, want) {
			t.Errorf("conflicting apply preview lacks %q:\n%s", want, ap)
		}
	}
	for _, bad := range []string{"--on-conflict", "apply --undo", "--confirm"} {
		if strings.Contains(ap, bad) {
			t.Errorf("conflicting apply preview names %q, which the TUI does not take:\n%s", bad, ap)
		}
	}
	tm.keys("Escape")
	tm.waitText("apply cancelled: nothing was written")
	if b, err := os.ReadFile(filepath.Join(repo, "b.txt")); err != nil || string(b) != "mine\n" {
		t.Fatalf("a cancelled apply changed the user's b.txt: %q %v", b, err)
	}

	// Ctrl+C twice quits cleanly; the exit line says where the work is.
	tm.keys("C-c")
	tm.waitText("press Ctrl+C again to quit")
	tm.keys("C-c")
	final := tm.exited()
	if !strings.Contains(final, "yolop-exit=0") {
		t.Fatalf("yolop did not exit cleanly:\n%s", final)
	}
	if !strings.Contains(final, "Bring them home: yolop diff "+id) {
		t.Fatalf("the exit line does not name the ways home:\n%s", final)
	}
}

// TestTmuxResumeAndBranches: `yolop -r` opens the session picker, typing
// searches every session's history, Enter opens the chosen session;
// /branches lists its branches; /resume brings the picker back and Esc
// quits.
func TestTmuxResumeAndBranches(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test in tmux; skipped with -short")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	tmp := t.TempDir()
	bin, err := testenv.Yolop(tmp)
	if err != nil {
		t.Fatal(err)
	}
	repo := gittest.NewRepo(t)
	data := filepath.Join(tmp, "data")
	env := append(os.Environ(), "NO_COLOR=1", "YOLOP_DATA_DIR="+data, "XDG_CONFIG_HOME="+filepath.Join(tmp, "config"))
	yolop := func(args ...string) map[string]any {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--provider", "sim", "--output-format", "json"}, args...)...)
		cmd.Dir, cmd.Env = repo, env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("yolop %v: %v\n%s", args, err, out)
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("yolop %v: %v: %s", args, err, out)
		}
		return v
	}
	a := yolop("-p", "alpha turn")["session_id"].(string)
	yolop("--session", a, "-p", "the quokka plan")
	token := yolop("--session", a, "-p", "/undo")["token"].(string)
	yolop("--session", a, "-p", "/undo --confirm "+token)
	yolop("--session", a, "-p", "alpha again")
	b := yolop("-p", "beta turn")["session_id"].(string)

	script := filepath.Join(tmp, "run.sh")
	body := "#!/bin/sh\n" +
		"export NO_COLOR=1 XDG_CONFIG_HOME='" + filepath.Join(tmp, "config") + "' YOLOP_DATA_DIR='" + data + "'\n" +
		"unset OPENAI_API_KEY ANTHROPIC_API_KEY OPENROUTER_API_KEY\n" +
		"cd '" + repo + "' || exit 1\n" +
		"'" + bin + "' --provider sim -r\n" +
		"echo \"yolop-exit=$?\"\n" +
		"sleep 120\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	tm := &tmuxTerm{t: t, sock: filepath.Join(tmp, "tmux.sock")}
	tm.tmux("-f", "/dev/null", "new-session", "-d", "-s", "yolop", "-x", "140", "-y", "32", "sh "+script)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", tm.sock, "kill-server").Run() })

	// Both sessions, the one used last first.
	tm.waitFor("the picker with both sessions", func(s string) bool {
		return strings.Contains(s, "Resume a session") && strings.Contains(s, a) && strings.Contains(s, b)
	})
	// A word only an abandoned turn of a holds finds a, and only a.
	tm.typeLines("quokka")
	found := tm.waitFor("the search to narrow to a", func(s string) bool {
		return strings.Contains(s, "> quokka") && strings.Contains(s, a) && !strings.Contains(s, b)
	})
	if !strings.Contains(found, "abandoned") {
		t.Errorf("the match does not say it is on an abandoned branch:\n%s", found)
	}
	tm.keys("Enter")
	tm.waitFor("the TUI on session a", func(s string) bool {
		return strings.Contains(s, a) && strings.Contains(s, "Enter send")
	})
	tm.typeLines("/branches")
	tm.keys("Enter")
	list := tm.waitText("Switch with /branch")
	for _, want := range []string{"b1", "abandoned", "b2", "active"} {
		if !strings.Contains(list, want) {
			t.Errorf("/branches lacks %q:\n%s", want, list)
		}
	}
	// /branch b1: a preview titled as the switch, y confirms it, and the
	// abandoned turn is back in the transcript.
	tm.typeLines("/branch b1")
	tm.keys("Enter")
	tm.waitFor("the /branch b1 preview", func(s string) bool {
		return strings.Contains(s, "Enter branch b1 as it was left, leave b2") && strings.Contains(s, "y confirm")
	})
	time.Sleep(700 * time.Millisecond) // y is ignored in the first moment
	tm.keys("y")
	tm.waitFor("the switch to b1", func(s string) bool {
		return strings.Contains(s, "Switched to branch b1") && strings.Contains(s, "the quokka plan")
	})
	time.Sleep(700 * time.Millisecond) // Enter is ignored in the first moment after a restore
	// /resume: the picker again; Esc goes back to the session it was
	// typed in.
	tm.typeLines("/resume")
	tm.keys("Enter")
	tm.waitText("Esc to go back to " + a)
	tm.keys("Escape")
	tm.waitFor("the TUI on session a again", func(s string) bool {
		return strings.Contains(s, a) && strings.Contains(s, "Enter send") && !strings.Contains(s, "Resume a session")
	})
	// /resume inside the running TUI: the picker again; a search and
	// Enter open session b in the same process.
	tm.typeLines("/resume")
	tm.keys("Enter")
	tm.waitText("Resume a session")
	tm.typeLines("beta turn")
	tm.waitFor("the search to narrow to b", func(s string) bool {
		// a is named once: in "Esc to go back to a", not as a row.
		return strings.Contains(s, "> beta turn") && strings.Contains(s, b) && strings.Count(s, a) == 1
	})
	tm.keys("Enter")
	tm.waitFor("the TUI on session b", func(s string) bool {
		return strings.Contains(s, b) && strings.Contains(s, "Enter send")
	})
	// The session left is closed: another process can run a turn in it.
	// The one open now is held.
	yolop("--session", a, "-p", "a turn while b is open")
	second := exec.Command(bin, "--provider", "sim", "--session", b, "-p", "second writer")
	second.Dir, second.Env = repo, env
	if out, err := second.CombinedOutput(); err == nil || !strings.Contains(string(out), "in use") {
		t.Fatalf("a second process in the session the TUI holds: %v\n%s", err, out)
	}
	// A chosen session another process holds does not open: the picker
	// says why and stays; b's TUI was closed before it showed.
	holder := exec.Command(bin, "--provider", "sim", "--session", a, "-p", "sleep 60000")
	holder.Dir, holder.Env = repo, env
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if b, _ := os.ReadFile(filepath.Join(data, "sessions", a, "events.jsonl")); strings.Contains(string(b), "sleep 60000") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the process holding session a did not start its turn")
		}
	}
	tm.typeLines("/resume")
	tm.keys("Enter")
	tm.waitText("Resume a session")
	tm.typeLines(a)
	tm.waitFor("the search to narrow to a", func(s string) bool {
		return strings.Contains(s, "> "+a) && strings.Contains(s, "turns  "+a)
	})
	tm.keys("Enter")
	tm.waitFor("the picker to say a did not open", func(s string) bool {
		return strings.Contains(s, a+" did not open") && strings.Contains(s, "in use") && strings.Contains(s, "Resume a session")
	})
	// Esc goes back to the session /resume was typed in.
	tm.keys("Escape")
	tm.waitFor("the TUI on session b again", func(s string) bool {
		return strings.Contains(s, b) && strings.Contains(s, "Enter send") && !strings.Contains(s, "Resume a session")
	})
	tm.typeLines("/quit")
	tm.keys("Enter")
	final := tm.exited()
	if !strings.Contains(final, "yolop-exit=0") {
		t.Fatalf("yolop did not exit cleanly:\n%s", final)
	}
	if !strings.Contains(final, "Continue this session with: yolop --session "+b) {
		t.Fatalf("the exit does not name the session to continue:\n%s", final)
	}
	// Nothing holds b any more.
	yolop("--session", b, "-p", "b after the TUI")
}
