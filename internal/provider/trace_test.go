package provider

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTraceRedactsKnownKeys: a key from the settings file that a tool
// result (or a pasted file) put into a request body is not in the trace.
func TestTraceRedactsKnownKeys(t *testing.T) {
	dir := t.TempDir()
	settings := filepath.Join(dir, "settings.toml")
	const key = "sk-ant-trace-0123456789abcdef"
	if err := os.WriteFile(settings, []byte("[anthropic]\napi_key = \""+key+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Resolve(Config{}, func(string) string { return "" }, settings)
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTrace(filepath.Join(dir, "trace.jsonl"))
	body := `{"messages":[{"role":"tool","content":"[anthropic]\napi_key = \"` + key + `\"\n"}]}`
	if err := tr.Append(cfg.Provider, "", "https://example.invalid/v1/messages", []byte(body)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(tr.Path())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), key) || !strings.Contains(string(b), "[redacted anthropic.api_key]") {
		t.Fatalf("trace: %s", b)
	}
}
