package tui

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/testenv"
)

// TestTmuxFolderFirstCaptureProgress: the first capture of a folder outside
// git that takes over a second says how far it is, in the terminal, while
// the user's first prompt waits for it. A pause point holds the capture
// halfway for longer than that second, so the test does not depend on how
// fast the machine is.
func TestTmuxFolderFirstCaptureProgress(t *testing.T) {
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
	folder := filepath.Join(tmp, "proj")
	if err := os.MkdirAll(filepath.Join(folder, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := os.WriteFile(filepath.Join(folder, "src", fmt.Sprintf("f%03d.txt", i)), []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hooks := filepath.Join(tmp, "hooks")
	if err := os.Mkdir(hooks, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"paused", "resume"} {
		if err := syscall.Mkfifo(filepath.Join(hooks, f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(tmp, "data")
	script := filepath.Join(tmp, "run.sh")
	body := "#!/bin/sh\n" +
		"export NO_COLOR=1 XDG_CONFIG_HOME='" + filepath.Join(tmp, "config") + "' YOLOP_DATA_DIR='" + data + "'\n" +
		"export YOLOP_PAUSEPOINT='folder.import_half:" + hooks + "'\n" +
		"unset OPENAI_API_KEY ANTHROPIC_API_KEY OPENROUTER_API_KEY\n" +
		"cd '" + folder + "' || exit 1\n" +
		"'" + bin + "' --provider sim --data-dir '" + data + "'\n" +
		"echo \"yolop-exit=$?\"\n" +
		"sleep 120\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	tm := &tmuxTerm{t: t, sock: filepath.Join(tmp, "tmux.sock")}
	tm.tmux("-f", "/dev/null", "new-session", "-d", "-s", "yolop", "-x", "150", "-y", "32", "sh "+script)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", tm.sock, "kill-server").Run() })

	tm.waitText("Type a prompt")
	tm.typeLines("write a.txt\nhello\nEOF")
	tm.keys("Enter")

	// The capture reaches the pause point: hold it there past a second.
	paused := make(chan string, 1)
	go func() {
		f, err := os.Open(filepath.Join(hooks, "paused"))
		if err != nil {
			paused <- "open: " + err.Error()
			return
		}
		defer f.Close()
		line, _ := bufio.NewReader(f).ReadString('\n')
		paused <- line
	}()
	select {
	case line := <-paused:
		if !strings.HasPrefix(line, "folder.import_half 100 of 200") {
			t.Fatalf("pause point: %q", line)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the first capture never reached its halfway point; screen:\n%s", tm.capture())
	}
	time.Sleep(1200 * time.Millisecond)
	w, err := os.OpenFile(filepath.Join(hooks, "resume"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	// How far it was, then what it took, then the turn itself.
	s := tm.waitFor("the turn to finish", func(s string) bool {
		return regexp.MustCompile(`│ 1 checkpoint\b`).MatchString(s) && strings.Contains(s, "Enter send")
	})
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`first capture of \S*proj: 101 of 200 files…`),
		regexp.MustCompile(`first capture of \S*proj: 200 files \([^)]*\) in [0-9.]+ s`),
	} {
		if !want.MatchString(s) {
			t.Errorf("the screen lacks %s:\n%s", want, s)
		}
	}
	if got, err := os.ReadFile(filepath.Join(folder, "a.txt")); err != nil || string(got) != "hello\n" {
		t.Errorf("a.txt = %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(folder, ".git")); !os.IsNotExist(err) {
		t.Errorf("the folder got a .git: %v", err)
	}
}
