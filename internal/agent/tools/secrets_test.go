package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/secret"
	"github.com/yolop-dev/yolop/internal/spawn"
)

// TestCommandsGetNoSecrets: yolop's own keys and secret-looking variables
// never reach a command, pass_env lets named ones through, and the session
// marker is set.
func TestCommandsGetNoSecrets(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-openai-0123456789abcdef")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-0123456789abcdef")
	t.Setenv("GITHUB_TOKEN", "ghp_0123456789abcdefghij")
	t.Setenv("DB_PASSWORD", "hunter2hunter2")
	t.Setenv("aws_secret", "awsSECRETvalue123")
	t.Setenv("NPM_TOKEN", "npm_passed_through_123")
	t.Setenv("KEYBOARD_LAYOUT", "dvorak")
	base := t.TempDir()
	root := filepath.Join(base, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	spill := filepath.Join(base, "spill")
	s, err := New(Env{Root: root, SpillDir: spill, Tasks: NewSessionTasks(spill, TaskOptions{Session: "S1", PassEnv: []string{"NPM_TOKEN"}})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Tasks().StopAll)
	r := mustOK(t, call(t, s, "bash", map[string]any{"command": "env | cut -d= -f1 | sort; test -n \"$NPM_TOKEN\" && echo npm-token-set"}))
	for _, gone := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "aws_secret"} {
		if strings.Contains(r.Content, "\n"+gone+"\n") {
			t.Errorf("%s reached the command:\n%s", gone, r.Content)
		}
	}
	for _, kept := range []string{"NPM_TOKEN", "KEYBOARD_LAYOUT", "PATH", spawn.SessionEnv, "npm-token-set"} {
		if !strings.Contains(r.Content, kept) {
			t.Errorf("%s is missing:\n%s", kept, r.Content)
		}
	}
}

// TestResultsAreRedacted: a known key in a command's output or a file's
// content (a cat of the settings file) never reaches the result.
func TestResultsAreRedacted(t *testing.T) {
	const key = "sk-test-redact-0123456789"
	const pass = "correct horse battery staple"
	secret.Add("OPENAI_API_KEY", key)
	t.Setenv("SOME_PASSWORD", pass)
	s, root := newSet(t)
	putFile(t, root, "settings.toml", "[openai]\napi_key = \""+key+"\"\n")
	for _, r := range []Result{
		mustOK(t, call(t, s, "bash", map[string]any{"command": "cat settings.toml; echo '" + pass + "'"})),
		mustOK(t, call(t, s, "read_file", map[string]any{"path": "settings.toml"})),
		mustOK(t, call(t, s, "grep", map[string]any{"pattern": "api_key"})),
	} {
		if strings.Contains(r.Content, key) || strings.Contains(r.Content, pass) {
			t.Fatalf("a secret reached the result:\n%s", r.Content)
		}
		if !strings.Contains(r.Content, "[redacted") {
			t.Fatalf("no redaction marker:\n%s", r.Content)
		}
	}
	r := mustOK(t, call(t, s, "edit_file", map[string]any{"path": "settings.toml", "old_text": "[openai]", "new_text": "[openai] # edited"}))
	if d := r.Display; d != nil && d.NewText != nil && strings.Contains(*d.NewText, key) {
		t.Fatalf("the display of an edit shows the key")
	}
}
