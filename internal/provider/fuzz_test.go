package provider

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzSettings: settings.toml is written by hand. Reading it must never
// panic; a file it refuses gets an error that names the file, and a file it
// accepts yields a known provider and timeouts that are a default (0),
// disabled (-1) or positive.
func FuzzSettings(f *testing.F) {
	for _, s := range []string{
		"",
		"provider = \"openai\"\nmodel = \"m\"\n[openai]\napi_key = \"k\"\nbase_url = \"http://x/v1\"\n",
		"[anthropic]\napi_key = \"k\"\nthinking_budget = -3\n",
		"[timeouts]\nconnect = \"5s\"\nfirst_byte = \"0\"\nidle = \"1h30m\"\n",
		"[timeouts]\nidle = 5\n",
		"provider = \"gemini\"\n",
		"[openai\n",
		"unknown = 1\n[timeouts]\nfirstbyte = \"1m\"\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, content string) {
		path := filepath.Join(t.TempDir(), "settings.toml")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := Resolve(Config{}, func(string) string { return "" }, path)
		if err != nil {
			if !strings.Contains(err.Error(), path) && !strings.Contains(err.Error(), "thinking budget") {
				t.Fatalf("error %q does not name the settings file", err)
			}
			return
		}
		if !knownName(cfg.Provider) {
			t.Fatalf("accepted unknown provider %q", cfg.Provider)
		}
		for _, d := range []int64{int64(cfg.Timeouts.Connect), int64(cfg.Timeouts.FirstByte), int64(cfg.Timeouts.Idle)} {
			if d < -1 {
				t.Fatalf("timeouts %+v: a negative duration other than -1 (disabled)", cfg.Timeouts)
			}
		}
	})
}
