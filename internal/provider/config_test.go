package provider

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yolop-dev/yolop/internal/secret"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	settings := `provider = "openai"
model = "top-model"
[openai]
api_key = "file-openai-key"
base_url = "http://file-base/v1"
[anthropic]
api_key = "file-anthropic-key"
model = "claude-file"
thinking_budget = 2048
`
	tests := []struct {
		name     string
		flags    Config
		env      map[string]string
		settings string
		want     Config
		errHas   string
	}{
		{name: "nothing configured is sim", want: Config{Provider: "sim", Model: "sim", ContextWindow: 200_000, NoKey: true}},
		{name: "anthropic key in env selects anthropic", env: map[string]string{"ANTHROPIC_API_KEY": "ak"},
			want: Config{Provider: "anthropic", Model: DefaultAnthropicModel, APIKey: "ak", ContextWindow: 200_000}},
		{name: "openai key in env selects openai", env: map[string]string{"OPENAI_API_KEY": "ok", "OPENAI_BASE_URL": "http://env/v1"},
			want: Config{Provider: "openai", Model: DefaultOpenAIModel, APIKey: "ok", BaseURL: "http://env/v1", ContextWindow: 1_047_576}},
		{name: "settings file alone", settings: settings,
			want: Config{Provider: "openai", Model: "top-model", APIKey: "file-openai-key", BaseURL: "http://file-base/v1"}},
		{name: "env beats settings", settings: settings,
			env:  map[string]string{"YOLOP_PROVIDER": "anthropic", "ANTHROPIC_API_KEY": "env-ak", "YOLOP_TRACE_REQUESTS": "/tmp/t.jsonl"},
			want: Config{Provider: "anthropic", Model: "claude-file", APIKey: "env-ak", ThinkingBudget: 2048, TracePath: "/tmp/t.jsonl", ContextWindow: 200_000}},
		{name: "flags beat env", settings: settings,
			flags: Config{Provider: "openai", Model: "flag-model", BaseURL: "http://flag/v1", TracePath: "/tmp/f"},
			env:   map[string]string{"YOLOP_PROVIDER": "anthropic", "YOLOP_MODEL": "env-model", "OPENAI_API_KEY": "env-ok", "OPENAI_BASE_URL": "http://env/v1", "YOLOP_TRACE_REQUESTS": "/tmp/e"},
			want:  Config{Provider: "openai", Model: "flag-model", APIKey: "env-ok", BaseURL: "http://flag/v1", TracePath: "/tmp/f"}},
		{name: "flag sim ignores keys", flags: Config{Provider: "sim"}, env: map[string]string{"OPENAI_API_KEY": "x"},
			want: Config{Provider: "sim", Model: "sim", ContextWindow: 200_000}},
		{name: "openai local server without key", flags: Config{Provider: "openai", BaseURL: "http://localhost:11434/v1"},
			want: Config{Provider: "openai", Model: DefaultOpenAIModel, BaseURL: "http://localhost:11434/v1", ContextWindow: 1_047_576}},
		{name: "a local model's context window from the settings", settings: "[openai]\nbase_url = \"http://localhost:8080/v1\"\nmodel = \"qwen3\"\ncontext_window = 32768\n",
			flags: Config{Provider: "openai"},
			want:  Config{Provider: "openai", Model: "qwen3", BaseURL: "http://localhost:8080/v1", ContextWindow: 32768}},
		{name: "negative context window", settings: "[openai]\nbase_url = \"http://x/v1\"\ncontext_window = -1\n", flags: Config{Provider: "openai"}, errHas: "context_window -1"},
		{name: "unknown provider", flags: Config{Provider: "gemini"}, errHas: `unknown provider "gemini"`},
		{name: "openai without key", flags: Config{Provider: "openai"}, errHas: "set OPENAI_API_KEY or [openai] api_key in"},
		{name: "anthropic without key", env: map[string]string{"YOLOP_PROVIDER": "anthropic"}, errHas: "set ANTHROPIC_API_KEY or [anthropic] api_key in"},
		{name: "malformed settings", settings: "provider = ", errHas: "settings "},
		{name: "unknown settings key", settings: "[openai]\napi_kee = \"x\"\n", errHas: "unknown key(s) openai.api_kee"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "settings.toml")
			if tc.settings != "" {
				if err := os.WriteFile(path, []byte(tc.settings), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := Resolve(tc.flags, func(k string) string { return tc.env[k] }, path)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("want error containing %q, got %v", tc.errHas, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestDefaultSettingsPath(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HOME": "/h"}
	if got := DefaultSettingsPath(func(k string) string { return env[k] }); got != "/h/.config/yolop/settings.toml" {
		t.Fatal(got)
	}
	env["XDG_CONFIG_HOME"] = "/x"
	if got := DefaultSettingsPath(func(k string) string { return env[k] }); got != "/x/yolop/settings.toml" {
		t.Fatal(got)
	}
}

func TestNewUnknown(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{Provider: "gemini"}); err == nil || !strings.Contains(err.Error(), "unknown provider") {
		t.Fatalf("got %v", err)
	}
	// The registry is empty in this package's tests: a known name says how
	// to link it.
	if _, err := New(Config{Provider: "openai"}); err == nil || !strings.Contains(err.Error(), "provider/all") {
		t.Fatalf("got %v", err)
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	if got := redactURL("https://user:pw@host/v1/chat?api-key=secret#f"); got != "https://host/v1/chat" {
		t.Fatal(got)
	}
}

// TestMCPCallTimeout: a server's own timeout wins over [mcp] call_timeout,
// "0" means no limit (negative), nothing set is 0 (the default), and a
// value that is not a positive duration names its key and the file.
func TestMCPCallTimeout(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.toml")
	if err := os.WriteFile(path, []byte("[mcp]\ncall_timeout = \"90s\"\n[mcp.servers.own]\ncommand = \"x\"\ntimeout = \"10m\"\n[mcp.servers.none]\ncommand = \"x\"\ntimeout = \"0\"\n[mcp.servers.plain]\ncommand = \"x\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := LoadSettings(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]time.Duration{"own": 10 * time.Minute, "none": -1, "plain": 90 * time.Second, "": 90 * time.Second} {
		if got, err := st.MCPCallTimeout(name, path); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", name, got, err, want)
		}
	}
	if got, err := (Settings{}).MCPCallTimeout("x", path); err != nil || got != 0 {
		t.Errorf("unset: %v %v, want 0 (the default)", got, err)
	}
	for _, bad := range []string{"soon", "-5s"} {
		st := Settings{MCP: MCPSection{CallTimeout: bad}}
		_, err := st.MCPCallTimeout("", path)
		if err == nil || !strings.Contains(err.Error(), "[mcp] call_timeout in "+path+": \""+bad+"\" is not a duration") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// Every secret the settings hold is redacted once they are read: MCP
// variables by name or by secret_env, credential headers, passwords in
// URLs, arguments and variables; other values are not.
func TestSettingsSecretsAreRedacted(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "settings.toml")
	body := `[openai]
