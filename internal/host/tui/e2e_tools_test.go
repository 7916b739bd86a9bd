package tui

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/git/gittest"
	"github.com/yolop-dev/yolop/internal/spawn"
	"github.com/yolop-dev/yolop/internal/testenv"
)

// TestTmuxRefusedRowAndExpandedOutput drives the built binary in a real
// terminal: a write the sandbox refuses shows as "refused by the sandbox"
// with what was refused (never a green check, though the command's exit
// code is 0); a long tool output is collapsed to its first line, Ctrl+O
// (named in the key hints) shows every line, and Ctrl+O again collapses
// it.
func TestTmuxRefusedRowAndExpandedOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test in tmux; skipped with -short")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	if abi, err := spawn.ABI(); err != nil || abi < 3 {
		t.Skipf("the sandbox needs Landlock ABI 3 (have %d, %v)", abi, err)
	}
	tmp := t.TempDir()
	bin, err := testenv.Yolop(tmp)
	if err != nil {
		t.Fatalf("build yolop: %v", err)
	}
	repo := gittest.NewRepo(t)
	data := filepath.Join(tmp, "data")
	outside := filepath.Join(tmp, "outside.txt")
	script := filepath.Join(tmp, "run.sh")
	body := "#!/bin/sh\n" +
		"export NO_COLOR=1 YOLOP_WORKTREE_SPARES=0 XDG_CONFIG_HOME='" + filepath.Join(tmp, "config") + "' YOLOP_DATA_DIR='" + data + "'\n" +
		"unset OPENAI_API_KEY ANTHROPIC_API_KEY OPENROUTER_API_KEY\n" +
		"cd '" + repo + "' || exit 1\n" +
		"'" + bin + "' --provider sim --sandbox write\n" +
		"echo \"yolop-exit=$?\"\n" +
		"sleep 120\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	tm := &tmuxTerm{t: t, sock: filepath.Join(tmp, "tmux.sock")}
	tm.tmux("-f", "/dev/null", "new-session", "-d", "-s", "yolop", "-x", "120", "-y", "40", "sh "+script)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", tm.sock, "kill-server").Run() })
	tm.waitText("Type a prompt")

	// A refused write whose command exits 0.
	tm.typeLines("$ echo x > " + outside + " || true")
	tm.keys("Enter")
	screen := tm.waitFor("the refused row", func(s string) bool {
		return strings.Contains(s, "refused by the sandbox") && strings.Contains(s, "Enter send")
	})
	// The call's row (not the prompt's echo): a long path shortens its
	// command (and the path in it) with "…".
	row := ""
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, " echo x > ") && !strings.Contains(l, "$ echo x") {
			row = l
			break
		}
	}
	if !strings.Contains(row, "⊘") || !strings.Contains(row, "refused by the sandbox") || strings.Contains(row, "✓") || strings.Contains(row, "completed") {
		t.Fatalf("the refused call's row is %q, want ⊘ … refused by the sandbox:\n%s", row, screen)
	}
	// The path as far as the row shows it.
	_, shown, _ := strings.Cut(lineWith(screen, "the sandbox (level write) refused writing "), "refused writing ")
	shown = strings.TrimSuffix(strings.TrimSpace(shown), "…")
	if len(shown) < len("/tmp/") || !strings.HasPrefix(outside, shown) {
		t.Fatalf("the row does not say what was refused (%s):\n%s", outside, screen)
	}
	if _, err := os.Stat(outside); !os.IsNotExist(err) {
		t.Fatalf("%s was written (err %v)", outside, err)
	}

	// A long output: collapsed to its first line, the hint names Ctrl+O.
	tm.typeLines("$ for i in $(seq 1 12); do echo line-$i; done")
	tm.keys("Enter")
	screen = tm.waitFor("the second turn", func(s string) bool {
		return regexp.MustCompile(`│ 2 checkpoints`).MatchString(s) && strings.Contains(s, "Enter send")
	})
	if !strings.Contains(screen, "Ctrl+O shows them") || !strings.Contains(screen, "Ctrl+O expand tool output") {
		t.Fatalf("the collapsed output or the key hint does not name Ctrl+O:\n%s", screen)
	}
	if strings.Contains(screen, "line-12") {
		t.Fatalf("the output shows before it is expanded:\n%s", screen)
	}
	tm.keys("C-o")
	screen = tm.waitFor("the expanded output", func(s string) bool {
		return strings.Contains(s, "line-12") && strings.Contains(s, "Ctrl+O collapse tool output")
	})
	for _, want := range []string{"line-1\n", "line-7", "stdout"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the expanded output lacks %q:\n%s", want, screen)
		}
	}
	tm.keys("C-o")
	screen = tm.waitFor("the output collapsed again", func(s string) bool {
		return !strings.Contains(s, "line-12") && strings.Contains(s, "Ctrl+O expand tool output")
	})
	if !strings.Contains(screen, "Ctrl+O shows them") {
		t.Fatalf("collapsed again, the row does not count its lines:\n%s", screen)
	}
}

// lineWith is the first screen line containing sub ("" when none).
func lineWith(screen, sub string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}
