package secret

import (
	"slices"
	"strings"
	"testing"
)

func TestLooksSecret(t *testing.T) {
	for name, want := range map[string]bool{
		"OPENAI_API_KEY": true, "GITHUB_TOKEN": true, "AWS_SECRET": true, "DB_PASSWORD": true, "mysql_passwd": true,
		"password": true, "KEY": true, "api_key": true,
		"PATH": false, "KEYBOARD": false, "TOKENIZER_DIR": false, "HOME": false, "SSH_AUTH_SOCK": false,
	} {
		if got := LooksSecret(name); got != want {
			t.Errorf("LooksSecret(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestFilterEnv(t *testing.T) {
	kept, withheld := FilterEnv([]string{"PATH=/bin", "OPENAI_API_KEY=sk-filter-0123456789", "NPM_TOKEN=npm-0123456789", "GH_TOKEN=gh-0123456789"}, []string{"NPM_TOKEN"})
	if !slices.Equal(kept, []string{"PATH=/bin", "NPM_TOKEN=npm-0123456789"}) || !slices.Equal(withheld, []string{"GH_TOKEN", "OPENAI_API_KEY"}) {
		t.Fatalf("kept %v withheld %v", kept, withheld)
	}
	// Passed or not, their values are known and redacted.
	got := Redact("a sk-filter-0123456789 b npm-0123456789 c")
	if strings.Contains(got, "0123456789") || !strings.Contains(got, Marker("OPENAI_API_KEY")) {
		t.Fatalf("Redact: %q", got)
	}
}

func TestShortValuesAreNotRedacted(t *testing.T) {
	Add("X_TOKEN", "true")
	if got := Redact("it is true"); got != "it is true" {
		t.Fatalf("Redact: %q", got)
	}
}

func TestLongestFirst(t *testing.T) {
	Add("A_KEY", "abcdefgh12")
	Add("B_KEY", "abcdefgh12345678")
	if got := Redact("abcdefgh12345678"); got != Marker("B_KEY") {
		t.Fatalf("Redact: %q", got)
	}
}