base_url = "https://u:base-pass-0011223344@llm.example/v1"
[mcp.servers.db]
command = "db-mcp"
args = ["postgres://app:arg-pass-5566778899@db/app"]
env = { GH_TOKEN = "gh-tok-0099887766", DSN = "dsn-value-1122334455", PLAIN = "plain-value-kept-123" }
secret_env = ["DSN"]
[mcp.servers.web]
url = "https://x:url-pass-6655443322@mcp.example/mcp"
headers = { Authorization = "Bearer bearer-tok-7788990011", Accept = "text/event-stream-kept" }
`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSettings(path); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"base-pass-0011223344", "arg-pass-5566778899", "gh-tok-0099887766", "dsn-value-1122334455", "url-pass-6655443322", "bearer-tok-7788990011"} {
		if got := secret.Redact("x " + v + " y"); strings.Contains(got, v) {
			t.Errorf("%s is not redacted: %s", v, got)
		}
	}
	for _, v := range []string{"plain-value-kept-123", "text/event-stream-kept"} {
		if got := secret.Redact(v); got != v {
			t.Errorf("%s was redacted: %s", v, got)
		}
	}
}

func TestSettingsErrors(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		"[tools]\nenv = \"zsh\"\n":                                    `[tools] env = "zsh": use "inherit"`,
		"[mcp.servers.a]\ncommand = \"x\"\nsecret_env = [\"NOPE\"]\n": "secret_env names NOPE, which its env does not set",
	} {
		path := filepath.Join(t.TempDir(), "settings.toml")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadSettings(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", body, err, want)
		}
	}
}
